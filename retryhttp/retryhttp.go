// Package retryhttp retries HTTP requests under a [retrypolicy.Strategy]:
// a [http.RoundTripper] that a worker puts in its [http.Client] and
// forgets.
//
//	t, err := retryhttp.NewTransport(nil, strategy) // nil: http.DefaultTransport
//	if err != nil {
//		return err // the strategy or an option is invalid
//	}
//	client := &http.Client{Transport: t, Timeout: 30 * time.Second}
//
// Each request is a loop of package retry of its own: the same decisions,
// sliding window, uptime credit (the time an attempt took before it
// failed), jitter, budget and observer, and the same [retry.GiveUpError]
// reasons. The transport takes the loop's own options (retry.WithBudget,
// retry.WithObserver, retry.WithEnd, retry.WithWaitLimit, ...) beside its
// own: one kind of option, [retry.Option], for every part of the library.
// What HTTP adds:
//
//   - Only transient failures are retried ([Transient], replaceable with
//     [WithClassifier]).
//   - Only safe requests are retried: an idempotent method (GET, HEAD,
//     OPTIONS, TRACE, PUT, DELETE), or a request with an Idempotency-Key
//     (or X-Idempotency-Key) header that is not blank, whose body is empty or can be rewound
//     through [http.Request.GetBody]. Sending a POST twice may do its work
//     twice, and a body already read cannot be sent again; such a request
//     is sent once, whatever its outcome. [http.NewRequest] sets GetBody
//     for the bodies it knows ([bytes.Reader], [strings.Reader],
//     [bytes.Buffer]).
//   - A server's word is kept ([WaitAsked], [WithoutServerSignals]): a wait
//     it asks for on a retryable status (Retry-After-Ms, X-Ms-Retry-After-Ms,
//     Retry-After) makes the next wait at least that long, never shorter. A
//     wait beyond the transport's limit ([retry.WithWaitLimit]; by default
//     retry.WaitLimit's: the backoff's longest delay, a fixed backoff's
//     delay, but at least a minute, or an hour without a cap) is not made:
//     the transport returns the response as received, giving up with the
//     reason RetryAfterTooLong and the wait (see [retry.WithEnd]), so that a
//     server cannot park a worker and is never called sooner than it asked.
//     X-Should-Retry: false and X-Envoy-Overloaded make a response not
//     retried (NotRetryable); X-Should-Retry: true makes a safe request's
//     response of status 400 or more retried, whatever the classifier says.
//   - The body of a response that is retried is read, up to [DrainLimit]
//     bytes, and closed, so that its connection is reused; the caller never
//     sees it.
//
// What the caller gets: the first response that is not retried, unread;
// when the transport gives up on a retryable status (its strategy's fatal
// decision, a spent budget, a retry due past the request's deadline, a
// wait asked beyond its limit, a server's refusal), the last response,
// unread, as a RoundTripper answers statuses rather than
// turning them into errors. Otherwise a *retry.GiveUpError with the
// reason, which unwraps to the last attempt's error. The request's context
// ends a wait at once, and a retry due after its deadline is not waited
// for; so does its Cancel channel, which an [http.Client] with a Timeout
// closes on a timer of its own: once either is done no attempt is sent,
// and the transport gives up as ContextDone.
//
// # Retrying at one layer
//
// Retries multiply across layers, so the transport retries at one: each
// request is a layer of retry.Do, under whatever loop of this library
// sent it. A transport that gives up after retrying reports to the
// attempt its request's context belongs to, and [Handler], on the server,
// marks a response with [RetriedBelowHeader] when the request was retried
// below; a transport returns such a response as received, without
// retrying it. [retry.WithNestedRetries] turns this off for a transport. Inside
// a queue's job (see retry.DeferAfter), a wait longer than the queue
// adapter's threshold is not made: the transport returns a
// *retry.GiveUpError with the reason Deferred and the wait, and the job
// runs again after it.
//
// # A budget per host
//
// A transport gives each host a retry budget of its own by default
// ([retry.DefaultBudget]), or one [WithHostBudgets] makes, unless it is given
// one budget for every request (retry.WithBudget) or told to take none
// (retry.WithoutBudget). Its host table keys a server by the request
// URL's scheme, its host in lower case ASCII without a trailing dot, and
// its port as a number with the scheme's default filled in, so that one
// server however spelled ("HTTP://Example.COM.:0080") has one budget. The
// budget's constructor is called once as the transport is made, for the
// overflow budget (an error refuses the transport), and again for each new
// host; a later error makes that host share the overflow budget, and is
// told to the transport's observers (an Event of no failure whose Err is a
// [*HostBudgetError]). The table holds at most [MaxHosts] hosts: a new one
// beyond them takes the place of a host whose budget is full, and shares
// the overflow budget when none is, so that a host's drained budget is
// never forgotten (a chain of redirects to new names cannot launder it)
// and a crowd of new names cannot take the budgets of the hosts in use.
//
// [WithHostThrottles] gives each host, in the same table, a client-side
// throttle of its own (off by default): a request it rejects is not sent,
// and the transport gives up with the reason Throttled. An entry is
// evicted only when its budget is full and its throttle rejects nothing.
//
// Over net/http's [http.Transport], each attempt is watched for the
// resends net/http makes on its own (a replay on a new connection when a
// reused one proves dead; an HTTP/2 stream sent again after a
// REFUSED_STREAM or a GOAWAY): each is told to the observers
// (retry.Event.Hidden) and counted (retry.End.HiddenResends), an
// attempt's first is free, and each later one withdraws from the budget
// and is stopped before it is written when the budget refuses; see
// retry.HiddenResend. The caller's own httptrace still fires. Hedged
// requests' attempts are watched as every other.
//
// An attempt is sent under the caller's context unless something may
// have to end it early: the loop's budget may refuse a hidden resend,
// the loop has an attempt timeout, or the request is hedged. It is then
// sent under one context of its own, which each of these ends, and
// which, for the response handed to the caller, closing its body ends.
//
// # Hedged requests
//
// A transport built with retry.WithHedging hedges the requests it may
// send more than once at a time: GET, HEAD, OPTIONS and TRACE, and a
// request whose context HedgeRequest made (it must still be safe to send
// again: an idempotent method or an idempotency key, and a body that is
// empty or rewound through GetBody). A second DELETE may answer 404 and a
// second request under one idempotency key may answer 409 while the first
// runs, so no other request hedges unless its caller says so. Every other
// request is retried as before, as if the option were not given.
//
// Each attempt is sent under a context of its own, cancelled when another
// attempt won (a loser, see retry.OnLoss), or, for the winner, when the
// caller closes its response's body. A loser's response body is read up to DrainLimit bytes
// and closed, and so is every retried response's but the one handed to
// the caller; the transport returns once every attempt has. A host's
// following delay (retry.Hedging.Quantile) follows that host's latencies:
// the host table keeps them beside its budget (a transport given one
// budget for every request, or none, keeps one set for all its hosts).
//
// A strategy that never gives up (unless_stopped, the default) retries
// until the request's context ends: give requests a deadline
// ([http.Client.Timeout] does) or use a bounded strategy.
package retryhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
)

