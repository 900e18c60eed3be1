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
// Subject and Headers, called as a jetstream.Msg's) are not followed, nor
// calls on another package's values (callees).
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

// receiverName is the name fd's receiver goes by, "" for a function.
func receiverName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List[0].Names) == 0 {
		return ""
	}
	return fd.Recv.List[0].Names[0].Name
}

// callees are the package's functions fd calls, by name, each once, in
// order: a bare name that is a function of the package, or x.M where M is
// a method of the package whose receiver is named x (p.deliver, m.workKey),
// so that a call on another package's value (p.kv.Purge, h.Get) is not
// taken for a method of the package's of the same name.
func callees(fd *ast.FuncDecl, funcs map[string]*ast.FuncDecl) []string {
	var out []string
	ast.Inspect(fd, func(n ast.Node) bool {
		c, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		var name string
		switch f := c.Fun.(type) {
		case *ast.Ident: // a function of the package
			if g := funcs[f.Name]; g != nil && g.Recv == nil {
				name = f.Name
			}
		case *ast.SelectorExpr: // a method, called on a variable named as its receivers are
			if x, ok := f.X.(*ast.Ident); ok && funcs[f.Sel.Name] != nil && receiverName(funcs[f.Sel.Name]) == x.Name {
				name = f.Sel.Name
			}
		}
		if name != "" && name != fd.Name.Name && !slices.Contains(out, name) {
			out = append(out, name)
		}
		return true
	})
	return out
}
