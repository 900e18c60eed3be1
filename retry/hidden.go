package retry

import (
	"context"
	"errors"
	"sync/atomic"
)

// A hidden resend is a send of an attempt that the transport under an
// adapter makes on its own, out of the loop's sight: net/http's sends a
// request again on a new connection when a reused one proves dead, and
// again up to 7 times on an HTTP/2 GOAWAY or REFUSED_STREAM; grpc-go
// retries a call transparently while no stream was created. An adapter
// that sees them tells the loop (HiddenResend), which tells its observers
// (an Event whose Hidden is true), counts them (End.HiddenResends) and
// charges them to its budget. They are never attempts: the strategy, the
// throttle and the report to the layer above count the attempt once,
// however many times it was sent.

// ErrHiddenResend is the Err of an Event whose Hidden is true.
var ErrHiddenResend = errors.New("retrypolicy: the transport sent the attempt again on its own (a hidden resend)")

// ErrResendRefused is the error of an attempt that an adapter stopped
// because the loop's budget refused one of its hidden resends: a
// transient failure, which the loop decides on as any other (usually
// giving up BudgetExhausted, the budget being empty).
var ErrResendRefused = errors.New("retrypolicy: the budget refused a hidden resend of the attempt, which was stopped")

// hidden is an attempt's account of its hidden resends: what the loop
// gives it as the attempt starts, and what the adapter tells it.
type hidden struct {
	budget   *Budget     // the call's, nil for none
	observe  func(Event) // the loop's observers, nil for none
	failures int         // the call's failures before the attempt
	n        atomic.Int32
	watched  atomic.Bool
	refused  atomic.Bool // the budget refused a resend
}

// HiddenResend tells the loop whose attempt ctx is (the context the loop
// handed its operation, or one derived from it) that the attempt's
// transport is about to send it again on its own: a hidden resend. The
// loop's observers get an Event whose Hidden is true and whose Err is
// ErrHiddenResend, and End.HiddenResends counts it. An attempt's first
// hidden resend is free (most are of a request the server never
// processed); each later one withdraws from the loop's budget, if it has
// one, and HiddenResend returns false when the budget refuses: the adapter
// must then stop the resend and fail the attempt, with ErrResendRefused,
// as a transient failure. It returns true, and does nothing, under a
// context of no loop, or of an attempt that has returned.
func HiddenResend(ctx context.Context) bool {
	a := enclosingOf(ctx)
	if a == nil || a.state.Load()&runningBit == 0 {
		return true
	}
	h := &a.hidden
	h.watched.Store(true)
	n := h.n.Add(1)
	ok := n == 1 || h.budget == nil || h.budget.Withdraw()
	if !ok {
		h.refused.Store(true)
	}
	if h.observe != nil {
		h.observe(Event{Hidden: true, Failures: h.failures, Err: ErrHiddenResend, Context: a.Context})
	}
	return ok
}

// WatchHidden tells the loop whose attempt ctx is that its adapter sees
// the attempt's hidden resends, so that End.HiddenSeen says the count is
// known (an adapter calls it as the attempt reaches its transport: a
// retryhttp transport before it sends the attempt, retrygrpc's stats
// handler as a stream begins). It reports whether the loop may refuse a
// resend of the attempt (it has a budget): only then must the adapter be
// able to stop one, which may cost it a cancellable context.
func WatchHidden(ctx context.Context) (mayRefuse bool) {
	a := enclosingOf(ctx)
	if a == nil || a.state.Load()&runningBit == 0 {
		return false
	}
	a.hidden.watched.Store(true)
	return a.hidden.budget != nil
}

// startAttempt returns the context of the call's next attempt, after
// failures failures, its account of hidden resends given the call's
// budget and observers.
func (c *config) startAttempt(ctx context.Context, failures int) *attemptCtx {
	return c.startAttemptIn(new(attemptCtx), ctx, failures)
}

// startAttemptIn is startAttempt in a, a zero attemptCtx.
func (c *config) startAttemptIn(a *attemptCtx, ctx context.Context, failures int) *attemptCtx {
	a.start(ctx)
	a.hidden.budget, a.hidden.observe, a.hidden.failures = c.budget, c.observe, failures
	return a
}

// endAttempt ends the attempt a, adds its hidden resends to the call's,
// and reports whether it was retried below.
func (c *config) endAttempt(a *attemptCtx) bool {
	below := a.end()
	c.hiddenResends += int(a.hidden.n.Load())
	c.hiddenSeen = c.hiddenSeen || a.hidden.watched.Load()
	return below
}

// ResendRefused reports whether the loop's budget refused a hidden resend
// of ctx's attempt (HiddenResend returned false): an adapter whose hook
// runs before each send of the attempt (gRPC's per-call credentials, before
// each stream's headers) fails every later one.
func ResendRefused(ctx context.Context) bool {
	a := enclosingOf(ctx)
	return a != nil && a.hidden.refused.Load()
}