// DrainLimit is the most bytes of a retried response's body the transport
// reads before closing it: a body that is longer costs its connection
// rather than the time to read it.
const DrainLimit = 64 << 10

// MaxHosts is the most hosts that get a budget of their own, by default
// or under [WithHostBudgets]; a new host beyond it takes the place of one
// whose budget is full, or else shares the transport's overflow budget.
const MaxHosts = 1024

// Transport is an [http.RoundTripper] that retries what its strategy,
// its classifier and the request allow. Make one with [NewTransport]. It is
// safe for concurrent use by multiple goroutines, as its base transport
// must be.
type Transport struct {
	base      http.RoundTripper
	transient func(*http.Response, error) bool
	loop      *retry.Loop[*http.Response] // every request's, unless per host
	hosts     *hostTable                  // each host's budget; nil when the options name a budget
	hedgeLoop *retry.Loop[*hedged]        // the hedged requests', nil unless retry.WithHedging
	signals   bool                        // the headers of other stacks are read
	started   bool                        // the loop has a start hook (retry.WithStart)
}

// config is what the transport's own options set.
type config struct {
	transient    func(*http.Response, error) bool
	noSignals    bool
	hostBudget   func() (*retry.Budget, error)   // makes a host's budget, nil unless per host
	hostThrottle func() (*retry.Throttle, error) // makes a host's throttle, nil for none
	err          string                          // the first option that is invalid, and why
}

