package vet

import (
	"context"
	"go/ast"
	"go/types"
	"strconv"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
)

// hedgingLoop is a Loop variable made with retry.WithHedging: by retry.New
// given it, or by the With of a loop that was.
type hedgingLoop struct {
	option *ast.CallExpr // the retry.WithHedging
}

// refusals are the library's own words when a loop's Do is given
// retry.WithHedging, asked of retry.Do and of a Loop's Do themselves (""
// where it is taken), so that the check follows the library's rule.
type refusals struct {
	do, loopDo string
}

// hedgingRefusals asks retry.Do, and the Do of a loop made with
// retry.WithHedging, what they say of it.
func hedgingRefusals() refusals {
	none := retrypolicy.Strategy{Kind: retrypolicy.None}
	hedging := retry.WithHedging(retry.Hedging{Delay: time.Millisecond})
	op := func(context.Context) (struct{}, error) { return struct{}{}, nil }
	var r refusals
	if _, err := retry.Do(context.Background(), none, op, hedging); err != nil {
		r.do = err.Error()
	}
	l, err := retry.New[struct{}](none, hedging)
	if err != nil {
		return r
	}
	if _, err := l.Do(context.Background(), op); err != nil {
		r.loopDo = err.Error()
	}
	return r
}

// refused returns the library's refusals, asked once a package.
func (c *checker) refused() refusals {
	if c.refusals == nil {
		r := hedgingRefusals()
		c.refusals = &r
	}
	return *c.refusals
}

// isLoopMethod reports whether fn is the method name of retry.Loop.
func isLoopMethod(fn *types.Func, name string) bool {
	recv := fn.Signature().Recv()
	return isFunc(fn, retryPath, name) && recv != nil && isNamed(recv.Type(), retryPath, "Loop")
}

// isHedging reports whether an option is retry.WithHedging(…).
func (c *checker) isHedging(opt *ast.CallExpr) bool {
	return isFunc(c.callee(opt), retryPath, "WithHedging")
}

// receiver returns the variable a method call is made on, or nil.
func (c *checker) receiver(call *ast.CallExpr) types.Object {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return nil
	}
	id, ok := ast.Unparen(sel.X).(*ast.Ident)
	if !ok {
		return nil
	}
	return c.pass.TypesInfo.Uses[id]
}

// madeLoop records the variable lhs declares when rhs, a retry.New or a
// Loop's With, makes a loop with retry.WithHedging.
func (c *checker) madeLoop(lhs, rhs ast.Expr) {
	id, ok := lhs.(*ast.Ident)
	call, ok2 := ast.Unparen(rhs).(*ast.CallExpr)
	if !ok || !ok2 || c.pass.TypesInfo.Defs[id] == nil {
		return
	}
	fn := c.callee(call)
	var made *hedgingLoop
	switch {
	case isFunc(fn, retryPath, "New") && fn.Signature().Recv() == nil:
	case fn != nil && isLoopMethod(fn, "With"):
		made = c.hedgingLoops[c.receiver(call)]
	default:
		return
	}
	for _, opt := range optionArgs(call, fn) {
		if c.isHedging(opt) {
			made = &hedgingLoop{option: opt}
		}
	}
	if made != nil {
		c.hedgingLoops[c.pass.TypesInfo.Defs[id]] = made
	}
}

// hedgingInDo reports retry.WithHedging given to retry.Do, and a Do of a
// loop variable made with it (assigned once), which the library refuses
// each time they run.
func (c *checker) hedgingInDo(call *ast.CallExpr, fn *types.Func) {
	if fn.Signature().Recv() == nil && isFunc(fn, retryPath, "Do") {
		for _, opt := range optionArgs(call, fn) {
			if why := c.refused().do; why != "" && c.isHedging(opt) {
				c.report(opt, "hedging-in-do", "retry.Do refuses this option each time it runs, saying: "+why+"; retry.Hedge's op runs concurrently, and must return once its context ends")
			}
		}
		return
	}
	if !isLoopMethod(fn, "Do") {
		return
	}
	v := c.receiver(call)
	made, ok := c.hedgingLoops[v]
	if !ok || c.mutated[v] || c.refused().loopDo == "" {
		return
	}
	why := c.refused().loopDo
	line := c.pass.Fset.Position(made.option.Pos()).Line
	c.report(call, "hedging-in-do", v.Name()+" was made with retry.WithHedging (line "+strconv.Itoa(line)+
		"), and its Do refuses that each time it runs, saying: "+why+"; "+v.Name()+".Hedge's op runs concurrently, and must return once its context ends")
}
