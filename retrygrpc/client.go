package retrygrpc

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
)

// client is what a client interceptor keeps: its loop and options.
type client struct {
	loop  *retry.Loop[struct{}] // every call's
	hedge *hedgeClient          // the hedged calls'

	cfg  config
	safe map[string]bool // WithSafeMethods' methods
}

// newClient validates s and opts.
func newClient(s retrypolicy.Strategy, opts []retry.Option) (*client, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	var cfg config
	loopOpts, err := retry.ApplyAdapterOptions(&cfg, opts)
	if err != nil {
		return nil, errors.New("retrygrpc: " + err.Error())
	}
	if cfg.err != "" {
		return nil, errors.New("retrygrpc: " + cfg.err)
	}
	if !cfg.setCodes {
		cfg.codes = []codes.Code{codes.Unavailable, codes.ResourceExhausted}
	}
	c := &client{cfg: cfg, safe: make(map[string]bool, len(cfg.safeMethods))}
	for _, m := range cfg.safeMethods {
		c.safe[m] = true
	}
	if !slices.ContainsFunc(loopOpts, retry.Option.NamesBudget) {
		// Shared by the calls unless given one or told to take none: a
		// budget that only calls that end well refill, so that retrying
		// stops when most calls fail.
		loopOpts = append(loopOpts, retry.WithBudget(retry.DefaultBudget()))
	}
	if c.hedge, err = newHedgeClient(s, loopOpts, cfg.hedgedMethods); err != nil {
		return nil, errors.New("retrygrpc: " + err.Error())
	}
	if c.loop, err = retry.New[struct{}](s, withoutHedging(loopOpts)...); err != nil {
		return nil, errors.New("retrygrpc: " + err.Error())
	}
	return c, nil
}

// UnaryClientInterceptor returns an interceptor that retries the safe
// unary calls under s; see the package doc for what it retries and
// returns. It takes the loop's options (retry.WithBudget,
// retry.WithObserver, retry.WithEnd, retry.WithWaitLimit,
// retry.WithNestedRetries, retry.WithAttemptTimeout, ..., and otelretry's)
// beside its own (WithCodes, WithSafeMethods, WithSafe). It returns the
// strategy's *retrypolicy.ValidationError when s is invalid, and an error
// naming the option when an option is invalid, another adapter's, a
// setting of one value given twice, or in conflict with another. A call's
// own CallOptions and Disable apply to it alone. Each call is named by its
// method (retry.CallName) for the loop's hooks. The interceptor is safe
// for concurrent use.
func UnaryClientInterceptor(s retrypolicy.Strategy, opts ...retry.Option) (grpc.UnaryClientInterceptor, error) {
	c, err := newClient(s, opts)
	if err != nil {
		return nil, err
	}
	if err := c.hedge.check(); err != nil {
		return nil, err
	}
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, callOpts ...grpc.CallOption) error {
		u := &unaryCall{c: c, loop: c.loop, ctx: retry.NamedContext{Context: ctx, Name: method}, req: req, reply: reply, cc: cc, invoker: invoker}
		if c.hedge.hedged(method, callOpts) {
			if hedged, err := c.runHedged(u, callOpts); hedged {
				return err
			}
		}
		own, rest := ownCallOptions(callOpts)
		if own.given {
			loop, err := own.apply(c.loop) // the call's own: no variable is shared between calls
			if err != nil {
				return err
			}
			u.loop = loop
		}
		u.once = own.disabled
		u.opts = gated(append(append(u.buf[:0], rest...), grpc.Trailer(&u.trailer)))
		return u.run()
	}, nil
}

// isSafe reports whether a call of method under ctx may be sent again.
func (c *client) isSafe(ctx context.Context, method string) bool {
	if c.safe[method] {
		return true
	}
	for _, f := range c.cfg.safe {
		if f(method) {
			return true
		}
	}
	for _, v := range metadata.ValueFromOutgoingContext(ctx, IdempotencyKey) {
		if strings.TrimSpace(v) != "" {
			return true
		}
	}
	return false
}

// run sends the call through the loop: once when it is not safe (or
// disabled), so that every call is counted, observed and reported alike.
func (u *unaryCall) run() error {
	u.once = u.once || !u.c.isSafe(&u.ctx, u.ctx.Name)
	_, err := u.loop.Do(&u.ctx, u.attempt)
	return given(err, u.sent)
}

