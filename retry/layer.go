package retry

import (
	"context"
	"sync/atomic"
	"time"
)

// Retries multiply across layers: a client, a gateway, a service and a
// driver that each make 3 attempts turn one action into 81 calls at the
// bottom. So the layers of this library retry at one layer. A layer (Do,
// a retryhttp transport, a queue adapter's job) runs each attempt of its
// operation under a context that is that attempt; a layer that runs under
// such a context reports to it when it gives up after retrying, and the
// attempt is then retried below. A synchronous layer (Do, retryhttp) does
// not retry an attempt that was retried below: it gives up at once, with
// the reason RetriedBelow, unless WithNestedRetries says otherwise.

// layerKey is the context key under which an attempt of a layer is found:
// the attempt of the nearest enclosing layer.
type layerKey struct{}

// deferKey is the context key of a durable layer's defer threshold.
type deferKey struct{}

// attemptCtx is the context a layer hands each attempt of its operation.
// One serves every attempt of a call: its state counts the attempts
// (generation), and says whether the current one runs and whether a layer
// below reported to it, so that a report made after its attempt returned
// (by a goroutine left behind) counts for none.
type attemptCtx struct {
	context.Context
	state atomic.Uint64 // generation<<2 | running<<1 | reported
}

const (
	reportedBit = 1
	runningBit  = 2
)

// Value returns the attempt itself for layerKey, and asks the parent
// context for any other key.
func (a *attemptCtx) Value(key any) any {
	if key == (layerKey{}) {
		return a
	}
	return a.Context.Value(key)
}

// begin starts the next attempt: a new generation, running, not reported.
func (a *attemptCtx) begin() {
	a.state.Store((a.state.Load()>>2+1)<<2 | runningBit)
}

// end ends the current attempt and reports whether a layer below reported
// to it.
func (a *attemptCtx) end() bool {
	for {
		old := a.state.Load()
		if a.state.CompareAndSwap(old, old>>2<<2) {
			return old&reportedBit != 0
		}
	}
}

// current returns the generation of the attempt running, and false when
// none runs.
func (a *attemptCtx) current() (uint64, bool) {
	s := a.state.Load()
	return s >> 2, s&runningBit != 0
}

// report marks attempt gen as retried below, if it still runs.
func (a *attemptCtx) report(gen uint64) {
	for {
		old := a.state.Load()
		if old>>2 != gen || old&runningBit == 0 || old&reportedBit != 0 {
			return
		}
		if a.state.CompareAndSwap(old, old|reportedBit) {
			return
		}
	}
}

// enclosing is the attempt of the nearest enclosing layer that ctx runs
// under, as a layer starting under ctx sees it.
type enclosing struct {
	a   *attemptCtx
	gen uint64
}

// enclosingOf returns the attempt ctx runs under, if any runs.
func enclosingOf(ctx context.Context) enclosing {
	a, _ := ctx.Value(layerKey{}).(*attemptCtx)
	if a == nil {
		return enclosing{}
	}
	gen, running := a.current()
	if !running {
		return enclosing{}
	}
	return enclosing{a, gen}
}

// report reports to the enclosing attempt, if it still runs.
func (e enclosing) report() {
	if e.a != nil {
		e.a.report(e.gen)
	}
}

// CallContext returns the context of the call that the attempt ctx is an
// attempt of (the caller's, as WithStart made it), for work an attempt
// hands on that must outlive it or carry the call's values: retryhttp
// sends its attempts' requests under it when the loop has a start hook. It
// returns ctx itself for a context that is no loop's attempt.
func CallContext(ctx context.Context) context.Context {
	if a, ok := ctx.(*attemptCtx); ok {
		return a.Context
	}
	return ctx
}

// Report tells the retry layer whose attempt ctx runs under that the
// attempt was retried below: code of its own that retried and gave up
// reports so, as Do and retryhttp do. The attempt, if it fails, is then
// not retried by a synchronous layer of this library. It does nothing for
// a context that runs under no layer's attempt, or one whose attempt
// returned.
func Report(ctx context.Context) { enclosingOf(ctx).report() }

// Attempt is one attempt of a layer that is not a loop of this package,
// such as an HTTP handler (retryhttp.Handler) or a queue's delivery: the
// layers that run under its context report to it. Its methods are safe
// for concurrent use.
type Attempt struct {
	ctx *attemptCtx
	gen uint64
}

// StartAttempt returns a context for one attempt of a layer of the
// caller's, and the attempt, which the caller ends with End when the
// attempt returns.
func StartAttempt(ctx context.Context) (context.Context, *Attempt) {
	a := &attemptCtx{Context: ctx}
	a.begin()
	gen, _ := a.current()
	return a, &Attempt{ctx: a, gen: gen}
}

// Reported reports whether a layer below has reported to the attempt so
// far.
func (a *Attempt) Reported() bool {
	s := a.ctx.state.Load()
	return s>>2 == a.gen && s&reportedBit != 0
}

// End ends the attempt: later reports count for nothing. It reports
// whether a layer below reported to it.
func (a *Attempt) End() bool {
	if gen, running := a.ctx.current(); !running || gen != a.gen {
		return false
	}
	return a.ctx.end()
}

// DeferAfter returns a context for the work of a durable layer (a queue's
// job) that takes over any wait longer than d from the synchronous layers
// that run under it: such a layer (Do, retryhttp) does not sleep that
// wait, but gives up at once with the reason Deferred and the wait in its
// GiveUpError, which the durable layer reads with DeferredWait and runs
// the job again no earlier. A d of 0 or less defers nothing.
func DeferAfter(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, deferKey{}, d)
}

// deferAfter returns the defer threshold ctx runs under, and false when
// it runs under none.
func deferAfter(ctx context.Context) (time.Duration, bool) {
	d, ok := ctx.Value(deferKey{}).(time.Duration)
	return d, ok && d > 0
}
