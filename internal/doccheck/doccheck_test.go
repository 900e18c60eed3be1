package doccheck

import (
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the import path of the repository's root directory: every
// module's path is root followed by its directory.
const root = "github.com/retrypolicy/retrypolicy"

// pkg is a package of the repository as go doc reads it.
type pkg struct {
	dir  string
	docs *doc.Package
	syms map[string]bool // exported names: Name, Type.Method, Type.Field
}

// readPackages reads every package of the repository below ../.., test
// files and testdata left out, as go doc does.
func readPackages(t *testing.T) map[string]*pkg {
	t.Helper()
	top, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*pkg{}
	err = filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if path != top && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
			return filepath.SkipDir
		}
		p, err := readPackage(top, path)
		if err != nil {
			return err
		}
		if p != nil {
			out[p.docs.ImportPath] = p
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readPackage(top, dir string) (*pkg, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ParseComments)
			if err != nil {
				return nil, err
			}
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return nil, nil
	}
	rel, _ := filepath.Rel(top, dir)
	importPath := root
	if rel != "." {
		importPath += "/" + filepath.ToSlash(rel)
	}
	d, err := doc.NewFromFiles(fset, files, importPath)
	if err != nil {
		return nil, err
	}
	return &pkg{dir: rel, docs: d, syms: symbols(d)}, nil
}

// symbols are a package's exported names as doc links name them.
func symbols(d *doc.Package) map[string]bool {
	s := map[string]bool{}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			for _, n := range v.Names {
				s[n] = true
			}
		}
	}
	values(d.Consts)
	values(d.Vars)
	for _, f := range d.Funcs {
		s[f.Name] = true
	}
	for _, ty := range d.Types {
		s[ty.Name] = true
		values(ty.Consts)
		values(ty.Vars)
		for _, f := range ty.Funcs {
			s[f.Name] = true
		}
		for _, m := range ty.Methods {
			s[ty.Name+"."+m.Name] = true
		}
		for _, spec := range ty.Decl.Specs {
			if st, ok := spec.(*ast.TypeSpec).Type.(*ast.StructType); ok {
				for _, f := range st.Fields.List {
					for _, n := range f.Names {
						s[ty.Name+"."+n.Name] = true
					}
				}
			}
		}
	}
	return s
}

// comments are every doc comment of a package, by what it documents.
func comments(d *doc.Package) map[string]string {
	c := map[string]string{"package " + d.Name: d.Doc}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			c[strings.Join(v.Names, ", ")] = v.Doc
		}
	}
	values(d.Consts)
	values(d.Vars)
	for _, f := range d.Funcs {
		c[f.Name] = f.Doc
	}
	for _, ty := range d.Types {
		c[ty.Name] = ty.Doc
		values(ty.Consts)
		values(ty.Vars)
		for _, f := range ty.Funcs {
			c[f.Name] = f.Doc
		}
		for _, m := range ty.Methods {
			c[ty.Name+"."+m.Name] = m.Doc
		}
	}
	return c
}

// unresolved matches what a doc link looks like, in text the parser left
// as text: [Name], [*Name], [Name.Method], [pkg.Name], outside a word.
var unresolved = regexp.MustCompile(`(^|[\s(,;:"'])\[\*?[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\]($|[\s).,;:"'])`)

// TestDocLinksResolve: every doc link in every package's comments names a
// package or a symbol that exists, as pkg.go.dev renders it; text that
// looks like one but does not resolve ([Retry] in a package that has no
// Retry) is an error.
func TestDocLinksResolve(t *testing.T) {
	pkgs := readPackages(t)
	checked := 0
	for path, p := range pkgs {
		parser := p.docs.Parser()
		for what, text := range comments(p.docs) {
			for _, problem := range linkProblems(parser.Parse(text), path, pkgs) {
				t.Errorf("%s: %s: %s", p.dir, what, problem)
			}
			checked++
		}
	}
	if checked < 300 {
		t.Errorf("only %d comments read: the walk missed packages", checked)
	}
}

// linkProblems lists the links of d that do not resolve.
func linkProblems(d *comment.Doc, self string, pkgs map[string]*pkg) []string {
	var out []string
	var walk func(text []comment.Text)
	walk = func(text []comment.Text) {
		for _, x := range text {
			switch x := x.(type) {
			case comment.Plain:
				for _, m := range unresolved.FindAllString(string(x), -1) {
					out = append(out, "does not resolve: "+strings.TrimSpace(m))
				}
			case *comment.DocLink:
				target := x.ImportPath
				if target == "" {
					target = self
				}
				name := x.Name
				if x.Recv != "" {
					name = x.Recv + "." + x.Name
				}
				if p, ours := pkgs[target]; ours && name != "" && !p.syms[name] {
					out = append(out, "no "+name+" in "+target)
				}
			case *comment.Link:
				walk(x.Text)
			case comment.Italic:
			}
		}
	}
	for _, b := range d.Content {
		switch b := b.(type) {
		case *comment.Paragraph:
			walk(b.Text)
		case *comment.Heading:
			walk(b.Text)
		case *comment.List:
			for _, item := range b.Items {
				for _, c := range item.Content {
					if para, ok := c.(*comment.Paragraph); ok {
						walk(para.Text)
					}
				}
			}
		}
	}
	return out
}

// TestPackageDocsOpenShort: every package's doc opens with a sentence of
// at most 20 words, as go doc's package lists show it.
func TestPackageDocsOpenShort(t *testing.T) {
	for _, p := range readPackages(t) {
		first := p.docs.Synopsis(p.docs.Doc)
		switch n := len(strings.Fields(first)); {
		case n == 0:
			t.Errorf("%s: no package doc", p.dir)
		case n > 20:
			t.Errorf("%s: the package doc opens with %d words: %q", p.dir, n, first)
		}
	}
}

// TestTheChecksCanFail: a link to nothing, a link to a symbol another
// package lacks, and a long first sentence are each found.
func TestTheChecksCanFail(t *testing.T) {
	pkgs := map[string]*pkg{root + "/retry": {syms: map[string]bool{"Do": true}}}
	var p comment.Parser
	p.LookupPackage = func(name string) (string, bool) { return root + "/" + name, name == "retry" }
	p.LookupSym = func(recv, name string) bool { return false }
	got := linkProblems(p.Parse("See [Retry], [retry.Do] and [retry.Gone], not [0, 1) or a[i]."), root, pkgs)
	if strings.Join(got, "|") != "does not resolve: [Retry],|no Gone in "+root+"/retry" {
		t.Errorf("found %q", got)
	}
}
