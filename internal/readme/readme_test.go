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
