package vet

import (
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
	"golang.org/x/tools/go/types/typeutil"

	"github.com/retrypolicy/retrypolicy/plan"
)

// The import paths of the packages whose names the checks know.
const (
	corePath  = "github.com/retrypolicy/retrypolicy"
	retryPath = corePath + "/retry"
	httpPath  = corePath + "/retryhttp"
)

// Analyzer reports invalid strategies, lint's warnings on constant ones,
// nested retry loops that multiply, operations that ignore their context,
// adapters' options given where they are refused, and hedging given to a
// loop's Do (the package documentation lists each).
var Analyzer = &analysis.Analyzer{
	Name:      "retrypolicy",
	Doc:       "report retry strategies the library refuses or lint warns of, nested retry loops that multiply, retry operations that ignore their context, adapters' options given where they are refused, and hedging given to a loop's Do, which refuses it",
	URL:       "https://pkg.go.dev/github.com/retrypolicy/retrypolicy/vet",
	Requires:  []*analysis.Analyzer{inspect.Analyzer},
	FactTypes: []analysis.Fact{new(runsRetries), new(makesAdapterOption)},
	Run:       run,
}

// checker is one package's run of the analyzer.
type checker struct {
	pass    *analysis.Pass
	ignores map[ignoreKey][]string
	// decls are the package's functions with a body.
	decls map[*types.Func]*ast.FuncDecl
	// loops are the package's functions that run a retry loop; walked
	// those whose body has been walked for it.
	loops  map[*types.Func]*runsRetries
	walked map[*types.Func]bool
	// linted are the warnings of each strategy linted, by its value and
	// use.
	linted map[lintKey][]plan.Finding
	// clients are the package's http.Clients over a retryhttp transport,
	// with the attempts of its strategy.
	clients map[types.Object]int
	// inProcess are the strategy literals and variables given to retry.Do
	// or retryhttp.NewTransport.
	inProcess map[any]bool
	// inside are the Backoff literals checked with their Strategy.
	inside map[*ast.CompositeLit]bool
	// mutated are the variables whose fields are set, or whose address is
	// taken: a strategy built at run time.
	mutated map[types.Object]bool
	// literals are the composite literals variables are declared with.
	literals map[types.Object]*ast.CompositeLit
	// queued are the variables given to a queue adapter's Config.
	queued map[types.Object]bool
	// visiting are the operation bodies being walked for the loops they
	// run, so that an operation that runs its own loop ends the walk.
	visiting map[ast.Node]bool
	// adapters are the import paths of the packages whose functions make
	// adapters' options, this one's and its dependencies'.
	adapters map[string]bool
	// hedgingLoops are the Loop variables made with retry.WithHedging.
	hedgingLoops map[types.Object]*hedgingLoop
	// refusals are the library's words for retry.WithHedging given to a
	// Do, asked when first needed.
	refusals *refusals
}

func run(pass *analysis.Pass) (any, error) {
	ins := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	c := &checker{pass: pass, ignores: ignoresOf(pass), decls: map[*types.Func]*ast.FuncDecl{},
		loops: map[*types.Func]*runsRetries{}, walked: map[*types.Func]bool{}, linted: map[lintKey][]plan.Finding{}, clients: map[types.Object]int{}, inProcess: map[any]bool{},
		inside: map[*ast.CompositeLit]bool{}, mutated: map[types.Object]bool{},
		literals: map[types.Object]*ast.CompositeLit{}, queued: map[types.Object]bool{},
		visiting: map[ast.Node]bool{}, hedgingLoops: map[types.Object]*hedgingLoop{}}
	c.collect(ins)
	c.summarize()
	c.markOptionMakers()
	ins.WithStack([]ast.Node{(*ast.CompositeLit)(nil), (*ast.CallExpr)(nil)}, func(n ast.Node, push bool, stack []ast.Node) bool {
		if !push {
			return true
		}
		switch n := n.(type) {
		case *ast.CompositeLit:
			c.literal(n, stack)
		case *ast.CallExpr:
			c.call(n)
		}
		return true
	})
	return nil, nil
}

// collect finds the package's functions, its clients over a retryhttp
// transport, and the strategies given to an in-process loop or a queue.
func (c *checker) collect(ins *inspector.Inspector) {
	ins.Preorder([]ast.Node{(*ast.FuncDecl)(nil), (*ast.CallExpr)(nil), (*ast.AssignStmt)(nil), (*ast.ValueSpec)(nil),
		(*ast.UnaryExpr)(nil), (*ast.CompositeLit)(nil)}, c.collectNode)
}