// The transport's settings, each of one value.
var (
	withoutServerSignals = retry.NewAdapterSetting[config]("retryhttp.WithoutServerSignals")
	withClassifier       = retry.NewAdapterSetting[config]("retryhttp.WithClassifier")
	withHostBudgets      = retry.NewAdapterSetting[config]("retryhttp.WithHostBudgets")
)

// refuse records that the option named name is invalid, unless an earlier
// one was.
func (c *config) refuse(name, why string) {
	if c.err == "" {
		c.err = "retryhttp." + name + ": " + why
	}
}

// WithoutServerSignals makes the transport read Retry-After alone: not
// Retry-After-Ms, X-Ms-Retry-After-Ms, X-Should-Retry or
// X-Envoy-Overloaded. A wait Retry-After asks is still never cut short.
func WithoutServerSignals() retry.Option {
	return withoutServerSignals.Option(func(c *config) { c.noSignals = true })
}

// WithClassifier replaces [Transient]: transient reports whether an
// attempt's outcome (a response, or the base transport's error) may be
// retried. It may call Transient for what it does not decide itself. The
// servers' signals (X-Should-Retry and the others, see
// [WithoutServerSignals]) still apply.
func WithClassifier(transient func(resp *http.Response, err error) bool) retry.Option {
	return withClassifier.Option(func(c *config) {
		if transient == nil {
			c.refuse("WithClassifier", "the function is nil")
		}
		c.transient = transient
	})
}

// WithHostBudgets gives each host a retry budget of its own made by
// newBudget (a closure over retry.NewBudget or retry.NewWindowBudget), in
// place of the default's: a host that fails does not spend the retries of
// the others. The host table is the package doc's. NewTransport calls
// newBudget once, for the overflow budget, and refuses the transport when
// it fails; then once per new host. It conflicts with retry.WithBudget and
// retry.WithoutBudget.
func WithHostBudgets(newBudget func() (*retry.Budget, error)) retry.Option {
	return withHostBudgets.Option(func(c *config) {
		if newBudget == nil {
			c.refuse("WithHostBudgets", "the function is nil")
			return
		}
		c.hostBudget = newBudget
	})
}

// Attempt returns which attempt of a request ctx is the context of, from
// 1: a transport or instrumentation under the Transport reads it (as the
// resend count, Attempt - 1). It is 1 for a context the Transport did not
// make.
func Attempt(ctx context.Context) int {
	if n, ok := ctx.Value(attemptKey{}).(int); ok {
		return n
	}
	return 1
}

// attemptKey is the context key of Attempt.
type attemptKey struct{}

// NewTransport returns a Transport that sends requests through base (nil:
// [http.DefaultTransport]) and retries them under s. It takes the loop's
// options (retry.WithBudget, retry.WithObserver, retry.WithEnd,
// retry.WithWaitLimit, retry.WithFullJitter, retry.WithNestedRetries,
// retry.WithAttemptTimeout, retry.WithHedging, ..., and otelretry's)
// beside its own (WithClassifier, WithoutServerSignals, WithHostBudgets,
// WithHostThrottles). It returns the
// strategy's *retrypolicy.ValidationError when s is invalid, and an error
// naming the option when an option is invalid, is another adapter's,
// gives a setting of one value twice, or conflicts with another (naming
// both), or when the hosts' budget constructor fails.
func NewTransport(base http.RoundTripper, s retrypolicy.Strategy, opts ...retry.Option) (*Transport, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	var c config
	loopOpts, err := retry.ApplyAdapterOptions(&c, opts)
	if err != nil {
		return nil, errors.New("retryhttp: " + err.Error())
	}
	if err := c.check(loopOpts); err != nil {
		return nil, err
	}
	if base == nil {
		base = http.DefaultTransport
	}
	t := &Transport{base: base, transient: c.transient, signals: !c.noSignals}
	t.started = slices.ContainsFunc(loopOpts, retry.Option.IsStart)
	if t.transient == nil {
		t.transient = Transient
	}
	// The transport's observer drains a retried response before the
	// caller's observers see the event.
	loopOpts = append([]retry.Option{retry.WithObserver(t.onRetry)}, loopOpts...)
	loopOpts, hedgeOpts := splitHedging(loopOpts)
	if t.loop, err = retry.New[*http.Response](s, loopOpts...); err != nil {
		return nil, errors.New("retryhttp: " + err.Error())
	}
	if hedgeOpts != nil {
		if t.hedgeLoop, err = retry.New[*hedged](s, hedgeOpts...); err != nil {
			return nil, errors.New("retryhttp: " + err.Error())
		}
	}
	if t.hosts, err = c.hostTable(t, loopOpts); err != nil {
		return nil, err
	}
	return t, nil
}

