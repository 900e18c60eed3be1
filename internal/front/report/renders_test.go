package report

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestItRendersWhatItIsGiven: the package renders; it neither defines
// options (no flag package, no Define or Check methods) nor runs a plan,
// a lint, a simulation or a replay (no Run call, no plan.Timeline or
// plan.LintGo): package whatif does, and its callers run it. Until the
// split, it did all three.
func TestItRendersWhatItIsGiven(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); path == "flag" {
				t.Errorf("%s imports flag: options are package whatif's", name)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Recv != nil && (n.Name.Name == "Define" || n.Name.Name == "Check" || n.Name.Name == "Run") {
					t.Errorf("%s: method %s: options and runs are package whatif's", fset.Position(n.Pos()), n.Name.Name)
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); n.Sel.Name == "Run" || ok && x.Name == "plan" && (n.Sel.Name == "Timeline" || n.Sel.Name == "LintGo") {
					t.Errorf("%s: %s: a run, which the callers make", fset.Position(n.Pos()), n.Sel.Name)
				}
			}
			return true
		})
	}
}
