package vet

import (
	"fmt"
	"go/ast"
	"go/types"
	"strconv"
	"strings"

	"github.com/retrypolicy/retrypolicy"
)

// Attempts of a loop: a count, or one of these.
const (
	unbounded = 0  // its strategy never gives up
	unknown   = -1 // its strategy is not a constant
)

// runsRetries is the fact of a function that runs a retry loop of the
// library when called: the loop, as a path of calls, and the most
// attempts it makes. A path of any length is kept in a few hops: the
// first near calls, the innermost one and the loop; the rest are counted.
type runsRetries struct {
	Hops     []string // the first calls of the path, then its innermost one
	Skipped  int      // the calls between them, not kept
	Loop     string   // what runs the loop: retry.Do, a transport, a client
	Attempts int
}

// AFact marks runsRetries as a fact.
func (*runsRetries) AFact() {}

func (f *runsRetries) String() string {
	return "runs " + f.Via() + " (" + attemptsText(f.Attempts) + ")"
}

// near is how many of a path's first calls a fact keeps, besides its
// innermost one.
const near = 3

// through returns the loop of f as a call of name runs it: name first on
// its path, a path cut to near calls and the innermost one.
func (f *runsRetries) through(name string) *runsRetries {
	hops := make([]string, 0, near+1)
	hops = append(append(hops, name), f.Hops...)
	skipped := f.Skipped
	if len(hops) > near+1 {
		hops = append(hops[:near], hops[len(hops)-1])
		skipped++
	}
	return &runsRetries{Hops: hops, Skipped: skipped, Loop: f.Loop, Attempts: f.Attempts}
}

// Via says the path: "f0 → f1 → f2 → … 9,996 more … → f9999 → retry.Do".
func (f *runsRetries) Via() string {
	var b strings.Builder
	for i, h := range f.Hops {
		if i == near && f.Skipped > 0 {
			b.WriteString("… " + thousands(f.Skipped) + " more … → ")
		}
		b.WriteString(h + " → ")
	}
	return b.String() + f.Loop
}

// thousands writes n with commas between its thousands.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// mostAttempts is the most attempts a count says: past it, loops nested
// in one another say "more than 1,000,000,000", rather than overflow.
const mostAttempts = 1_000_000_000

// attemptsText says a loop's attempts.
func attemptsText(n int) string {
	switch {
	case n == unbounded:
		return "unbounded attempts"
	case n == unknown:
		return "an unknown number of attempts (a strategy known only at run time)"
	case n == 1:
		return "1 attempt"
	case n > mostAttempts:
		return "more than 1,000,000,000 attempts"
	}
	return strconv.Itoa(n) + " attempts"
}

// times is a×b attempts, saturating past mostAttempts.
func times(a, b int) int {
	switch {
	case a == unknown || b == unknown:
		return unknown
	case a == unbounded || b == unbounded:
		return unbounded
	case a > mostAttempts/b:
		return mostAttempts + 1
	}
	return a * b
}

// summarize finds the package's functions that run a retry loop, through
// one another as far as it takes, and exports a fact for each. Each
// function is walked once, a callee before its caller (loopOf asks for
// it), so a chain of calls costs its length; calls in a cycle may find
// their loop only on a second walk, which the passes after the first
// give them, until nothing changes.
func (c *checker) summarize() {
	for fn := range c.decls {
		c.loopOfFunc(fn)
	}
	for changed := true; changed; {
		changed = false
		for fn, decl := range c.decls {
			if c.loops[fn] != nil {
				continue
			}
			if l, _ := c.firstLoop(decl.Body); l != nil {
				c.loops[fn] = l
				changed = true
			}
		}
	}
	for fn, l := range c.loops {
		c.pass.ExportObjectFact(fn, l)
	}
}

// loopOfFunc returns the loop that the package's function fn runs, walking
// its body the first time it is asked; nil while the walk is under way
// (a call in a cycle), or when it runs none.
func (c *checker) loopOfFunc(fn *types.Func) *runsRetries {
	if c.walked[fn] {
		return c.loops[fn]
	}
	c.walked[fn] = true
	if l, _ := c.firstLoop(c.decls[fn].Body); l != nil {
		c.loops[fn] = l
	}
	return c.loops[fn]
}

