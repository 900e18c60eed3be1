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

// hedged is an attempt of a hedged request: the context of its own it is
// sent under, and its response, which the caller may get (a loser's is
// closed by the loop). One object for both.
type hedged struct {
	own  ownCtx
	resp *http.Response
}

// Close drains the loser's body to DrainLimit and closes it, which ends
// its attempt's context.
func (h *hedged) Close() error {
	drain(h.resp.Body)
	return h.resp.Body.Close()
}

// hedgedCall is one hedged request: its attempts run at once. Calls are
// pooled, their operation bound once: the loop waits for every attempt
// before Hedge returns, so nothing holds a call after.
type hedgedCall struct {
	c      call // a copy, so that the transport's stays on its stack
	op     func(context.Context) (*hedged, error)
	sent   atomic.Int32
	mu     sync.Mutex
	status []*StatusError // the retried responses, drained but the one handed over
}

var hedgedCalls = sync.Pool{New: func() any {
	h := &hedgedCall{}
	h.op = h.attempt
	return h
}}

// roundTripHedged sends c's request as a hedged call under ctx, the
// request's context (with its Cancel channel), and returns what RoundTrip
// returns. It takes c by value, so that an unhedged request's stays on
// the stack.
func roundTripHedged(ctx context.Context, c call) (*http.Response, error) {
	h := hedgedCalls.Get().(*hedgedCall)
	h.c = c
	won, err := c.t.hedgeLoopOf(c.req).Hedge(ctx, h.op)
	defer h.release() // after the hand-over, which takes its response out of the ones discarded
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

// release drains and closes the retried responses not handed over (the
// one the caller gets has none left), and puts the call back in the pool.
func (h *hedgedCall) release() {
	for i, se := range h.status {
		se.discard()
		h.status[i] = nil
	}
	h.c, h.status = call{}, h.status[:0]
	h.sent.Store(0)
	hedgedCalls.Put(h)
}

// attempt sends the request once, under a context of its own that the
// loop's cancelling of the attempt (a loser) ends, and that closing the
// response's body ends for the winner.
func (h *hedgedCall) attempt(ctx context.Context) (*hedged, error) {
	c := &h.c
	if c.canceled() {
		return nil, errRequestCanceled
	}
	hd := &hedged{}
	req, own, w, err := c.request(ctx, int(h.sent.Add(1)), &hd.own)
	if err != nil {
		return nil, retry.Permanent(err)
	}
	resp, err := c.t.base.RoundTrip(req)
	if err != nil {
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		return nil, c.failed(ctx, stoppedError(w.done(), err), own)
	}
	w.done()
	own.closeWith(resp)
	hd.resp = resp
	return h.answer(ctx, hd)
}

// answer returns what the loop is told of resp: the response when it is
// not retried, else a *StatusError kept for draining, marked as the
// transport marks one.
func (h *hedgedCall) answer(ctx context.Context, hd *hedged) (*hedged, error) {
	resp, own := hd.resp, &hd.own
	retried, refused := h.c.t.retried(resp)
	if !retried {
		own.stop()
		return hd, nil
	}
	if !refused {
		h.c.reportMarked(ctx, resp)
	}
	se := &StatusError{StatusCode: resp.StatusCode, resp: resp, own: own}
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
