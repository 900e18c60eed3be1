// Command funclen lists the functions longer than a limit, or declared
// with more parameters than another, in the Go files under the given
// directories (tests and testdata left out), and fails when there is one:
// CI keeps every function short enough to read whole, and its calls short
// enough to read without counting. A function literal's parameters are
// not counted: its type is often another package's (a gRPC interceptor's).
//
// With -fives and -fours-percent it also bounds the project as a whole:
// how many declared functions take 5 parameters or more, and what share of
// them take 4 or more (a variadic parameter counts one, the receiver
// none). The functions that -allow's Markdown file lists under its
// "Signatures another package fixes" section are left out of those
// figures and of -params: their shape is not the project's to choose.
//
//	go run ./.ci/funclen -max 60 -params 5 -fives 10 -fours-percent 5 -allow docs/development.md .
package main

import (
	"bufio"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// allowSection is the heading of the section of -allow's file that lists
// the functions whose parameters another package fixes.
const allowSection = "Signatures another package fixes"

func main() {
	limit := flag.Int("max", 60, "the most lines a function may span, from its signature to its closing brace")
	params := flag.Int("params", 0, "the most parameters a declared function may take, its receiver aside (0: no bound)")
	fives := flag.Int("fives", -1, "the most declared functions that may take 5 parameters or more (-1: no bound)")
	foursPercent := flag.Float64("fours-percent", -1, "the most percent of the declared functions that may take 4 parameters or more (-1: no bound)")
	allowFile := flag.String("allow", "", "a Markdown `FILE` whose section \""+allowSection+"\" lists, in a table, the functions left out of the parameter bounds: each row's first cell the package's directory and the function, as `DIR` `Name` or `DIR` `(*T).Name` (\".\" the root)")
	flag.Parse()
	allowed := map[string]bool{}
	if *allowFile != "" {
		var err error
		if allowed, err = readAllowed(*allowFile); err != nil {
			fmt.Fprintln(os.Stderr, "funclen:", err)
			os.Exit(2)
		}
	}
	c := counts{limit: *limit, params: *params, allowed: allowed, fset: token.NewFileSet()}
	for _, root := range flag.Args() {
		if err := c.walk(root); err != nil {
			fmt.Fprintln(os.Stderr, "funclen:", err)
			os.Exit(2)
		}
	}
	failed := c.failed > 0
	if c.failed > 0 {
		fmt.Fprintf(os.Stderr, "funclen: %d function(s) longer than %d lines or with more than %d parameters\n", c.failed, *limit, *params)
	}
	for key, seen := range allowed {
		if !seen {
			fmt.Fprintf(os.Stderr, "funclen: %s lists %s, which no function is\n", *allowFile, key)
			failed = true
		}
	}
	if *fives >= 0 || *foursPercent >= 0 {
		failed = c.figures(*fives, *foursPercent) || failed
	}
	if failed {
		os.Exit(1)
	}
}

// counts are the limits a walk checks, and what it found.
type counts struct {
	limit, params int
	allowed       map[string]bool // the allow list, each entry true once met
	fset          *token.FileSet

	total  int      // declared functions
	fours  []string // those taking 4 parameters or more, not listed
	fives  []string // those taking 5 or more, not listed
	listed int      // those the allow list leaves out
	failed int      // too long, or past -params
}

// walk counts the functions under root, printing each past the line or
// parameter limit.
func (c *counts) walk(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
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
		f, err := parser.ParseFile(c.fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok {
				c.function(fn, function{dir: filepath.ToSlash(dir), path: path})
			}
		}
		return nil
	})
}

// function is where a declared function is: its package's directory from
// the walk's root, and its file.
type function struct {
	dir, path string
}

// function counts fn, declared in the file at, against the limits.
func (c *counts) function(fn *ast.FuncDecl, at function) {
	from, to := c.fset.Position(fn.Pos()), c.fset.Position(fn.End())
	if n := to.Line - from.Line + 1; n > c.limit {
		fmt.Printf("%d lines: %s %s:%d\n", n, fn.Name.Name, at.path, from.Line)
		c.failed++
	}
	c.total++
	key := "`" + at.dir + "` `" + name(fn) + "`"
	if _, ok := c.allowed[key]; ok {
		c.allowed[key] = true
		c.listed++
		return
	}
	n := fn.Type.Params.NumFields()
	where := fmt.Sprintf("%d parameters: %s %s:%d", n, fn.Name.Name, at.path, from.Line)
	if c.params > 0 && n > c.params {
		fmt.Println(where)
		c.failed++
	}
	if n >= 4 {
		c.fours = append(c.fours, where)
	}
	if n >= 5 {
		c.fives = append(c.fives, where)
	}
}

// figures prints the project's parameter figures and reports whether one
// is past its bound (a negative bound: none), listing the functions that
// make it so.
func (c *counts) figures(fives int, foursPercent float64) (failed bool) {
	share := 0.0
	if c.total > 0 {
		share = 100 * float64(len(c.fours)) / float64(c.total)
	}
	fmt.Printf("funclen: %d functions; %d take 5 parameters or more, %d (%.1f%%) 4 or more; %d listed as fixed by another package left out\n",
		c.total, len(c.fives), len(c.fours), share, c.listed)
	if fives >= 0 && len(c.fives) > fives {
		fmt.Fprintf(os.Stderr, "funclen: %d functions take 5 parameters or more, past %d:\n  %s\n", len(c.fives), fives, strings.Join(c.fives, "\n  "))
		failed = true
	}
	if foursPercent >= 0 && share > foursPercent {
		fmt.Fprintf(os.Stderr, "funclen: %.1f%% of the functions take 4 parameters or more, past %g%%:\n  %s\n", share, foursPercent, strings.Join(c.fours, "\n  "))
		failed = true
	}
	return failed
}

// name is fn's name as Go writes a method expression: Name, or (T).Name
// or (*T).Name for a method, without the receiver's type parameters.
func name(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t, star := fn.Recv.List[0].Type, ""
	if s, ok := t.(*ast.StarExpr); ok {
		t, star = s.X, "*"
	}
	switch g := t.(type) {
	case *ast.IndexExpr:
		t = g.X
	case *ast.IndexListExpr:
		t = g.X
	}
	recv := "?"
	if id, ok := t.(*ast.Ident); ok {
		recv = id.Name
	}
	return "(" + star + recv + ")." + fn.Name.Name
}

// entry is a row of the allow list's table: its first cell opens with the
// package's directory and the function, each in backquotes.
var entry = regexp.MustCompile("^\\|\\s*(`[^`]+`\\s+`[^`]+`)")

// readAllowed reads the functions the file's allowSection lists, each as
// "`DIR` `Name`", mapped to false (not met yet).
func readAllowed(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	allowed := map[string]bool{}
	in, found := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			in = strings.TrimSpace(strings.TrimLeft(line, "#")) == allowSection
			found = found || in
			continue
		}
		if m := entry.FindStringSubmatch(line); in && m != nil {
			allowed[strings.Join(strings.Fields(m[1]), " ")] = false
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("%s has no section %q", path, allowSection)
	}
	return allowed, nil
}
