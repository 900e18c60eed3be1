package retryhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/retrypolicy/retrypolicy/retry"
)

// An attempt's request is sent under the caller's context when nothing
// needs to end it sooner, and under a context of its own (ownCtx) when
// something does: the attempt's timeout (retry.WithAttemptTimeout), the
// loop's budget refusing a hidden resend (a watch stops the attempt), a
// hedged call's loop cancelling the attempt as a loser; and, once the
// response is handed to the caller, the closing of its body. One
// cancellable context serves them all, so that an attempt pays for one
// at most, and one copy of the request.

// request returns the request of the call's attempt n, whose loop
// context is actx, what can end its context (nil when nothing needs to),
// and its watch of hidden resends (nil when the transport does not
// watch): the caller's request the first time, unless it needs a context
// of its own or the call's values (a start hook's span); a copy after,
// its body rewound. An attempt of a hedged call gives into, where its
// own context is made (a loser's context ends when the loop cancels it).
func (c *call) request(actx context.Context, n int, into *ownCtx) (*http.Request, *ownCtx, *watch, error) {
	ctx, own, w := c.sendContext(actx, n, into)
	req := c.req
	if ctx != req.Context() {
		req = req.WithContext(ctx) // a shallow copy, as a transport's own retry makes
	}
	if n == 1 || req.Body == nil || req.Body == http.NoBody {
		return req, own, w, nil
	}
	body, err := c.req.GetBody()
	if err != nil {
		w.done()
		own.end()
		return nil, nil, nil, errors.New("retryhttp: rewinding the request body: " + err.Error())
	}
	req.Body = body
	return req, own, w, nil
}

// sendContext returns the context attempt n is sent under, what can end
// it and its watch, as request says.
func (c *call) sendContext(actx context.Context, n int, into *ownCtx) (context.Context, *ownCtx, *watch) {
	ctx := c.req.Context()
	if c.t.started || n > 1 || into != nil {
		// The call's values: a span a start hook opened, and a hedged
		// call's mark (retry.InHedge), so that no layer below hedges.
		ctx = retry.CallContext(actx)
	}
	if n > 1 {
		ctx = context.WithValue(ctx, attemptKey{}, n)
	}
	watched := c.t.watched()
	mayRefuse := watched && retry.WatchHidden(actx) // a resend may have to be stopped
	var own *ownCtx
	if c.timeout > 0 || into != nil || mayRefuse {
		if own = into; own == nil {
			own = &ownCtx{}
		}
		ctx = c.own(ctx, own)
		if into != nil {
			retry.OnLoss(actx, own.cancel)
		}
	}
	if !watched {
		return ctx, own, nil
	}
	ctx, w := watchAttempt(actx, ctx, own)
	return ctx, own, w
}

// own returns a context of its own under ctx for an attempt, which o
// ends: its timeout, when the loop has one.
func (c *call) own(ctx context.Context, o *ownCtx) context.Context {
	ctx, cancel := context.WithCancelCause(ctx)
	o.cancel, o.after = cancel, c.timeout
	if c.timeout > 0 {
		o.timer = time.AfterFunc(c.timeout, func() { cancel(errAttemptTimeout) })
	}
	return ctx
}

// errAttemptTimeout is the cause of an attempt's context that timed out.
var errAttemptTimeout = errors.New("retryhttp: attempt timed out")

// ownCtx ends the context of its own an attempt's request is sent under.
// A nil *ownCtx is an attempt sent under the caller's context.
type ownCtx struct {
	timer  *time.Timer // the attempt's timeout, nil for none
	cancel context.CancelCauseFunc
	after  time.Duration // the timeout
	closer cancelOnClose // the body closeWith hands the caller, made with the context
}

// end ends the attempt's context, and reports whether its timer had
// fired.
func (o *ownCtx) end() bool {
	if o == nil {
		return false
	}
	fired := o.timer != nil && !o.timer.Stop()
	o.cancel(nil)
	return fired
}

// stop stops the timer, for a response handed to the caller: its context
// then ends when the body is closed.
func (o *ownCtx) stop() {
	if o != nil && o.timer != nil {
		o.timer.Stop()
	}
}

// closeWith makes closing resp's body end the attempt's context.
func (o *ownCtx) closeWith(resp *http.Response) {
	switch resp.Body.(type) {
	case nil:
	case io.ReadWriteCloser:
		resp.Body = closeCancels(resp.Body, o.cancel)
	default:
		o.closer = cancelOnClose{resp.Body, o.cancel}
		resp.Body = &o.closer
	}
}

// closeCancels returns body, whose Close then also calls cancel. A body
// that is also a writer (a protocol switch's connection) stays one.
func closeCancels(body io.ReadCloser, cancel context.CancelCauseFunc) io.ReadCloser {
	if rw, ok := body.(io.ReadWriteCloser); ok {
		return &cancelOnCloseRW{rw, cancel}
	}
	return &cancelOnClose{body, cancel}
}

// cancelOnClose is a response body whose Close ends a context.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel(nil)
	return err
}

// cancelOnCloseRW is cancelOnClose for a body that is also a writer.
type cancelOnCloseRW struct {
	io.ReadWriteCloser
	cancel context.CancelCauseFunc
}

func (b *cancelOnCloseRW) Close() error {
	err := b.ReadWriteCloser.Close()
	b.cancel(nil)
	return err
}

// timeoutError is an attempt that took longer than retry.WithAttemptTimeout. It
// does not unwrap to the transport's error, which is the attempt context's
// cancellation: Retry never retries a context.Canceled.
type timeoutError struct {
	after time.Duration
	err   error
}

func (e *timeoutError) Error() string {
	return "retryhttp: attempt timed out after " + e.after.String() + ": " + e.err.Error()
}

// Timeout reports true: the attempt timed out.
func (e *timeoutError) Timeout() bool { return true }

// Temporary reports true, as net.Error's timeouts do.
func (e *timeoutError) Temporary() bool { return true }
