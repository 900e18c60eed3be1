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
// begins: a *GiveUpError for the reason Throttled when it may not. A call
// whose context is already done is not asked about: the loop gives it up
// as ContextDone.
func (c *config) admit(ctx context.Context) *GiveUpError {
	if c.throttle == nil || ctx.Err() != nil || c.throttle.Allow() {
		return nil
	}
	return &GiveUpError{Reason: Throttled, Err: ErrThrottled}
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
