package retryhttp

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptrace"
	"sync"

	"github.com/retrypolicy/retrypolicy/retry"
)

// Hidden resends: net/http's Transport sends a request again on its own
// within one RoundTrip, on a new connection when a reused one proves dead
// (HTTP/1.1), and up to 7 times on a GOAWAY or a REFUSED_STREAM (HTTP/2).
// A transport over net/http's composes a trace into each attempt's
// context (beside the caller's own trace, which still fires) and sees each
// connection the attempt asks for (GetConn) after it got one (GotConn):
// the start of a resend, told to the loop (retry.HiddenResend). An HTTP/2
// resend on a connection the pool hands over without asking is seen at its
// GotConn. When the loop's budget refuses a resend, the attempt is
// stopped: its context is cancelled before the resend is written (net/http
// checks it before it writes a request's headers, and before it waits for a
// connection), and an HTTP/1.1 connection got all the same is closed, so
// that nothing is written on it.

// watch is one attempt's trace of its connections. Watches are pooled:
// its hooks are made once, and its trace is never written after, since
// net/http may read it after the attempt returned (a PutIdleConn as the
// caller closes the body).
type watch struct {
	trace httptrace.ClientTrace // GetConn and GotConn, bound to the watch

	mu      sync.Mutex
	actx    context.Context // the attempt's, for the loop; nil once the attempt returned
	stop    context.CancelCauseFunc
	got     bool // the attempt got a connection
	asked   bool // a resend asked for a connection, and was told to the loop
	stopped bool // the loop's budget refused a resend
}

var watches = sync.Pool{New: func() any {
	w := &watch{}
	w.trace = httptrace.ClientTrace{GetConn: w.getConn, GotConn: w.gotConn}
	return w
}}

// watched reports whether the transport sees its attempts' hidden
// resends: its base is net/http's.
func (t *Transport) watched() bool {
	_, ok := t.base.(*http.Transport)
	return ok
}

// watchAttempt returns ctx, the context of the loop's attempt actx's
// request, under a trace of its watch, and the watch, which stops the
// attempt by ending own (nil when the loop cannot refuse a resend).
func watchAttempt(actx, ctx context.Context, own *ownCtx) (context.Context, *watch) {
	w := watches.Get().(*watch)
	w.mu.Lock()
	w.actx, w.stop = actx, nil
	if own != nil {
		w.stop = own.cancel
	}
	w.mu.Unlock()
	trace := &w.trace
	if httptrace.ContextClientTrace(ctx) != nil {
		// The caller's own trace: WithClientTrace composes it into the one
		// it is given, which is then the request's alone.
		trace = &httptrace.ClientTrace{GetConn: w.trace.GetConn, GotConn: w.trace.GotConn}
	}
	return httptrace.WithClientTrace(ctx, trace), w
}

// done ends the watch of an attempt that returned, and reports whether it
// was stopped.
func (w *watch) done() bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	stopped := w.stopped
	w.actx, w.stop, w.got, w.asked, w.stopped = nil, nil, false, false, false
	w.mu.Unlock()
	watches.Put(w)
	return stopped
}

// getConn is a connection asked for: after one was got, a resend (net/http
// may ask twice for one resend, its HTTP/1 half and then its HTTP/2 pool:
// the resend is told once, until it gets its connection).
func (w *watch) getConn(string) {
	w.mu.Lock()
	resend := w.actx != nil && w.got && !w.asked && !w.stopped
	if resend {
		w.asked = true
	}
	actx := w.actx
	w.mu.Unlock()
	if resend {
		w.resend(actx)
	}
}

// gotConn is a connection got: a resend when the attempt got one before
// and did not ask for this one; a connection of a stopped HTTP/1.1 resend
// is closed, so that nothing is written on it.
func (w *watch) gotConn(info httptrace.GotConnInfo) {
	w.mu.Lock()
	resend := w.actx != nil && w.got && !w.asked && !w.stopped
	actx := w.actx
	w.mu.Unlock()
	if resend {
		w.resend(actx)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.actx == nil {
		return
	}
	w.got, w.asked = true, false
	if w.stopped && info.Conn != nil && !http2(info) {
		info.Conn.Close()
	}
}

// resend tells the loop of a resend of the attempt actx, and stops the
// attempt when the loop's budget refuses it. It is called without w.mu,
// so that the loop's observers, which it calls, may take their time: the
// hooks of one attempt run one after another on its round trip.
func (w *watch) resend(actx context.Context) {
	if retry.HiddenResend(actx) {
		return
	}
	w.mu.Lock()
	stop := w.stop
	if w.actx != nil {
		w.stopped = true
	}
	w.mu.Unlock()
	if stop != nil {
		stop(retry.ErrResendRefused)
	}
}

// http2 reports whether a connection got is an HTTP/2 one, which other
// requests share: it is never closed for one of them.
func http2(info httptrace.GotConnInfo) bool {
	c, ok := info.Conn.(interface{ ConnectionState() tls.ConnectionState })
	return ok && c.ConnectionState().NegotiatedProtocol == "h2"
}

// stoppedError returns the error of an attempt that failed with err: when
// the loop's budget refused one of its resends and it was stopped, an
// error that unwraps to retry.ErrResendRefused alone, a transient failure
// whatever the classifier says of err (the cancellation that stopped it,
// which the loop would read as the caller's).
func stoppedError(stopped bool, err error) error {
	if stopped {
		return &resendStopped{err}
	}
	return err
}

// resendStopped is an attempt stopped at a resend its budget refused.
type resendStopped struct{ err error }

func (e *resendStopped) Error() string { return retry.ErrResendRefused.Error() + ": " + e.err.Error() }

// Unwrap returns retry.ErrResendRefused, not the cancellation.
func (e *resendStopped) Unwrap() error { return retry.ErrResendRefused }
