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
// Each call is a loop of package retry of its own: the same decisions,
// sliding window, uptime credit (the time an attempt took before it
// failed), jitter, budget, observer and [retry.GiveUpError] reasons. The
// client interceptors take the loop's own options ([retry.Option]:
// retry.WithBudget, retry.WithObserver, ..., and otelretry's) beside their
// own, one kind of option for every part of the library; a call's own
// [CallOptions] and [Disable] apply to it alone. The server interceptors
// take a [ServerOption], a type of its own. Every call, safe or not, goes
// through the loop: counted, observed and reported alike. What gRPC adds:
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
//     the loop's limit (retry.WithWaitLimit; by default retry.WaitLimit's:
//     the backoff's longest delay, a fixed backoff's delay, but at least a
//     minute, or an hour without a cap) is not made: the call
//     gives up with the reason RetryAfterTooLong and the wait.
//   - Each attempt after the first sends "grpc-previous-rpc-attempts", the
//     count of attempts before it, as gRPC's own retries do.
//   - retry.WithAttemptTimeout gives each unary attempt a deadline of its
//     own, under the call's, which gRPC sends the server, and a
//     server-streaming attempt as long to deliver its first message; an
//     attempt it ends is retried while the call's context lives.
//
// What the caller gets: the first reply that succeeds; an error whose
// [status.Code] is the last attempt's code otherwise. That error is the
// attempt's status error itself when the call was sent once (an unsafe
// call, a code not retried, a status retried below), and a
// *retry.GiveUpError wrapping it when the loop gave up after retrying, or
// for a spent budget, a deadline, a wait beyond the limit.
//
// [StreamClientInterceptor] retries safe server-streaming calls until the
// first response message arrives, never after; client-streaming and
// bidirectional calls, like unsafe ones, are sent once, through the loop
// all the same: counted, observed, budgeted and reported until their first
// response message. Every call is named by its method ([retry.CallName])
// for the loop's hooks.
//
// grpc-go retries a call transparently, below the interceptors, while its
// stream never reached the server's application; [WithHiddenResends], a
// dial option, shows each such resend to the call's loop, which counts
// it, and charges and stops those past an attempt's first to its budget.
// retry.WithThrottle gives the interceptors a client-side throttle.
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
// HTTP (retryhttp) and gRPC is one chain. retry.WithNestedRetries turns
// this off for one client interceptor, [WithoutMark] for one server
// interceptor.
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
	"slices"
	"strconv"
	"strings"

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

// config is what a client interceptor's own options set.
type config struct {
	codes         []codes.Code
	setCodes      bool
	safeMethods   []string
	safe          []func(string) bool
	hedgedMethods []string // WithHedgedMethods'
	err           string   // the first option that is invalid, and why
}

// A client interceptor's settings: the codes of one value, the safe
// methods added to by each option.
var (
	withCodes       = retry.NewAdapterSetting[config]("retrygrpc.WithCodes")
	withSafeMethods = retry.NewAdditiveSetting[config]("retrygrpc.WithSafeMethods")
	withSafe        = retry.NewAdditiveSetting[config]("retrygrpc.WithSafe")
)

// refuse records that the option named name is invalid, unless an earlier
// one was.
func (c *config) refuse(name, why string) {
	if c.err == "" {
		c.err = "retrygrpc." + name + ": " + why
	}
}

// WithCodes replaces the codes a client interceptor retries, Unavailable
// and ResourceExhausted by default; give the server interceptors the same
// with WithMarkedCodes. Each must be a code a call can fail with, and at
// least one given; a list gives it once.
func WithCodes(c ...codes.Code) retry.Option {
	c = append([]codes.Code(nil), c...)
	return withCodes.Option(func(cf *config) {
		if len(c) == 0 {
			cf.refuse("WithCodes", "give at least one code")
		}
		for _, code := range c {
			if !failing(code) {
				cf.refuse("WithCodes", code.String()+" is not an error code a call can fail with")
			}
		}
		cf.codes, cf.setCodes = c, true
	})
}

// failing reports whether code is one a call can fail with.
func failing(code codes.Code) bool { return code != codes.OK && code <= codes.Unauthenticated }

// WithSafeMethods names methods safe to retry, by their full name
// ("/package.Service/Method"): calling one twice does its work once.
// Given more than once, each adds its methods.
func WithSafeMethods(fullMethods ...string) retry.Option {
	m := append([]string(nil), fullMethods...)
	return withSafeMethods.Option(func(c *config) {
		for _, name := range m {
			if !fullMethod(name) {
				c.refuse("WithSafeMethods", strconv.Quote(name)+" is not a full method name, such as \"/package.Service/Method\"")
			}
		}
		c.safeMethods = append(c.safeMethods, m...)
	})
}

// WithSafe makes the methods safe reports true for, by their full name,
// safe to retry. Given more than once, a method any of them matches is
// safe.
func WithSafe(safe func(fullMethod string) bool) retry.Option {
	return withSafe.Option(func(c *config) {
		if safe == nil {
			c.refuse("WithSafe", "the function is nil")
		}
		c.safe = append(c.safe, safe)
	})
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
	return slices.Contains(c.codes, code)
}
