package retry

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// optionName is the text of an option's name, or its start: a package of
// the library and a dot, "retry.WithStart", "retryhttp.".
var optionName = regexp.MustCompile(`^[a-z]*retry[a-z]*\.`)

// namesCompared returns the places in f that recognise an option by its
// name: a comparison or a switch case with an option's name as a literal,
// or a strings function given one beside the result of a Name method.
func namesCompared(fset *token.FileSet, f *ast.File) []string {
	var found []string
	named := func(e ast.Expr) bool {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return false
		}
		s, err := strconv.Unquote(lit.Value)
		return err == nil && optionName.MatchString(s)
	}
	nameCall := func(e ast.Expr) bool {
		call, ok := e.(*ast.CallExpr)
		if !ok || len(call.Args) != 0 {
			return false
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		return ok && sel.Sel.Name == "Name"
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if (n.Op == token.EQL || n.Op == token.NEQ) && (named(n.X) || named(n.Y)) {
				found = append(found, fset.Position(n.Pos()).String())
			}
		case *ast.CaseClause:
			for _, e := range n.List {
				if named(e) {
					found = append(found, fset.Position(e.Pos()).String())
				}
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
				if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "strings" && slices.ContainsFunc(n.Args, named) && slices.ContainsFunc(n.Args, nameCall) {
					found = append(found, fset.Position(n.Pos()).String())
				}
			}
		}
		return true
	})
	return found
}

// TestNoOptionIsRecognisedByItsName: an option is known by the setting it
// is, not by its name string: no file of the library compares an option's
// name (the Name method's result, or a literal such as "retry.WithStart")
// to recognise it. The check finds such a comparison in a file made to
// hold one.
func TestNoOptionIsRecognisedByItsName(t *testing.T) {
	fset := token.NewFileSet()
	bad, err := parser.ParseFile(fset, "bad.go", `package p
func f(o interface{ Name() string }) bool {
	switch o.Name() {
	case "retry.WithBudget":
	}
	return o.Name() == "retry.WithStart" || strings.HasPrefix(o.Name(), "retryhttp.")
}`, 0)
	require.NoError(t, err)
	assert.Len(t, namesCompared(fset, bad), 3, "the check finds each comparison")

	root, err := filepath.Abs("..")
	require.NoError(t, err)
	var found []string
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		found = append(found, namesCompared(fset, f)...)
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, files, 100, "the library's sources were walked")
	assert.Empty(t, found, "options recognised by their names")
}
