package readme

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOpensWith: a README whose first Go block is the program passes; one
// whose block differs by a line, or that has none, is an error.
func TestOpensWith(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "main.go")
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("main.go", "package main\n\nfunc main() {}\n")
	if err := OpensWith(write("good.md", "# x\n\n```go\npackage main\n\nfunc main() {}\n```\n\n```go\nother\n```\n"), prog); err != nil {
		t.Errorf("the same program: %v", err)
	}
	if OpensWith(write("stale.md", "# x\n\n```go\npackage main\n\nfunc main() { println() }\n```\n"), prog) == nil {
		t.Error("a changed program passed")
	}
	if OpensWith(write("none.md", "# x\n"), prog) == nil {
		t.Error("a README without code passed")
	}
}

// TestQuotes: a block of whole lines of the program passes; a changed
// line, a part of a line, or no block is an error.
func TestQuotes(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "main.go")
	if err := os.WriteFile(prog, []byte("package main\n\nfunc tick() {\n\tprintln()\n}\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for text, ok := range map[string]bool{
		"# x\n\n```go\n// main.go\nfunc tick() {\n\tprintln()\n}\n```\n": true,
		"# x\n\n```go\n// main.go\nfunc tick() {\n\tprint()\n}\n```\n":   false,
		"# x\n\n```go\n// main.go\nc tick() {\n```\n":                    false,
		"# x\n\n```go\nfunc tick() {\n```\n":                             false,
	} {
		readme := filepath.Join(dir, "README.md")
		if err := os.WriteFile(readme, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := Quotes(readme, prog, "main.go"); (err == nil) != ok {
			t.Errorf("%q: Quotes = %v, want ok %v", text, err, ok)
		}
	}
}
