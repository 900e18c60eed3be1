// Command funclen lists the functions longer than a limit, or declared
// with more parameters than another, in the Go files under the given
// directories (tests and testdata left out), and fails when there is one:
// CI keeps every function short enough to read whole, and its calls short
// enough to read without counting. A function literal's parameters are
// not counted: its type is often another package's (a gRPC interceptor's).
//
//	go run ./.ci/funclen -max 60 -params 5 .
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	limit := flag.Int("max", 60, "the most lines a function may span, from its signature to its closing brace")
	params := flag.Int("params", 0, "the most parameters a declared function may take, its receiver aside (0: no bound)")
	flag.Parse()
	fset := token.NewFileSet()
	long := 0
	for _, root := range flag.Args() {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok {
					continue
				}
				from, to := fset.Position(fn.Pos()), fset.Position(fn.End())
				if n := to.Line - from.Line + 1; n > *limit {
					fmt.Printf("%d lines: %s %s:%d\n", n, fn.Name.Name, path, from.Line)
					long++
				}
				if n := fn.Type.Params.NumFields(); *params > 0 && n > *params {
					fmt.Printf("%d parameters: %s %s:%d\n", n, fn.Name.Name, path, from.Line)
					long++
				}
			}
			return nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "funclen:", err)
			os.Exit(2)
		}
	}
	if long > 0 {
		fmt.Fprintf(os.Stderr, "funclen: %d function(s) longer than %d lines or with more than %d parameters\n", long, *limit, *params)
		os.Exit(1)
	}
}
