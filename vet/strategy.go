package vet

import (
	"context"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/tools/go/analysis"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/plan"
)

// lints counts the strategies linted, for a test.
var lints atomic.Int64

// inProcessCodes are the findings that matter to an in-process loop, linted
// with no tick: one that gives up in seconds is fine there.
var inProcessCodes = map[string]bool{"never-fatal": true, "zero-delay": true, "no-cap": true}

// literal checks a Strategy or Backoff composite literal whose fields are
// all constants.
func (c *checker) literal(lit *ast.CompositeLit, stack []ast.Node) {
	t := c.pass.TypesInfo.TypeOf(lit)
	switch {
	case isNamed(t, corePath, "Strategy"):
		s, ok := c.constStrategy(lit)
		if !ok || c.builtLater(lit, stack) {
			return
		}
		if err := s.Validate(); err != nil {
			c.report(lit, "invalid", err.Error())
			return
		}
		c.lint(lit, s, c.useOf(lit, stack))
	case isNamed(t, corePath, "Backoff") && !c.inside[lit]:
		b, ok := c.constBackoff(lit)
		if !ok {
			return
		}
		// A Backoff is checked as the backoff of a strategy that retries.
		if err := (retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: b}).Validate(); err != nil {
			c.report(lit, "invalid", err.Error())
		}
	}
}

// builtLater reports whether the literal lit (whose enclosing nodes are
// stack) starts a variable whose fields are set afterwards: a strategy
// built at run time.
func (c *checker) builtLater(lit *ast.CompositeLit, stack []ast.Node) bool {
	obj := c.boundTo(lit, stack)
	return obj != nil && c.mutated[obj]
}

// boundTo is the variable the literal lit is assigned to or declares, or
// nil.
func (c *checker) boundTo(lit *ast.CompositeLit, stack []ast.Node) types.Object {
	if len(stack) < 2 {
		return nil
	}
	switch parent := stack[len(stack)-2].(type) {
	case *ast.AssignStmt:
		for i, rhs := range parent.Rhs {
			if rhs == lit && i < len(parent.Lhs) {
				if id, ok := parent.Lhs[i].(*ast.Ident); ok {
					return c.pass.TypesInfo.ObjectOf(id)
				}
			}
		}
	case *ast.ValueSpec:
		for i, v := range parent.Values {
			if v == lit && i < len(parent.Names) {
				return c.pass.TypesInfo.ObjectOf(parent.Names[i])
			}
		}
	}
	return nil
}

// givenToLoop reports whether the strategy literal lit (whose enclosing
// nodes are stack) goes to an in-process loop: it is an argument of
// retry.Do or retryhttp.NewTransport, or held by a variable that is.
func (c *checker) givenToLoop(lit *ast.CompositeLit, stack []ast.Node) bool {
	if c.inProcess[lit] {
		return true
	}
	obj := c.boundTo(lit, stack)
	return obj != nil && c.inProcess[obj]
}

// use is what runs a strategy.
type use int

const (
	controller use = iota // a controller, on its tick
	inProcess             // retry.Do or a retryhttp transport
	queue                 // a queue adapter, which runs a retry when due
)

// queueConfigs are the import paths of the packages whose Config holds a
// queue's strategies.
var queueConfigs = []string{corePath + "/queuekit", corePath + "/riverretry", corePath + "/natsretry"}

// useOf says what runs the strategy literal lit, whose enclosing nodes
// are stack: a queue when it is inside a queue adapter's Config (or held
// by a variable named in one), an in-process loop when it goes to one, a
// controller otherwise.
func (c *checker) useOf(lit *ast.CompositeLit, stack []ast.Node) use {
	for i := len(stack) - 2; i >= 0; i-- {
		if outer, ok := stack[i].(*ast.CompositeLit); ok && c.isQueueConfig(outer) {
			return queue
		}
	}
	if obj := c.boundTo(lit, stack); obj != nil && c.queued[obj] {
		return queue
	}
	if c.givenToLoop(lit, stack) {
		return inProcess
	}
	return controller
}

// isQueueConfig reports whether lit is a queue adapter's Config.
func (c *checker) isQueueConfig(lit *ast.CompositeLit) bool {
	for _, path := range queueConfigs {
		if isNamed(c.pass.TypesInfo.TypeOf(lit), path, "Config") {
			return true
		}
	}
	return false
}