// collectNode is collect for one node.
func (c *checker) collectNode(n ast.Node) {
	info := c.pass.TypesInfo
	switch n := n.(type) {
	case *ast.CompositeLit:
		if c.isQueueConfig(n) {
			c.markQueued(n)
		}
	case *ast.FuncDecl:
		if fn, ok := info.Defs[n.Name].(*types.Func); ok && n.Body != nil {
			c.decls[fn] = n
		}
	case *ast.CallExpr:
		fn := c.callee(n)
		if (isFunc(fn, retryPath, "Do") || isFunc(fn, httpPath, "NewTransport")) && len(n.Args) > 1 {
			c.markInProcess(n.Args[1])
		}
	case *ast.AssignStmt:
		c.assign(n)
	case *ast.UnaryExpr:
		if n.Op == token.AND {
			c.markMutated(n.X)
		}
	case *ast.ValueSpec:
		c.declare(n)
	}
}

// declare records what a declaration makes: a client over a retryhttp
// transport, a variable declared with a literal.
func (c *checker) declare(n *ast.ValueSpec) {
	for i, v := range n.Values {
		if i < len(n.Names) {
			c.client(n.Names[i], v)
			c.madeLoop(n.Names[i], v)
			if lit, ok := ast.Unparen(v).(*ast.CompositeLit); ok {
				c.literals[c.pass.TypesInfo.Defs[n.Names[i]]] = lit
			}
		}
	}
}

// assign records what an assignment makes: a client over a retryhttp
// transport, a variable changed.
func (c *checker) assign(n *ast.AssignStmt) {
	for i, rhs := range n.Rhs {
		if i < len(n.Lhs) {
			c.client(n.Lhs[i], rhs)
			c.madeLoop(n.Lhs[i], rhs)
		}
	}
	for _, lhs := range n.Lhs {
		c.markMutated(lhs)
	}
}

// markQueued marks the variables a queue adapter's Config names.
func (c *checker) markQueued(config *ast.CompositeLit) {
	ast.Inspect(config, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			if v, ok := c.pass.TypesInfo.Uses[id].(*types.Var); ok {
				c.queued[v] = true
			}
		}
		return true
	})
}

// markMutated marks the variable whose field e sets, or whose address e
// takes.
func (c *checker) markMutated(e ast.Expr) {
	for {
		switch x := ast.Unparen(e).(type) {
		case *ast.SelectorExpr:
			e = x.X
			continue
		case *ast.Ident:
			if obj := c.pass.TypesInfo.Uses[x]; obj != nil {
				c.mutated[obj] = true
			}
		}
		return
	}
}

// markInProcess marks a strategy given to an in-process loop: a literal,
// or the variable holding one.
func (c *checker) markInProcess(e ast.Expr) {
	switch e := ast.Unparen(e).(type) {
	case *ast.CompositeLit:
		c.inProcess[e] = true
	case *ast.Ident:
		if obj := c.pass.TypesInfo.Uses[e]; obj != nil {
			c.inProcess[obj] = true
		}
	}
}

// callee is the function or method a call calls, or nil.
func (c *checker) callee(call *ast.CallExpr) *types.Func {
	fn, _ := typeutil.Callee(c.pass.TypesInfo, call).(*types.Func)
	return fn
}

// isFunc reports whether fn is the function or method path.name.
func isFunc(fn *types.Func, path, name string) bool {
	return fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == path && fn.Name() == name
}

// isNamed reports whether t, or what it points to, is the named type
// path.name.
func isNamed(t types.Type, path, name string) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == path && n.Obj().Name() == name
}

// report reports a finding of code at n, unless a comment silences it.
func (c *checker) report(n ast.Node, code, message string, fixes ...analysis.SuggestedFix) {
	if c.ignored(n.Pos(), code) {
		return
	}
	c.pass.Report(analysis.Diagnostic{Pos: n.Pos(), End: n.End(), Category: code,
		Message: code + ": " + strings.ReplaceAll(message, "\n", "; "), SuggestedFixes: fixes})
}

// ignoreKey is a line of a file.
type ignoreKey struct {
	file string
	line int
}

// ignoreDirective opens a comment that silences findings.
const ignoreDirective = "//retrypolicy-vet:ignore"

// ignoresOf reads the package's //retrypolicy-vet:ignore comments: the
// names each lists, none for all.
func ignoresOf(pass *analysis.Pass) map[ignoreKey][]string {
	out := map[ignoreKey][]string{}
	for _, f := range pass.Files {
		for _, group := range f.Comments {
			for _, cm := range group.List {
				rest, ok := strings.CutPrefix(cm.Text, ignoreDirective)
				if !ok || rest != "" && rest[0] != ' ' {
					continue
				}
				pos := pass.Fset.Position(cm.Slash)
				names := strings.FieldsFunc(rest, func(r rune) bool { return r == ',' || r == ' ' })
				if names == nil {
					names = []string{}
				}
				out[ignoreKey{pos.Filename, pos.Line}] = names
			}
		}
	}
	return out
}

// ignored reports whether a comment on pos's line, or the line above,
// silences code.
func (c *checker) ignored(pos token.Pos, code string) bool {
	p := c.pass.Fset.Position(pos)
	for _, line := range []int{p.Line, p.Line - 1} {
		names, ok := c.ignores[ignoreKey{p.Filename, line}]
		if ok && (len(names) == 0 || slices.Contains(names, code)) {
			return true
		}
	}
	return false
}
