// Package retrygrpc retries gRPC calls under a [retrypolicy.Strategy], at one layer across services.
//
// Client interceptors retry a worker's calls; server interceptors keep
// retries at one layer across a chain of services.
//
// Only safe calls are retried. A call is safe when its method is named by
// [WithSafeMethods] or matched by [WithSafe], or when its outgoing metadata
// holds an "idempotency-key" that is not blank; any other call is sent
// once, whatever its outcome. So an interceptor given no safe rule retries
// only the calls that carry a key.
//
//	retrying, err := retrygrpc.UnaryClientInterceptor(strategy,
//		retrygrpc.WithSafeMethods("/inventory.Stock/Get"))
//	if err != nil {
//		return err // the strategy or an option is invalid
//	}
//	conn, err := grpc.NewClient(target, grpc.WithUnaryInterceptor(retrying), creds)
//
// Each call is a [retry.Do] loop of its own: the same decisions, sliding
// window, uptime credit (the time an attempt took before it failed),
// jitter, budget, observer and [retry.GiveUpError] reasons
// ([WithRetryOptions] passes the loop's options). What gRPC adds:
//
//   - Only the codes Unavailable and ResourceExhausted are retried
//     (replaceable with [WithCodes]); a ResourceExhausted that says a
//     message is larger than the limit (raised by the client itself, or
//     by a server refusing the request's size) is not: the same message
//     would fail again.
//   - A server's word is kept: a single "grpc-retry-pushback-ms" trailer
//     makes the next wait at least that long, never shorter. A negative,
//     invalid or repeated value makes the call not retried (the reason
//     NotRetryable), as a server asking for no retry means. A wait beyond
//     the loop's limit (retry.WithAfterCap; by default retry.WaitLimit's:
//     the backoff's longest delay, a fixed backoff's delay, but at least a
//     minute, or an hour without a cap) is not made: the call
//     gives up with the reason RetryAfterTooLong and the wait.
//   - Each attempt after the first sends "grpc-previous-rpc-attempts", the
//     count of attempts before it, as gRPC's own retries do.
//   - [WithAttemptTimeout] gives each attempt a deadline of its own; an
//     attempt it ends is retried while the call's context lives.
//
// What the caller gets: the first reply that succeeds; an error whose
// [status.Code] is the last attempt's code otherwise. That error is the
// attempt's status error itself when the call was sent once (an unsafe
// call, a code not retried, a status retried below), and a
// *retry.GiveUpError wrapping it when the loop gave up after retrying, or
// for a spent budget, a deadline, a wait beyond the limit.
//
// [StreamClientInterceptor] retries server-streaming calls until the first
// response message arrives, never after; client-streaming and
// bidirectional calls pass through it untried.
//
// # Retrying at one layer
//
// Retries multiply across layers: four services that each make 3
// attempts turn one call into 81 at the bottom. [UnaryServerInterceptor]
// and [StreamServerInterceptor] run each handler under an attempt of a
// layer; when the handler returns a retried code after a retry layer under
// it gave up retrying (this package's interceptor, a retryhttp transport,
// retry.Do), they set the trailer [RetriedBelowTrailer]. A client
// interceptor does not retry a call whose status carries it: it returns
// the status as received, and reports to the layer above it in turn. So
// only the layer closest to the failure retries, and a chain that mixes
// HTTP (retryhttp) and gRPC is one chain. [WithNestedRetries] turns this
// off for one interceptor.
//
// Inside a queue's job (see retry.DeferAfter), a wait longer than the
// queue adapter's threshold is not made: the call returns a
// *retry.GiveUpError with the reason Deferred and the wait, and the job
// runs again after it.
//
// A strategy that never gives up (unless_stopped, the default) retries
// until the call's context ends: give calls a deadline or use a bounded
// strategy.
package retrygrpc

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/retrypolicy/retrypolicy/retry"
)

// Metadata keys the interceptors read and write.
const (
	// RetriedBelowTrailer is the trailer that says a call was retried
	// below, in the server: its value is "1". The server interceptors set
	// it on a status with a retried code when a retry layer the handler
	// ran gave up after retrying. A server of another stack takes part by
	// setting it when it retried the call's work itself.
	RetriedBelowTrailer = "retried-below"
	// IdempotencyKey is the outgoing metadata key that makes any call safe
	// to retry, when its value is not blank: the server does the work of
	// one key once.
	IdempotencyKey = "idempotency-key"
	// PushbackTrailer is the trailer in which a server asks for a wait
	// before the next attempt, in milliseconds, as gRPC's own retries
	// read it.
	PushbackTrailer = "grpc-retry-pushback-ms"
	// PreviousAttemptsHeader is the metadata each attempt after the first
	// sends: the count of attempts before it.
	PreviousAttemptsHeader = "grpc-previous-rpc-attempts"
)

// Option configures an interceptor; the With functions make them. Like
// retry.Option, it returns the configuration it changes.
type Option struct{ set func(config) config }