// hostTable returns t's table of hosts (nil when it keeps no budget or
// throttle per host): each host's budget is c.hostBudget's, or by default
// retry.DefaultBudget unless loopOpts name a budget for every request or
// none.
func (c *config) hostTable(t *Transport, loopOpts []retry.Option) (*hostTable, error) {
	named := "retryhttp.WithHostBudgets" // what made the hosts' budgets, for an error
	if c.hostBudget == nil {
		named = "the default host budget"
	}
	if c.hostBudget == nil && !slices.ContainsFunc(loopOpts, retry.Option.NamesBudget) {
		// Each host's budget unless given one or told to take none: one
		// that only calls that end well refill, so that retrying a host
		// stops when most of its calls fail.
		c.hostBudget = func() (*retry.Budget, error) { return retry.DefaultBudget(), nil }
	}
	if c.hostBudget == nil && c.hostThrottle == nil {
		return nil, nil
	}
	h, err := newHostTable(&hostTable{newBudget: c.hostBudget, newThrottle: c.hostThrottle, shared: t.loop, hedge: t.hedgeLoop})
	if err != nil {
		if _, ok := err.(*throttleError); ok {
			named = "retryhttp.WithHostThrottles"
		}
		return nil, errors.New("retryhttp: " + named + ": " + err.Error())
	}
	return h, nil
}

// check returns the error of the first option that is invalid, or that
// conflicts with one of the loop's, loopOpts.
func (c *config) check(loopOpts []retry.Option) error {
	if c.err != "" {
		return errors.New("retryhttp: " + c.err)
	}
	if err := checkThrottles(loopOpts); err != nil {
		return err
	}
	if c.hostBudget == nil {
		return nil
	}
	if i := slices.IndexFunc(loopOpts, retry.Option.NamesBudget); i >= 0 {
		return errors.New("retryhttp: retryhttp.WithHostBudgets and " + loopOpts[i].Name() + ": choose one")
	}
	return nil
}

// RoundTrip sends req, and again while its outcome is transient, the
// request is safe to send again and the strategy retries; see the package
// doc for what it returns. It closes req's body, as a RoundTripper must.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	loop := t.loop
	if t.hosts != nil {
		loop = t.hosts.loop(req)
	}
	c := call{t: t, req: req, resend: replayable(req), timeout: loop.AttemptTimeout()}
	ctx := req.Context()
	var f *following
	//lint:ignore SA1019 an http.Client with a Timeout still sets it for a transport it does not know
	if req.Cancel != nil {
		ctx, f = c.followCancel(ctx)
		defer f.end()
	}
	var resp *http.Response
	var err error
	if t.hedges(req) {
		resp, err = roundTripHedged(ctx, c)
	} else {
		resp, err = c.roundTrip(ctx, loop)
	}
	f.keep(resp)
	return resp, err
}

// roundTrip runs the loop of an unhedged request under ctx.
func (c *call) roundTrip(ctx context.Context, loop *retry.Loop[*http.Response]) (*http.Response, error) {
	resp, err := loop.Do(ctx, c.attempt)
	if err == nil {
		return resp, nil
	}
	if c.sent == 0 && c.req.Body != nil {
		c.req.Body.Close() // the context ended before the first attempt
	}
	var gu *retry.GiveUpError
	var se *StatusError
	if errors.As(err, &se) && se.resp != nil {
		// A deferred wait is the durable layer's to make: the caller gets
		// the *GiveUpError that carries it, not the response.
		if errors.As(err, &gu) && gu.Reason != retry.ContextDone && gu.Reason != retry.Deferred {
			return se.handOver(), nil
		}
		se.discard()
	}
	return nil, err
}

