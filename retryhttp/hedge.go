package retryhttp

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrypolicy/retrypolicy/retry"
)

// hedgeKey is the context key of HedgeRequest.
type hedgeKey struct{}

// HedgeRequest returns ctx under which a transport built with
// retry.WithHedging hedges a request it would not hedge by its method (a
// PUT, or a POST with an idempotency key): one the caller knows is safe
// to send twice at once. A request that may not be sent again (a POST
// without an idempotency key, a body without GetBody) is never hedged.
func HedgeRequest(ctx context.Context) context.Context {
	return context.WithValue(ctx, hedgeKey{}, true)
}

// hedges reports whether req is hedged: the transport hedges, and req is
// safe to send again and of a method that hedges, or opted in.
func (t *Transport) hedges(req *http.Request) bool {
	if t.hedgeLoop == nil || !replayable(req) {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return req.Context().Value(hedgeKey{}) != nil
}

// hedgeLoopOf returns the hedging loop of req's host.
func (t *Transport) hedgeLoopOf(req *http.Request) *retry.Loop[*hedged] {
	if t.hosts != nil {
		return t.hosts.entryOf(req).hedge
	}
	return t.hedgeLoop
}

// hedged is an attempt's response the caller may get: a loser's is
// closed by the loop.
type hedged struct{ resp *http.Response }

// Close drains the loser's body to DrainLimit and closes it, which ends
// its attempt's context.
func (h *hedged) Close() error {
	drain(h.resp.Body)
	return h.resp.Body.Close()
}

// errLost is the cause of a losing attempt's context.
var errLost = errors.New("retryhttp: another attempt answered first")

// hedgedCall is one hedged request: its attempts run at once.
type hedgedCall struct {
	c      call // a copy, so that the transport's stays on its stack
	sent   atomic.Int32
	mu     sync.Mutex
	status []*StatusError // the retried responses, drained but the one handed over
}

// roundTripHedged sends c's request as a hedged call under ctx, the
// request's context (with its Cancel channel), and returns what RoundTrip
// returns. It takes c by value, so that an unhedged request's stays on
// the stack.
func roundTripHedged(ctx context.Context, c call) (*http.Response, error) {
	h := &hedgedCall{c: c}
	won, err := c.t.hedgeLoopOf(c.req).Hedge(ctx, h.attempt)
	defer h.discard()
	if err == nil {
		return won.resp, nil
	}
	if h.sent.Load() == 0 && c.req.Body != nil {
		c.req.Body.Close() // the context ended before the first attempt
	}
	var gu *retry.GiveUpError
	var se *StatusError
	if errors.As(err, &se) && se.resp != nil && errors.As(err, &gu) && gu.Reason != retry.ContextDone && gu.Reason != retry.Deferred {
		return se.handOver(), nil
	}
	return nil, err
}

// discard drains and closes the retried responses not handed over.
func (h *hedgedCall) discard() {
	for _, se := range h.status {
		se.discard()
	}
}

// attempt sends the request once, under a context of its own that the
// loop's cancelling of the attempt (a loser) ends, and that closing the
// response's body ends for the winner.
func (h *hedgedCall) attempt(ctx context.Context) (*hedged, error) {
	c := &h.c
	if c.canceled() {
		return nil, errRequestCanceled
	}
	n := int(h.sent.Add(1))
	rctx := retry.CallContext(ctx)
	if n > 1 {
		rctx = context.WithValue(rctx, attemptKey{}, n)
	}
	rctx, cancel := context.WithCancelCause(rctx)
	req, err := h.request(rctx, n)
	if err != nil {
		cancel(nil)
		return nil, retry.Permanent(err)
	}
	var timer *attemptTimer
	if c.timeout > 0 {
		req, timer = withTimeout(req, c.timeout)
	}
	stop := context.AfterFunc(ctx, func() { cancel(errLost) })
	resp, err := c.t.base.RoundTrip(req)
	stop()
	if err != nil {
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		cancel(nil)
		return nil, c.failed(ctx, err, timer)
	}
	if timer != nil {
		timer.closeWith(resp)
	}
	resp.Body = &cancelOnClose{resp.Body, cancel}
	return h.answer(ctx, resp, timer)
}

// request returns the request of attempt n under ctx: the caller's body
// the first time, rewound after.
func (h *hedgedCall) request(ctx context.Context, n int) (*http.Request, error) {
	r := h.c.req.WithContext(ctx)
	if n == 1 || r.Body == nil || r.Body == http.NoBody {
		return r, nil
	}
	body, err := h.c.req.GetBody()
	if err != nil {
		return nil, errors.New("retryhttp: rewinding the request body: " + err.Error())
	}
	r.Body = body
	return r, nil
}

// answer returns what the loop is told of resp: the response when it is
// not retried, else a *StatusError kept for draining, marked as the
// transport marks one.
func (h *hedgedCall) answer(ctx context.Context, resp *http.Response, timer *attemptTimer) (*hedged, error) {
	retried, refused := h.c.t.retried(resp)
	if !retried {
		timer.stop()
		return &hedged{resp}, nil
	}
	if !refused {
		h.c.reportMarked(ctx, resp)
	}
	se := &StatusError{StatusCode: resp.StatusCode, resp: resp, timer: timer}
	h.mu.Lock()
	h.status = append(h.status, se)
	h.mu.Unlock()
	if refused {
		return nil, retry.PermanentFailure(se)
	}
	if wait, ok := h.c.t.waitAsked(resp); ok {
		return nil, retry.After(se, wait)
	}
	return nil, se
}

// splitHedging returns opts without retry.WithHedging, for the loop of the
// requests that do not hedge, and opts themselves when they hold it, for
// the hedged requests' loop (nil when they do not).
func splitHedging(opts []retry.Option) (plain, hedging []retry.Option) {
	i := slices.IndexFunc(opts, retry.Option.IsHedging)
	if i < 0 {
		return opts, nil
	}
	return slices.Delete(slices.Clone(opts), i, i+1), opts
}

// waitAsked returns the wait a retried response asks: the server signals'
// (WaitAsked), or Retry-After alone under WithoutServerSignals.
func (t *Transport) waitAsked(resp *http.Response) (time.Duration, bool) {
	if t.signals {
		return WaitAsked(resp.Header, time.Now())
	}
	return ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
}