// config is what the options set.
type config struct {
	codes          []codes.Code
	setCodes       bool
	safeMethods    []string
	safe           []func(string) bool
	attemptTimeout time.Duration
	nested         bool
	retryOpts      []retry.Option
	clientOnly     string // the first client-only option given, for a server's error
}

// WithCodes replaces the codes retried, Unavailable and ResourceExhausted
// by default. On a server interceptor, they are the codes it marks with
// [RetriedBelowTrailer]: give both ends the same.
func WithCodes(c ...codes.Code) Option {
	c = append([]codes.Code(nil), c...)
	return Option{func(cf config) config { cf.codes, cf.setCodes = c, true; return cf }}
}

// WithSafeMethods names methods safe to retry, by their full name
// ("/package.Service/Method"): calling one twice does its work once.
// Given more than once, each adds its methods.
func WithSafeMethods(fullMethods ...string) Option {
	m := append([]string(nil), fullMethods...)
	return Option{func(c config) config {
		c.safeMethods = append(c.safeMethods, m...)
		c.clientOnly = clientOption(c.clientOnly, "WithSafeMethods")
		return c
	}}
}

// WithSafe makes the methods safe reports true for, by their full name,
// safe to retry. Given more than once, a method any of them matches is
// safe.
func WithSafe(safe func(fullMethod string) bool) Option {
	return Option{func(c config) config {
		c.safe = append(c.safe, safe)
		c.clientOnly = clientOption(c.clientOnly, "WithSafe")
		return c
	}}
}

// WithAttemptTimeout bounds each attempt. A unary attempt gets a deadline
// of its own, under the call's, which gRPC sends the server. A
// server-streaming attempt gets d to deliver its first response message;
// the stream then goes on under the call's deadline. An attempt the
// timeout ends, while the call's context lives, is retried, as
// Unavailable is. The default is no bound of its own: the call's
// deadline.
func WithAttemptTimeout(d time.Duration) Option {
	return Option{func(c config) config {
		c.attemptTimeout = d
		c.clientOnly = clientOption(c.clientOnly, "WithAttemptTimeout")
		return c
	}}
}

// WithNestedRetries makes a client interceptor retry a call whose status
// carries [RetriedBelowTrailer] as if it were a fresh failure, as
// retry.WithNestedRetries does for its loop. The interceptor still
// reports to the layer above it. On a server interceptor, it leaves the
// trailer unset.
func WithNestedRetries() Option {
	return Option{func(c config) config { c.nested = true; return c }}
}

// WithRetryOptions gives every call's loop opts: a budget
// (retry.WithBudget, token or windowed), an observer, an end callback, a
// limit on a server's wait, jitter. otelretry's Options are such options.
// Given more than once, each adds its options.
func WithRetryOptions(opts ...retry.Option) Option {
	o := append([]retry.Option(nil), opts...)
	return Option{func(c config) config {
		c.retryOpts = append(c.retryOpts, o...)
		c.clientOnly = clientOption(c.clientOnly, "WithRetryOptions")
		return c
	}}
}

// clientOption returns the first client-only option given.
func clientOption(first, name string) string {
	if first != "" {
		return first
	}
	return name
}

// build applies opts and checks them.
func build(opts []Option) (config, error) {
	var c config
	for _, o := range opts {
		if o.set != nil {
			c = o.set(c)
		}
	}
	if !c.setCodes {
		c.codes = []codes.Code{codes.Unavailable, codes.ResourceExhausted}
	}
	if len(c.codes) == 0 {
		return c, errors.New("retrygrpc: WithCodes: give at least one code")
	}
	for _, code := range c.codes {
		if code == codes.OK || code > codes.Unauthenticated {
			return c, errors.New("retrygrpc: WithCodes: " + code.String() + " is not an error code a call can fail with")
		}
	}
	for _, m := range c.safeMethods {
		if !fullMethod(m) {
			return c, errors.New("retrygrpc: WithSafeMethods: " + strconv.Quote(m) + " is not a full method name, such as \"/package.Service/Method\"")
		}
	}
	for _, f := range c.safe {
		if f == nil {
			return c, errors.New("retrygrpc: WithSafe: the function is nil")
		}
	}
	if c.attemptTimeout < 0 {
		return c, errors.New("retrygrpc: WithAttemptTimeout: must not be negative, got " + c.attemptTimeout.String())
	}
	return c, nil
}

// fullMethod reports whether m reads "/service/method", neither part
// empty.
func fullMethod(m string) bool {
	rest, ok := strings.CutPrefix(m, "/")
	if !ok {
		return false
	}
	service, method, ok := strings.Cut(rest, "/")
	return ok && service != "" && method != "" && !strings.Contains(method, "/")
}

// retried reports whether c retries code.
func (c *config) retried(code codes.Code) bool {
	for _, r := range c.codes {
		if r == code {
			return true
		}
	}
	return false
}