// followCancel returns ctx under a context that the request's Cancel
// channel ends, and what ends it. An http.Client with a Timeout cancels a
// request to a transport it does not know through req.Cancel as well as
// its context, each on a timer of its own: the loop ends on whichever
// comes first, before it calls for another attempt.
func (c *call) followCancel(ctx context.Context) (context.Context, *following) {
	ctx, cancel := context.WithCancelCause(ctx)
	c.cancel = cancel
	f := &following{cancel: cancel, stop: make(chan struct{})}
	//lint:ignore SA1019 as in RoundTrip
	canceled, stop := c.req.Cancel, f.stop
	go func() { // it captures no part of c, which stays on the stack
		select {
		case <-canceled:
			cancel(errRequestCanceled)
		case <-stop:
		}
	}()
	return ctx, f
}

// following is the context followCancel made, and its goroutine.
type following struct {
	cancel context.CancelCauseFunc
	stop   chan struct{}
	kept   bool // a response's body ends the context as it is closed
}

// keep makes the body of resp, the response RoundTrip returns, end the
// context as the caller closes it: an attempt after the first, or a
// hedged one, was sent under it, and its body is read after RoundTrip
// returns. A nil f follows nothing.
func (f *following) keep(resp *http.Response) {
	if f == nil || resp == nil || resp.Body == nil || resp.Body == http.NoBody {
		return
	}
	resp.Body = closeCancels(resp.Body, f.cancel)
	f.kept = true
}

// end ends the goroutine as RoundTrip returns, however it returns, and
// the context unless a response's body keeps it.
func (f *following) end() {
	close(f.stop)
	if !f.kept {
		f.cancel(nil)
	}
}

// CloseIdleConnections closes the base transport's idle connections, when
// it has such a method.
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// onRetry drains a retried response, before the caller's observers see
// the retry.
func (t *Transport) onRetry(e retry.Event) {
	if se, ok := errors.AsType[*StatusError](e.Err); ok && !e.Hedge { // no target to escape; a hedged call drains its own
		se.discard()
	}
}

// StatusError is a retryable status as [retry.Do] sees it: the
// Err of the events [retry.WithObserver] observes, and of a GiveUpError whose
// request's context ended.
type StatusError struct {
	// StatusCode is the response's status code.
	StatusCode int
	resp       *http.Response // until it is handed over or discarded
	own        *ownCtx        // the attempt's own context, if any
}

// Error says the status, as "retryhttp: HTTP 503".
func (e *StatusError) Error() string { return "retryhttp: HTTP " + strconv.Itoa(e.StatusCode) }

// handOver returns the response for the caller, its attempt's timer
// stopped.
func (e *StatusError) handOver() *http.Response {
	e.own.stop()
	resp := e.resp
	e.resp = nil
	return resp
}

// discard reads the response's body up to DrainLimit and closes it, then
// stops its attempt's timer: the drain is part of the attempt, so a body
// that stalls ends when the attempt's timeout does.
func (e *StatusError) discard() {
	if e.resp == nil {
		return
	}
	body := e.resp.Body
	e.resp = nil
	drain(body)
	body.Close()
	e.own.stop()
}

// drainBuffers are the buffers drain reads into, so that draining a
// response allocates nothing.
var drainBuffers = sync.Pool{New: func() any { b := make([]byte, 8<<10); return &b }}

// drain reads up to DrainLimit bytes of body, and no more, so that its
// connection can be reused.
func drain(body io.Reader) {
	buf := drainBuffers.Get().(*[]byte)
	for left, idle := DrainLimit, 0; left > 0 && idle < 100; {
		n, err := body.Read((*buf)[:min(left, len(*buf))])
		left -= n
		if err != nil {
			break
		}
		if n == 0 {
			idle++ // a reader that returns nothing for ever is given up on
		}
	}
	drainBuffers.Put(buf)
}

// call is one request's retry loop.
type call struct {
	t       *Transport
	req     *http.Request
	resend  bool                    // the request may be sent again
	timeout time.Duration           // each attempt's (retry.WithAttemptTimeout), 0 for none
	sent    int                     // attempts sent
	cancel  context.CancelCauseFunc // ends the loop's context, when req has a Cancel channel
}