// unaryCall is one unary call's retry loop.
type unaryCall struct {
	c          *client
	loop       *retry.Loop[struct{}] // the interceptor's, or the call's own
	once       bool                  // sent once: not safe, or disabled
	ctx        retry.NamedContext    // the call's, named by its method
	req, reply any
	cc         *grpc.ClientConn
	invoker    grpc.UnaryInvoker
	opts       []grpc.CallOption // the caller's, and the trailer's
	buf        [5]grpc.CallOption
	trailer    metadata.MD
	sent       int
}

// attempt sends the call once.
func (u *unaryCall) attempt(actx context.Context) (struct{}, error) {
	u.sent++
	u.trailer = nil
	// actx has the attempt's own deadline (retry.WithAttemptTimeout), which
	// gRPC sends the server.
	err := u.invoker(previous(actx, u.sent), u.ctx.Name, u.req, u.reply, u.cc, u.opts...)
	if err == nil {
		return struct{}{}, nil
	}
	err = u.c.classify(&u.ctx, outcome{actx: actx, err: err, trailer: u.trailer, timedOut: actx.Err() != nil})
	if u.once && !retry.IsPermanent(err) {
		// A failure that would be retried, sent once: reported above if
		// marked, never sent again, and no good end for a budget.
		return struct{}{}, retry.PermanentFailure(err)
	}
	return struct{}{}, err
}

// previous returns ctx with the count of attempts before attempt n in its
// outgoing metadata, after the first.
func previous(ctx context.Context, n int) context.Context {
	if n > 1 {
		ctx = metadata.AppendToOutgoingContext(ctx, PreviousAttemptsHeader, strconv.Itoa(n-1))
	}
	return ctx
}

// streamContext returns the context of a stream's attempt n, timed out
// after d, under actx's call: the stream goes on past the attempt that delivered its first
// message, whose context the loop cancels as it returns. It has a context
// of its own, so that a stream given up on is closed at once, and a timer
// for its first message under retry.WithAttemptTimeout, which stops once
// the message arrives, the stream going on under the call's deadline.
func streamContext(actx context.Context, n int, d time.Duration) (context.Context, attemptTimer) {
	octx, cancel := context.WithCancelCause(previous(retry.CallContext(actx), n))
	t := attemptTimer{ctx: octx, cancel: cancel}
	if d > 0 {
		t.timer = time.AfterFunc(d, func() { cancel(errAttemptTimeout) })
	}
	return octx, t
}

// errAttemptTimeout is the cause of a stream's attempt's context ended by
// retry.WithAttemptTimeout before its first message.
var errAttemptTimeout = errors.New("retrygrpc: attempt timed out")

// attemptTimer is a stream's attempt's context, bounded until its first
// message under retry.WithAttemptTimeout; the zero attemptTimer is none.
type attemptTimer struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer // until the first message; nil without a timeout
}

// end ends the attempt's context, and reports whether its timeout ended
// it (rather than the call's context).
func (t attemptTimer) end() bool {
	if t.cancel == nil {
		return false
	}
	if t.timer != nil {
		t.timer.Stop()
	}
	fired := errors.Is(context.Cause(t.ctx), errAttemptTimeout)
	t.cancel(nil)
	return fired
}

// stop stops a stream's timer and leaves its context live, for a stream
// that goes on.
func (t attemptTimer) stop() {
	if t.timer != nil {
		t.timer.Stop()
	}
}

// outcome is an attempt that failed: its context, its error and trailer,
// and whether its context had ended (by the attempt's own timeout, when
// the call's lives).
type outcome struct {
	actx     context.Context
	err      error
	trailer  metadata.MD
	timedOut bool
}

