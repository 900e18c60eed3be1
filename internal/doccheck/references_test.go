package doccheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lacked are ways of citing documents that a user of the modules does not
// have: the project's own notes and their sources. Written in parts, so
// that this file does not cite them itself.
// The project's own notes are named in capitals (the public
// docs/semantics.md is not); the sources in any case.
var lacked = []struct {
	phrase    string
	anyLetter bool
}{
	{"SEMANTICS" + ".md", false}, {"SEMANTICS" + " section", false}, {"SEMANTICS" + " 2.", false},
	{"retries" + " document", true}, {"retry-rules" + ".md", true}, {"job-lifecycle" + ".md", true},
	{"shared" + "/seeds", true}, {"the seed" + "'s", true},
}

// TestNoReferenceToDocumentsUsersLack: no page, comment, help text,
// message or golden file of the repository cites a document its users do
// not have; the rules are stated in docs/semantics.md.
func TestNoReferenceToDocumentsUsersLack(t *testing.T) {
	top, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	err = filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != top && (n == ".git" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".html", ".js", ".css", ".golden", ".txt", ".json":
		default:
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		read++
		lower := strings.ToLower(string(text))
		for _, l := range lacked {
			if strings.Contains(string(text), l.phrase) || l.anyLetter && strings.Contains(lower, strings.ToLower(l.phrase)) {
				rel, _ := filepath.Rel(top, path)
				t.Errorf("%s: cites %q", rel, l.phrase)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if read < 200 {
		t.Errorf("only %d files read", read)
	}
}