// errRequestCanceled is the cause of a loop that ended because its
// request's Cancel channel closed.
var errRequestCanceled = errors.New("retryhttp: the request was canceled")

// canceled reports whether the request's Cancel channel has closed, and
// then ends the loop's context, so that the loop gives up as ContextDone
// rather than send another attempt.
func (c *call) canceled() bool {
	if c.cancel == nil {
		return false
	}
	select {
	//lint:ignore SA1019 as in RoundTrip
	case <-c.req.Cancel:
		c.cancel(errRequestCanceled)
		return true
	default:
		return false
	}
}

// attempt sends the request once: the caller's request the first time, a
// copy with the body rewound after. It returns a response that is not
// retried; a *StatusError (with Retry-After's wait) for one that may be;
// the base transport's error, marked Permanent when it must not be.
func (c *call) attempt(ctx context.Context) (*http.Response, error) {
	if c.canceled() {
		return nil, errRequestCanceled
	}
	c.sent++
	req, own, w, err := c.request(ctx, c.sent, nil)
	if err != nil {
		return nil, retry.Permanent(err)
	}
	resp, err := c.t.base.RoundTrip(req)
	if err != nil {
		if resp != nil && resp.Body != nil {
			resp.Body.Close() // a transport's error and a response both: the error is the outcome
		}
		return nil, c.failed(ctx, stoppedError(w.done(), err), own)
	}
	w.done()
	if own != nil {
		own.closeWith(resp)
	}
	retried, refused := c.t.retried(resp)
	if !retried {
		own.stop()
		return resp, nil // an answer: the call ended well
	}
	if !refused {
		c.reportMarked(ctx, resp) // whether or not this request may be sent again
	}
	se := &StatusError{StatusCode: resp.StatusCode, resp: resp, own: own}
	if refused || !c.resend {
		// Not retried (the server refused, or the request may not be
		// sent again), yet a failure: handed over as received, the call
		// ending badly for a budget.
		return nil, retry.PermanentFailure(se)
	}
	if wait, ok := c.t.waitAsked(resp); ok {
		return nil, retry.After(se, wait)
	}
	return nil, se
}

// reportMarked reports resp, a response the transport would retry, when
// it is marked retried below, in the server: the attempt is not retried
// (Do gives up RetriedBelow), and the layer above hears of it.
func (c *call) reportMarked(ctx context.Context, resp *http.Response) {
	if resp.Header.Get(RetriedBelowHeader) != "" {
		retry.Report(ctx)
		retry.Report(c.req.Context())
	}
}

// retried reports whether resp is a failure the transport would retry
// were its request safe to send again, and whether its server refused
// that retry (X-Should-Retry: false, X-Envoy-Overloaded): X-Should-Retry:
// true makes a status of 400 or more retried that the classifier would
// not retry.
func (t *Transport) retried(resp *http.Response) (retried, refused bool) {
	retried = t.transient(resp, nil)
	if !t.signals {
		return retried, false
	}
	switch says(resp.Header) {
	case saysNo:
		return retried, retried
	case saysYes:
		return retried || resp.StatusCode >= 400, false
	}
	return retried, false
}

// failed returns what the loop is told of an attempt whose base transport
// failed with err: err, a timeout when the attempt's own timer ended it,
// marked Permanent when the request must not be sent again.
func (c *call) failed(ctx context.Context, err error, own *ownCtx) error {
	if own != nil && own.end() && retry.CallContext(ctx).Err() == nil {
		err = &timeoutError{own.after, err}
	}
	if c.canceled() {
		return err // the loop's context is done: it gives up as ContextDone
	}
	switch {
	case !errors.Is(err, retry.ErrResendRefused) && !c.t.transient(nil, err):
		return retry.Permanent(err)
	case !c.resend:
		return retry.PermanentFailure(err) // transient, but the request may not be sent again
	}
	return err
}

// replayable reports whether req may be sent more than once: an idempotent
// method or an idempotency key, and a body that is empty or rewindable.
func replayable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return hasValue(req.Header["Idempotency-Key"]) || hasValue(req.Header["X-Idempotency-Key"])
}

// hasValue reports whether a header's values hold one that is not blank:
// a key set to "" is no key.
func hasValue(values []string) bool {
	for _, v := range values {
		if strings.TrimSpace(v) != "" {
			return true
		}
	}
	return false
}