// lint reports lint's warnings on the valid strategy s of lit: under a
// controller's tick; with no tick for a queue; with no tick and only
// inProcessCodes for an in-process loop.
func (c *checker) lint(lit *ast.CompositeLit, s retrypolicy.Strategy, u use) {
	for _, f := range c.findings(s, u) {
		var fixes []analysis.SuggestedFix
		if fix, ok := c.fieldFix(lit, f); ok {
			fixes = append(fixes, fix)
		}
		c.report(lit, f.Code, f.Message+"; "+f.Fix, fixes...)
	}
}

// lintKey is a strategy and what runs it: lint's findings depend on
// nothing else.
type lintKey struct {
	s retrypolicy.Strategy
	u use
}

// findings returns the warnings lint gives s run by u, linting each
// distinct strategy and use once a package: a lint takes tens of
// milliseconds, and a package may repeat one literal many times.
func (c *checker) findings(s retrypolicy.Strategy, u use) []plan.Finding {
	key := lintKey{s, u}
	if f, ok := c.linted[key]; ok {
		return f
	}
	lints.Add(1)
	var opts []plan.Option
	if u == controller {
		opts = append(opts, plan.WithTick(plan.DefaultTick))
	}
	var warnings []plan.Finding
	if report, err := plan.LintGo(context.Background(), s, opts...); err == nil {
		for _, f := range report.Findings {
			if f.Severity == plan.Warning && (u != inProcess || inProcessCodes[f.Code]) {
				warnings = append(warnings, f)
			}
		}
	}
	c.linted[key] = warnings
	return warnings
}

// constStrategy returns the strategy of lit, and whether every field it
// sets is a constant (a Backoff, a literal of constants).
func (c *checker) constStrategy(lit *ast.CompositeLit) (retrypolicy.Strategy, bool) {
	var s retrypolicy.Strategy
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			return s, false
		}
		key, _ := kv.Key.(*ast.Ident)
		if key == nil {
			return s, false
		}
		if key.Name == "Backoff" {
			b, ok := ast.Unparen(kv.Value).(*ast.CompositeLit)
			if !ok {
				return s, false
			}
			c.inside[b] = true
			if s.Backoff, ok = c.constBackoff(b); !ok {
				return s, false
			}
			continue
		}
		v, ok := c.constInt(kv.Value)
		if !ok {
			return s, false
		}
		switch key.Name {
		case "Kind":
			s.Kind = retrypolicy.StrategyKind(v)
		case "MaxAttempts":
			s.MaxAttempts = int(v)
		case "Window":
			s.Window = time.Duration(v)
		default:
			return s, false
		}
	}
	return s, true
}

// constBackoff is constStrategy for a Backoff.
func (c *checker) constBackoff(lit *ast.CompositeLit) (retrypolicy.Backoff, bool) {
	var b retrypolicy.Backoff
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			return b, false
		}
		key, _ := kv.Key.(*ast.Ident)
		if key == nil {
			return b, false
		}
		if key.Name == "Multiplier" {
			tv := c.pass.TypesInfo.Types[kv.Value]
			if tv.Value == nil {
				return b, false
			}
			b.Multiplier, _ = constant.Float64Val(constant.ToFloat(tv.Value))
			continue
		}
		v, ok := c.constInt(kv.Value)
		if !ok {
			return b, false
		}
		switch key.Name {
		case "Kind":
			b.Kind = retrypolicy.BackoffKind(v)
		case "BaseDelay":
			b.BaseDelay = time.Duration(v)
		case "MaxDelay":
			b.MaxDelay = time.Duration(v)
		default:
			return b, false
		}
	}
	return b, true
}

// constInt is e's value, when it is an integer constant.
func (c *checker) constInt(e ast.Expr) (int64, bool) {
	tv := c.pass.TypesInfo.Types[e]
	if tv.Value == nil || tv.Value.Kind() != constant.Int {
		return 0, false
	}
	return constant.Int64Val(tv.Value)
}