// firstLoop returns the first retry loop that running n runs, and the call
// that runs it; nil when none.
func (c *checker) firstLoop(n ast.Node) (*runsRetries, *ast.CallExpr) {
	var found *runsRetries
	var at *ast.CallExpr
	ast.Inspect(n, func(n ast.Node) bool {
		if found != nil {
			return false
		}
		if call, ok := n.(*ast.CallExpr); ok {
			if l := c.loopOf(call); l != nil {
				found, at = l, call
				return false
			}
		}
		return true
	})
	return found, at
}

// loopOf returns the retry loop call runs: retry.Do, a retryhttp
// transport's RoundTrip, a request of a client over one, or a function
// that runs one; nil for any other call.
func (c *checker) loopOf(call *ast.CallExpr) *runsRetries {
	fn := c.callee(call)
	if fn == nil {
		return nil
	}
	switch {
	case isFunc(fn, retryPath, "Do") && len(call.Args) > 2:
		attempts := c.attemptsOf(call.Args[1])
		if body := c.body(call.Args[2]); body != nil && c.nestedOff(call, retryPath) && !c.visiting[body] {
			c.visiting[body] = true // an operation that runs its own loop again ends the walk
			if inner, _ := c.firstLoop(body); inner != nil {
				attempts = times(attempts, inner.Attempts)
			}
			delete(c.visiting, body)
		}
		return &runsRetries{Loop: "retry.Do", Attempts: attempts}
	case isFunc(fn, httpPath, "RoundTrip"):
		return &runsRetries{Loop: "a retryhttp.Transport", Attempts: unknown}
	case fn.Pkg() != nil && fn.Pkg().Path() == "net/http":
		return c.clientCall(call, fn)
	}
	if c.decls[fn] != nil {
		if l := c.loopOfFunc(fn); l != nil {
			return l.through(fn.Name())
		}
		return nil
	}
	var f runsRetries
	if fn.Pkg() != c.pass.Pkg && c.pass.ImportObjectFact(fn, &f) {
		return f.through(fn.Pkg().Name() + "." + fn.Name())
	}
	return nil
}

// clientCalls are the methods of http.Client that send a request.
var clientCalls = map[string]bool{"Do": true, "Get": true, "Head": true, "Post": true, "PostForm": true}

// clientCall returns the loop that a request of an http.Client over a
// retryhttp transport runs, or nil for another call of net/http.
func (c *checker) clientCall(call *ast.CallExpr, fn *types.Func) *runsRetries {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok || !clientCalls[fn.Name()] {
		return nil
	}
	id, ok := ast.Unparen(sel.X).(*ast.Ident)
	if !ok {
		return nil
	}
	if attempts, ok := c.clients[c.pass.TypesInfo.Uses[id]]; ok {
		return &runsRetries{Loop: "an http.Client over a retryhttp transport", Attempts: attempts}
	}
	return nil
}

// body is the code an operation runs: a function literal's body, or the
// body of a function of this package it names; nil otherwise.
func (c *checker) body(op ast.Expr) ast.Node {
	switch op := ast.Unparen(op).(type) {
	case *ast.FuncLit:
		return op.Body
	case *ast.Ident, *ast.SelectorExpr:
		var id *ast.Ident
		if sel, ok := op.(*ast.SelectorExpr); ok {
			id = sel.Sel
		} else {
			id = op.(*ast.Ident)
		}
		if fn, ok := c.pass.TypesInfo.Uses[id].(*types.Func); ok && c.decls[fn] != nil {
			return c.decls[fn].Body
		}
	}
	return nil
}

// nestedOff reports whether a loop's call passes WithNestedRetries() of
// the package at path: the one-layer rule off.
func (c *checker) nestedOff(call *ast.CallExpr, path string) bool {
	for _, arg := range call.Args {
		if opt, ok := ast.Unparen(arg).(*ast.CallExpr); ok && isFunc(c.callee(opt), path, "WithNestedRetries") {
			return true
		}
	}
	return false
}

// attemptsOf is the most attempts of the strategy e: its MaxAttempts when
// bounded, 1 for none, unbounded for unless_stopped (and the default),
// unknown when it is not a constant literal, or a variable declared with
// one and never changed.
func (c *checker) attemptsOf(e ast.Expr) int {
	switch e := ast.Unparen(e).(type) {
	case *ast.CompositeLit:
		s, ok := c.constStrategy(e)
		if !ok {
			return unknown
		}
		switch s.Kind {
		case retrypolicy.Bounded:
			return s.MaxAttempts
		case retrypolicy.None:
			return 1
		}
		return unbounded
	case *ast.CallExpr:
		if isFunc(c.callee(e), corePath, "Default") {
			return unbounded
		}
	case *ast.Ident:
		if obj := c.pass.TypesInfo.Uses[e]; obj != nil && c.literals[obj] != nil && !c.mutated[obj] {
			return c.attemptsOf(c.literals[obj])
		}
	}
	return unknown
}

