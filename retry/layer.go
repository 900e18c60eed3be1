package retry

import (
	"context"
	"errors"
	"sync"
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

// attemptCtx is the context a layer hands one attempt of its operation.
// Each attempt has its own, so that a report made through it after the
// attempt returned (by a goroutine left behind) counts for none; and it
// is cancelled as the attempt returns, as net/http cancels a request's
// when its handler returns, so that what the attempt left waiting on it
// ends. Work an attempt hands on that must outlive it (a response body to
// read, a stream to go on) runs under CallContext. It is one object until someone asks for
// its Done channel: then it makes a cancellable context under the call's,
// which answers Done, Err and Value from then on, so that a context
// derived from the attempt's (under a value, too) is cancelled with it as
// the context package cancels its own, without a goroutine.
type attemptCtx struct {
	context.Context               // the call's
	state           atomic.Uint32 // running | reported

	mu    sync.Mutex
	ended bool                        // the attempt was cancelled
	inner atomic.Pointer[cancellable] // made by the first Done
	lost  context.CancelCauseFunc     // OnLoss's, called if the attempt is cancelled while it runs

	hidden hidden // its hidden resends

	bound *time.Time // the attempt's own deadline (WithAttemptTimeout), nil for none; last, for the size
}

// cancellable is an attempt's context once something waits on it.
type cancellable struct {
	context.Context
	cancel context.CancelCauseFunc
}

const (
	reportedBit = 1
	runningBit  = 2
)

// newAttempt returns a running attempt of the call whose context is ctx.
func newAttempt(ctx context.Context) *attemptCtx { return new(attemptCtx).start(ctx) }

// start makes a, a zero attemptCtx, a running attempt of the call whose
// context is ctx, and returns it: an attempt may live inside another
// object (a hedged call's first, in the call's state).
func (a *attemptCtx) start(ctx context.Context) *attemptCtx {
	a.Context = ctx
	a.state.Store(runningBit)
	return a
}

// limit gives the attempt a deadline d from now (WithAttemptTimeout): a
// pointer, so that an attempt without one stays as small as it was.
func (a *attemptCtx) limit(d time.Duration) {
	deadline := time.Now().Add(d)
	a.bound = &deadline
}

// Deadline returns the attempt's own deadline, or the call's when that is
// sooner.
func (a *attemptCtx) Deadline() (time.Time, bool) {
	d, ok := a.Context.Deadline()
	if a.bound != nil && (!ok || a.bound.Before(d)) {
		return *a.bound, true
	}
	return d, ok
}

// Value returns the attempt itself for layerKey, and asks its cancellable
// context, or else the call's, for any other key.
func (a *attemptCtx) Value(key any) any {
	if key == (layerKey{}) {
		return a
	}
	if c := a.inner.Load(); c != nil {
		return c.Value(key)
	}
	return a.Context.Value(key)
}

// Done returns a channel closed when the attempt is cancelled or the call's
// context is done.
func (a *attemptCtx) Done() <-chan struct{} {
	if c := a.inner.Load(); c != nil {
		return c.Done()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.inner.Load()
	if c == nil {
		ctx, cancel := context.WithCancelCause(a.Context)
		if a.bound != nil {
			var stop context.CancelFunc
			ctx, stop = context.WithDeadlineCause(ctx, *a.bound, errAttemptTimeout)
			parent := cancel
			cancel = func(cause error) { stop(); parent(cause) }
		}
		c = &cancellable{ctx, cancel}
		if a.ended {
			cancel(context.Canceled)
		}
		a.inner.Store(c)
	}
	return c.Done()
}

// Err returns context.Canceled once the attempt was cancelled, else the
// call's context's error.
func (a *attemptCtx) Err() error {
	if c := a.inner.Load(); c != nil {
		return c.Err()
	}
	a.mu.Lock()
	ended := a.ended
	a.mu.Unlock()
	if ended {
		return context.Canceled
	}
	if err := a.Context.Err(); err != nil {
		return err
	}
	if a.bound != nil && !time.Now().Before(*a.bound) {
		return context.DeadlineExceeded
	}
	return nil
}

// errAttemptTimeout is the cause of an attempt's context that its
// timeout ended (WithAttemptTimeout).
var errAttemptTimeout = errors.New("retry: the attempt timed out")

// cancel ends the attempt's context; an attempt cancelled while it runs
// (a hedged call's loser) also calls what OnLoss bound to it.
func (a *attemptCtx) cancel() {
	a.mu.Lock()
	a.ended = true
	if c := a.inner.Load(); c != nil {
		c.cancel(context.Canceled)
	}
	lost := a.lost
	a.lost = nil
	a.mu.Unlock()
	if lost != nil && a.state.Load()&runningBit != 0 {
		lost(ErrLost)
	}
}

// ErrLost is the cause OnLoss gives the context it ends: the hedged call
// ended while the attempt ran (another attempt answered first, with a
// success or an answer not retried, or the call's context ended).
var ErrLost = errors.New("retrypolicy: the hedged call ended while the attempt ran")

// OnLoss binds cancel to the attempt whose context is ctx (the context a
// hedged call's loop handed its operation, or one derived from it): if
// the loop cancels the attempt while it runs, because another attempt
// ended the call first, it calls cancel(ErrLost) before it waits for the
// attempt to return. An adapter whose attempt runs under a context of its
// own, which must outlive the attempt when it wins (a response body the
// caller reads after the call), binds that context's cancel function,
// where a context.AfterFunc on ctx would cost several allocations an
// attempt. An attempt binds one function: a later call replaces it. An
// attempt already cancelled calls cancel at once. It does nothing under a
// context of no attempt, or of one that returned; only a hedged call
// cancels an attempt that still runs (when the call ends otherwise, too:
// its context ended). cancel is called with no lock held.
func OnLoss(ctx context.Context, cancel context.CancelCauseFunc) {
	a := enclosingOf(ctx)
	if a == nil {
		return
	}
	a.mu.Lock()
	ended := a.ended
	if !ended {
		a.lost = cancel
	}
	a.mu.Unlock()
	if ended {
		cancel(ErrLost)
	}
}

// end ends the attempt, and reports whether a layer below reported to it.
func (a *attemptCtx) end() bool {
	return a.state.Swap(0)&reportedBit != 0
}

// report marks the attempt as retried below, if it still runs.
func (a *attemptCtx) report() {
	for {
		old := a.state.Load()
		if old&runningBit == 0 || old&reportedBit != 0 {
			return
		}
		if a.state.CompareAndSwap(old, old|reportedBit) {
			return
		}
	}
}

// enclosingOf returns the attempt ctx runs under, if one runs: the attempt
// of the nearest enclosing layer, as a layer starting under ctx sees it.
func enclosingOf(ctx context.Context) *attemptCtx {
	a, _ := ctx.Value(layerKey{}).(*attemptCtx)
	if a == nil || a.state.Load()&runningBit == 0 {
		return nil
	}
	return a
}

// CallContext returns the context of the call that the attempt ctx is an
// attempt of (the caller's, as WithStart made it), for work an attempt
// hands on that must outlive it or carry the call's values: retryhttp
// sends under it its attempts after the first, a hedged call's attempts,
// and every attempt when the loop has a start hook. It
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
func Report(ctx context.Context) {
	if a := enclosingOf(ctx); a != nil {
		a.report()
	}
}

// Attempt is one attempt of a layer that is not a loop of this package,
// such as an HTTP handler (retryhttp.Handler) or a queue's delivery: the
// layers that run under its context report to it. Its methods are safe
// for concurrent use.
type Attempt struct{ ctx *attemptCtx }

// StartAttempt returns a context for one attempt of a layer of the
// caller's, and the attempt, which the caller ends with End when the
// attempt returns.
func StartAttempt(ctx context.Context) (context.Context, *Attempt) {
	a := newAttempt(ctx)
	return a, &Attempt{ctx: a}
}

// Reported reports whether a layer below has reported to the attempt so
// far.
func (a *Attempt) Reported() bool { return a.ctx.state.Load()&reportedBit != 0 }

// End ends the attempt: later reports count for nothing, and its context
// is cancelled. It reports whether a layer below reported to it, the first
// time it is called.
func (a *Attempt) End() bool {
	reported := a.ctx.end()
	a.ctx.cancel()
	return reported
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
