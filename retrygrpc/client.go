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
	cfg   config
	safe  map[string]bool // WithSafeMethods' methods
	named bool            // calls are named by their method (retry.NameCall), for a start hook
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
	c.named = slices.ContainsFunc(loopOpts, func(o retry.Option) bool { return o.Name() == "retry.WithStart" })
	if !slices.ContainsFunc(loopOpts, namesBudget) {
		// Shared by the calls unless given one or told to take none: a
		// budget that only calls that end well refill, so that retrying
		// stops when most calls fail.
		loopOpts = append(loopOpts, retry.WithBudget(retry.DefaultBudget()))
	}
	if c.loop, err = retry.New[struct{}](s, loopOpts...); err != nil {
		return nil, errors.New("retrygrpc: " + err.Error())
	}
	return c, nil
}

// namesBudget reports whether o says which budget the loop takes.
func namesBudget(o retry.Option) bool {
	return o.Name() == "retry.WithBudget" || o.Name() == "retry.WithoutBudget"
}

// UnaryClientInterceptor returns an interceptor that retries the safe
// unary calls under s; see the package doc for what it retries and
// returns. It takes the loop's options (retry.WithBudget,
// retry.WithObserver, retry.WithEnd, retry.WithWaitLimit,
// retry.WithNestedRetries, ..., and otelretry's) beside its own
// (WithCodes, WithSafeMethods, WithSafe, WithAttemptTimeout). It returns
// the strategy's *retrypolicy.ValidationError when s is invalid, and an
// error naming the option when an option is invalid, another adapter's, or
// in conflict with another. A call's own CallOptions and Disable apply to
// it alone. The interceptor is safe for concurrent use.
func UnaryClientInterceptor(s retrypolicy.Strategy, opts ...retry.Option) (grpc.UnaryClientInterceptor, error) {
	c, err := newClient(s, opts)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, callOpts ...grpc.CallOption) error {
		u := &unaryCall{c: c, loop: c.loop, ctx: c.name(ctx, method), method: method, req: req, reply: reply, cc: cc, invoker: invoker}
		own, rest := ownCallOptions(callOpts)
		if own.given {
			if u.loop, err = own.apply(c.loop); err != nil {
				return err
			}
		}
		u.once = own.disabled
		u.opts = append(append(u.buf[:0], rest...), grpc.Trailer(&u.trailer))
		return u.run()
	}, nil
}

// name returns ctx naming its call by method, for an instrumentation's
// start hook (otelretry labels a call by it); ctx itself when the loop has
// no start hook, which costs nothing.
func (c *client) name(ctx context.Context, method string) context.Context {
	if !c.named {
		return ctx
	}
	return retry.NameCall(ctx, method)
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
	u.once = u.once || !u.c.isSafe(u.ctx, u.method)
	_, err := u.loop.Do(u.ctx, u.attempt)
	return given(err, u.sent)
}

// unaryCall is one unary call's retry loop.
type unaryCall struct {
	c          *client
	loop       *retry.Loop[struct{}] // the interceptor's, or the call's own
	once       bool                  // sent once: not safe, or disabled
	ctx        context.Context
	method     string
	req, reply any
	cc         *grpc.ClientConn
	invoker    grpc.UnaryInvoker
	opts       []grpc.CallOption // the caller's, and the trailer's
	buf        [4]grpc.CallOption
	trailer    metadata.MD
	sent       int
}

// attempt sends the call once.
func (u *unaryCall) attempt(actx context.Context) (struct{}, error) {
	u.sent++
	octx, t := u.c.attemptContext(actx, u.sent, false)
	u.trailer = nil
	err := u.invoker(octx, u.method, u.req, u.reply, u.cc, u.opts...)
	fired := t.end()
	if err == nil {
		return struct{}{}, nil
	}
	err = u.c.classify(actx, u.ctx, err, u.trailer, fired)
	if u.once && !retry.IsPermanent(err) {
		// A failure that would be retried, sent once: reported above if
		// marked, never sent again, and no good end for a budget.
		return struct{}{}, retry.PermanentFailure(err)
	}
	return struct{}{}, err
}

// attemptContext returns the context of attempt n: the count before it
// in its metadata after the first, under the attempt's own timeout. A
// unary attempt's is a deadline, which the server sees (grpc-timeout); a
// stream's first message's is a timer, which stops once the message
// arrives, the stream going on under the call's deadline.
func (c *client) attemptContext(actx context.Context, n int, stream bool) (context.Context, attemptTimer) {
	if stream {
		// The stream goes on past the attempt that delivered its first
		// message, whose context the loop cancels as it returns: it runs
		// under the call's, and a context of its own ends it when given up.
		actx = retry.CallContext(actx)
	}
	if n > 1 {
		actx = metadata.AppendToOutgoingContext(actx, PreviousAttemptsHeader, strconv.Itoa(n-1))
	}
	d := c.cfg.attemptTimeout
	switch {
	case stream:
		// A stream's attempt has a context of its own even with no
		// timeout, so that one given up on is closed at once.
		octx, cancel := context.WithCancelCause(actx)
		t := attemptTimer{ctx: octx, cancel: cancel}
		if d > 0 {
			t.timer = time.AfterFunc(d, func() { cancel(errAttemptTimeout) })
		}
		return octx, t
	case d > 0:
		octx, cancel := context.WithTimeoutCause(actx, d, errAttemptTimeout)
		return octx, attemptTimer{ctx: octx, cancel: func(error) { cancel() }}
	}
	return actx, attemptTimer{}
}

// errAttemptTimeout is the cause of an attempt's context ended by
// WithAttemptTimeout.
var errAttemptTimeout = errors.New("retrygrpc: attempt timed out")

// attemptTimer bounds an attempt under WithAttemptTimeout; the zero
// attemptTimer bounds nothing.
type attemptTimer struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer // a stream's, until its first message; nil for a deadline
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

// classify returns what the loop is told of an attempt that failed with
// err: err when it may be retried, with the wait a server asked; marked
// Permanent when it must not be. actx is the attempt's context, ctx the
// call's; fired says the attempt's own timeout ended it.
func (c *client) classify(actx, ctx context.Context, err error, trailer metadata.MD, fired bool) error {
	if fired && ctx.Err() == nil {
		return err // an attempt's own deadline: retried, as Unavailable is
	}
	st, _ := status.FromError(err)
	if !c.cfg.retried(st.Code()) || tooLarge(st) {
		return retry.Permanent(err)
	}
	if c.marked(err, trailer) {
		// Retried below, in the server: this attempt is not retried (Do
		// gives up RetriedBelow), and the layer above hears of it.
		retry.Report(actx)
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
	l, err := loop.With(o.opts...)
	if err != nil {
		return nil, errors.New("retrygrpc: CallOptions: " + err.Error())
	}
	return l, nil
}