// client records lhs, assigned rhs, as an http.Client over a retryhttp
// transport when rhs is a literal (or its address) whose Transport is
// one.
func (c *checker) client(lhs ast.Expr, rhs ast.Expr) {
	id, ok := lhs.(*ast.Ident)
	if !ok {
		return
	}
	if u, ok := ast.Unparen(rhs).(*ast.UnaryExpr); ok {
		rhs = u.X
	}
	lit, ok := ast.Unparen(rhs).(*ast.CompositeLit)
	if !ok || !isNamed(c.pass.TypesInfo.TypeOf(lit), "net/http", "Client") {
		return
	}
	kv := field(lit, "Transport")
	if kv == nil || !isNamed(c.pass.TypesInfo.TypeOf(kv.Value), httpPath, "Transport") {
		return
	}
	if obj := c.pass.TypesInfo.ObjectOf(id); obj != nil {
		c.clients[obj] = unknown
	}
}

// call checks a call: Parse and ParseFlags of constants, and retry.Do's
// operation (its context, and the loops it runs).
func (c *checker) call(call *ast.CallExpr) {
	fn := c.callee(call)
	if fn == nil {
		return
	}
	c.parseCall(call, fn)
	c.foreignOptions(call, fn)
	c.hedgingInDo(call, fn)
	if !isFunc(fn, retryPath, "Do") || len(call.Args) < 3 {
		return
	}
	c.context(call.Args[2])
	if !c.nestedOff(call, retryPath) {
		return // the one-layer rule holds: nested loops retry once between them
	}
	outer := c.attemptsOf(call.Args[1])
	body := c.body(call.Args[2])
	if body == nil {
		return
	}
	ast.Inspect(body, func(n ast.Node) bool {
		inner, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		l := c.loopOf(inner)
		if l == nil {
			return true
		}
		c.report(inner, "nested-retry", fmt.Sprintf(
			"this call runs %s (%s) inside an operation of retry.Do (%s) that retries with WithNestedRetries(): up to %s reach the dependency for one call; drop WithNestedRetries() so that the loops retry at one layer",
			l.Via(), attemptsText(l.Attempts), attemptsText(outer), product(outer, l.Attempts)))
		return false
	})
}

// product says a×b attempts.
func product(a, b int) string {
	if a > 0 && b > 0 {
		return fmt.Sprintf("%s×%s = %s", count(a), count(b), attemptsText(times(a, b)))
	}
	return attemptsText(times(a, b)) + ", each layer's times the other's,"
}

// count says a count of attempts as a number, or "more than" its bound.
func count(n int) string {
	if n > mostAttempts {
		return "more than 1,000,000,000"
	}
	return strconv.Itoa(n)
}

// context reports an operation whose context parameter is unnamed or
// never referenced.
func (c *checker) context(op ast.Expr) {
	var ftype *ast.FuncType
	var body *ast.BlockStmt
	switch o := ast.Unparen(op).(type) {
	case *ast.FuncLit:
		ftype, body = o.Type, o.Body
	default:
		b := c.body(op)
		if b == nil {
			return
		}
		for _, d := range c.decls {
			if d.Body == b {
				ftype, body = d.Type, d.Body
			}
		}
	}
	if ftype == nil || ftype.Params == nil || len(ftype.Params.List) == 0 {
		return
	}
	param := ftype.Params.List[0]
	if len(param.Names) == 0 || param.Names[0].Name == "_" {
		c.report(op, "ignored-context", "the operation's context parameter is unnamed: the loop cannot stop a running attempt when the context is done, and a loop below it cannot report to it; pass the context on")
		return
	}
	obj := c.pass.TypesInfo.Defs[param.Names[0]]
	used := false
	ast.Inspect(body, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && c.pass.TypesInfo.Uses[id] == obj {
			used = true
		}
		return !used
	})
	if !used {
		c.report(op, "ignored-context", "the operation never uses its context "+param.Names[0].Name+": the loop cannot stop a running attempt when the context is done, and a loop below it cannot report to it; pass the context on")
	}
}
