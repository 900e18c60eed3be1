package retry

import (
	"context"
	"errors"
)

// ErrThrottled is the error of a call that the loop's throttle
// (WithThrottle) rejected: the Err of its *GiveUpError, whose Reason is
// Throttled. The call was not sent.
var ErrThrottled = errors.New("retrypolicy: the throttle rejected the call, which was not sent: its dependency accepts too few of the calls sent to it")

// WithThrottle makes the loop's calls go through t, a client-side throttle
// (NewThrottle): before a call's first attempt the throttle may reject it,
// and the loop then gives up at once with the reason Throttled and
// ErrThrottled, the call unsent, and reports to the layer above it as a
// budget's refusal does. Each attempt sent is a request for t, and each
// attempt that ended well (a success, or an answer that is not transient,
// as a budget counts them) an accept, counted when it returns; an attempt
// the caller ended is a request and never an accept. Give each dependency
// a throttle of its own. Off by default: a throttle sheds good calls when
// a dependency fails at random rather than from load. A retrygrpc
// interceptor takes it as Do does; a retryhttp transport takes throttles
// per host only (retryhttp.WithHostThrottles).
func WithThrottle(t *Throttle) Option {
	return loopOption("WithThrottle", kindThrottle, func(c config) config {
		if t == nil {
			return c.refuse("WithThrottle", "the throttle is nil")
		}
		c.throttle = t
		return c
	})
}

// admit asks the throttle, if any, whether the call may be sent, as it
// begins: a *GiveUpError for the reason Throttled when it may not.
// Otherwise the call starts for the budget, if any. A call whose context
// is already done is not asked about: the loop gives it up as
// ContextDone.
func (c *config) admit(ctx context.Context) *GiveUpError {
	if c.throttle != nil && ctx.Err() == nil {
		ok, decided := admitted(ctx, c.throttle)
		if !decided {
			ok = c.throttle.Allow()
		}
		if !ok {
			return &GiveUpError{Reason: Throttled, Err: ErrThrottled}
		}
	}
	if c.budget != nil {
		c.budget.Start()
	}
	return nil
}

// admission is the context value of Admit: its throttle's decision on a
// call.
type admission struct {
	throttle *Throttle
	ok       bool
}

// admissionKey is the context key of an admission.
type admissionKey struct{}

// admitted returns the decision Admit made under ctx by t, and whether it
// made one.
func admitted(ctx context.Context, t *Throttle) (ok, decided bool) {
	a, _ := ctx.Value(admissionKey{}).(admission)
	return a.ok, a.throttle == t
}

// Admit asks the loop's throttle (WithThrottle) now whether a call may be
// sent, for an adapter that sends a call's first attempt before it runs
// the loop (a stream opened as its first message is sent): false when it
// may not, and the adapter must not send it. The loop's Do under the
// context it returns keeps that decision rather than ask again: it gives
// up Throttled, without calling op, when the call was rejected. Without a
// throttle it returns ctx and true.
func (l *Loop[T]) Admit(ctx context.Context) (context.Context, bool) {
	t := l.cfg.throttle
	if t == nil || ctx.Err() != nil {
		return ctx, true
	}
	ok := t.Allow()
	return context.WithValue(ctx, admissionKey{}, admission{t, ok}), ok
}

// sent counts an attempt about to be sent: a call of op, and a request
// for the throttle after the first (the first was counted as the throttle
// let the call through).
func (c *config) sent() {
	c.calls++
	if c.calls > 1 && c.throttle != nil {
		c.throttle.Sent()
	}
}

// NamesThrottle reports whether o is WithThrottle: an adapter that takes
// throttles of its own (a retryhttp transport's, per host) refuses it.
func (o Option) NamesThrottle() bool { return o.kind == kindThrottle }