// classify returns what the loop is told of an attempt of the call whose
// context is ctx that failed: its error when it may be retried, with the
// wait a server asked; marked Permanent when it must not be.
func (c *client) classify(ctx context.Context, o outcome) error {
	err, trailer := o.err, o.trailer
	if o.timedOut && ctx.Err() == nil {
		return err // an attempt's own deadline: retried, as Unavailable is
	}
	st, _ := status.FromError(err)
	if !c.cfg.retried(st.Code()) || tooLarge(st) {
		return retry.Permanent(err)
	}
	if c.marked(err, trailer) {
		// Retried below, in the server: this attempt is not retried (Do
		// gives up RetriedBelow), and the layer above hears of it.
		retry.Report(o.actx)
		retry.Report(ctx)
	}
	switch asked := trailer[PushbackTrailer]; len(asked) {
	case 0:
		return err
	case 1:
		wait, ok := pushback(asked[0])
		if !ok {
			return retry.PermanentFailure(err) // the server refuses a retry: a failure all the same
		}
		return retry.After(err, wait)
	default:
		return retry.PermanentFailure(err) // more than one: no retry, as gRPC's own retries read it
	}
}

// pushback reads a pushback trailer's value as every layer reads a wait
// in milliseconds (retry.ParseMillis): a decimal, saturating at the
// longest Duration, and false for anything else (a sign, a space, a
// letter: the server asks for no retry).
func pushback(value string) (time.Duration, bool) { return retry.ParseMillis(value) }

// marked reports whether err is a retried code whose trailer says it was
// retried below.
func (c *client) marked(err error, trailer metadata.MD) bool {
	v := trailer[RetriedBelowTrailer]
	return len(v) > 0 && strings.TrimSpace(v[0]) == "1" && c.cfg.retried(status.Code(err))
}

// tooLarge reports whether st says a message is larger than a limit:
// sending it again fails again.
func tooLarge(st *status.Status) bool {
	return st.Code() == codes.ResourceExhausted && strings.Contains(st.Message(), "larger than max")
}

// given returns what the caller gets of the loop's err after sent
// attempts: the status error itself when the call was sent once and not
// retried for its code or a mark, so that a call not retried reads as the
// bare call's.
func given(err error, sent int) error {
	if gu, ok := err.(*retry.GiveUpError); ok && sent == 1 && (gu.Reason == retry.NotRetryable || gu.Reason == retry.RetriedBelow) {
		return gu.Err
	}
	return err
}

// callOption is a call's own: options for its loop, or retries disabled.
// It is a grpc.CallOption that gRPC itself ignores; the interceptor takes
// it out of the call's options.
type callOption struct {
	grpc.EmptyCallOption
	opts    []retry.Option
	disable bool
}

// CallOptions returns a call option that gives one call its own loop
// options, after the interceptor's: a budget (retry.WithBudget, or
// retry.WithoutBudget) replaces the interceptor's for that call; an
// observer or end callback is called beside the interceptor's. An option
// that is invalid, or an interceptor's own (WithCodes, say), makes the
// call fail with an error naming it, unsent.
func CallOptions(opts ...retry.Option) grpc.CallOption {
	return callOption{opts: append([]retry.Option(nil), opts...)}
}

// Disable returns a call option that sends one call once: not retried,
// whatever its method, and still counted, observed and reported as every
// call is.
func Disable() grpc.CallOption { return callOption{disable: true} }

// ownCalls are the call options of this package that a call was given.
type ownCalls struct {
	given    bool
	disabled bool
	opts     []retry.Option
}

// ownCallOptions splits callOpts into this package's call options and the
// others, which go to gRPC. It allocates only when the call has some of
// this package's.
func ownCallOptions(callOpts []grpc.CallOption) (own ownCalls, rest []grpc.CallOption) {
	for i, o := range callOpts {
		co, ok := o.(callOption)
		if !ok {
			if own.given {
				rest = append(rest, o)
			}
			continue
		}
		if !own.given {
			own.given, rest = true, append([]grpc.CallOption(nil), callOpts[:i]...)
		}
		own.disabled = own.disabled || co.disable
		own.opts = append(own.opts, co.opts...)
	}
	if !own.given {
		return own, callOpts
	}
	return own, rest
}

// apply returns the interceptor's loop with the call's options.
func (o ownCalls) apply(loop *retry.Loop[struct{}]) (*retry.Loop[struct{}], error) {
	if len(o.opts) == 0 {
		return loop, nil
	}
	l, err := loop.With(withoutHedging(o.opts)...) // a call not hedged
	if err != nil {
		return nil, errors.New("retrygrpc: CallOptions: " + err.Error())
	}
	return l, nil
}