// fieldFix is the suggested fix of a finding that one field's value
// fixes, in the literal lit: the field's value replaced, or the field
// added to the Backoff literal.
func (c *checker) fieldFix(lit *ast.CompositeLit, f plan.Finding) (analysis.SuggestedFix, bool) {
	target, name := lit, f.Field
	if rest, ok := strings.CutPrefix(name, "Backoff."); ok {
		kv := field(lit, "Backoff")
		if kv == nil {
			return analysis.SuggestedFix{}, false
		}
		b, ok := ast.Unparen(kv.Value).(*ast.CompositeLit)
		if !ok {
			return analysis.SuggestedFix{}, false
		}
		target, name = b, rest
	}
	if name == "" || f.Value == "time.Hour" && !c.importsTime(lit.Pos()) {
		return analysis.SuggestedFix{}, false
	}
	edit := analysis.TextEdit{}
	if kv := field(target, name); kv != nil {
		edit = analysis.TextEdit{Pos: kv.Value.Pos(), End: kv.Value.End(), NewText: []byte(f.Value)}
	} else if n := len(target.Elts); n > 0 {
		end := target.Elts[n-1].End()
		edit = analysis.TextEdit{Pos: end, End: end, NewText: []byte(", " + name + ": " + f.Value)}
	} else {
		edit = analysis.TextEdit{Pos: target.Lbrace + 1, End: target.Lbrace + 1, NewText: []byte(name + ": " + f.Value)}
	}
	return analysis.SuggestedFix{Message: "set " + f.Field + " to " + f.Value, TextEdits: []analysis.TextEdit{edit}}, true
}

// field is lit's element that sets name, or nil.
func field(lit *ast.CompositeLit, name string) *ast.KeyValueExpr {
	for _, e := range lit.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok && id.Name == name {
				return kv
			}
		}
	}
	return nil
}

// importsTime reports whether the file holding pos imports package time
// as time.
func (c *checker) importsTime(pos token.Pos) bool {
	for _, f := range c.pass.Files {
		if f.FileStart <= pos && pos < f.FileEnd {
			for _, imp := range f.Imports {
				if path, _ := strconv.Unquote(imp.Path.Value); path == "time" && (imp.Name == nil || imp.Name.Name == "time") {
					return true
				}
			}
		}
	}
	return false
}

// parseCall checks retrypolicy.Parse of a constant string and
// retrypolicy.ParseFlags of a literal of constant strings: the error they
// return, or lint's warnings on the strategy, under a controller's tick.
func (c *checker) parseCall(call *ast.CallExpr, fn *types.Func) {
	if len(call.Args) != 1 {
		return
	}
	var s retrypolicy.Strategy
	var err error
	switch {
	case isFunc(fn, corePath, "Parse"):
		conv, ok := ast.Unparen(call.Args[0]).(*ast.CallExpr)
		if !ok || len(conv.Args) != 1 {
			return
		}
		tv := c.pass.TypesInfo.Types[conv.Args[0]]
		if tv.Value == nil || tv.Value.Kind() != constant.String {
			return
		}
		s, err = retrypolicy.Parse([]byte(constant.StringVal(tv.Value)))
	case isFunc(fn, corePath, "ParseFlags"):
		args, ok := c.constStrings(call.Args[0])
		if !ok {
			return
		}
		s, err = retrypolicy.ParseFlags(args)
	default:
		return
	}
	if err != nil {
		c.report(call, "invalid", err.Error())
		return
	}
	report, lerr := plan.Lint(context.Background(), s, plan.WithTick(plan.DefaultTick))
	if lerr != nil {
		return
	}
	for _, f := range report.Findings {
		if f.Severity == plan.Warning {
			c.report(call, f.Code, f.Message+"; "+f.Fix)
		}
	}
}

// constStrings is the strings of a []string literal of constants.
func (c *checker) constStrings(e ast.Expr) ([]string, bool) {
	lit, ok := ast.Unparen(e).(*ast.CompositeLit)
	if !ok {
		return nil, false
	}
	out := []string{}
	for _, el := range lit.Elts {
		tv := c.pass.TypesInfo.Types[el]
		if tv.Value == nil || tv.Value.Kind() != constant.String {
			return nil, false
		}
		out = append(out, constant.StringVal(tv.Value))
	}
	return out, true
}
