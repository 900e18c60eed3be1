package natsretry

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestADeliveryCarriesItsHistory pins that a delivery and its history
// travel as one value: no function of the package takes a delivery (or a
// pointer to one) and a history as two parameters, the delivery included
// as a receiver; the functions that act on a delivery are its methods and
// read its history from it.
func TestADeliveryCarriesItsHistory(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			var types []string
			for _, list := range []*ast.FieldList{fd.Recv, fd.Type.Params} {
				if list == nil {
					continue
				}
				for _, field := range list.List {
					types = append(types, strings.TrimPrefix(typeName(field.Type), "*"))
				}
			}
			if slices.Contains(types, "delivery") && slices.Contains(types, "history") {
				t.Errorf("%s: %s takes a delivery and a history apart", fset.Position(fd.Pos()), fd.Name.Name)
			}
		}
	}
}

// typeName is a parameter's type as written, for a named type or a
// pointer to one; "" for any other.
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return "*" + typeName(e.X)
	}
	return ""
}
