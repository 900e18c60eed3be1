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

// TestADeliveryNeverCallsBackIntoAFileThatCalledIt pins the package's
// layout: from a work message's handler (handle) and a parked copy's
// (handleParked), following every call to a function of the package on
// every branch, no function calls into a file that is on its call stack
// below its own (a call within one file is not a call back). A delivery
// then reads top to bottom: each file does its one job and returns.
// Methods that implement an interface of another package (parkedMsg's
// Subject and Headers, called as a jetstream.Msg's) are not followed.
func TestADeliveryNeverCallsBackIntoAFileThatCalledIt(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	funcs := map[string]*ast.FuncDecl{}
	file := map[string]string{}
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
			if !ok || receiver(fd) == "parkedMsg" {
				continue
			}
			funcs[fd.Name.Name], file[fd.Name.Name] = fd, name
		}
	}
	for _, root := range []string{"handle", "handleParked"} {
		if funcs[root] == nil {
			t.Fatalf("no function %s", root)
		}
		var walk func(stack []string)
		walk = func(stack []string) {
			caller := stack[len(stack)-1]
			below := make([]string, 0, len(stack))
			for _, f := range stack[:len(stack)-1] {
				if file[f] != file[caller] {
					below = append(below, file[f])
				}
			}
			for _, callee := range callees(funcs[caller], funcs) {
				if slices.Contains(stack, callee) {
					continue
				}
				if file[callee] != file[caller] && slices.Contains(below, file[callee]) {
					t.Errorf("%s (%s) calls back into %s (%s), which called it: %s", caller, file[caller], callee, file[callee], strings.Join(stack, " > "))
				}
				walk(append(stack[:len(stack):len(stack)], callee))
			}
		}
		walk([]string{root})
	}
}

// receiver is fd's receiver type's name, "" for a function.
func receiver(fd *ast.FuncDecl) string {
	if fd.Recv == nil {
		return ""
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// callees are the package's functions fd calls, by name, each once, in
// order.
func callees(fd *ast.FuncDecl, funcs map[string]*ast.FuncDecl) []string {
	var out []string
	ast.Inspect(fd, func(n ast.Node) bool {
		c, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		var name string
		switch f := c.Fun.(type) {
		case *ast.Ident:
			name = f.Name
		case *ast.SelectorExpr:
			name = f.Sel.Name
		}
		if funcs[name] != nil && name != fd.Name.Name && !slices.Contains(out, name) {
			out = append(out, name)
		}
		return true
	})
	return out
}
