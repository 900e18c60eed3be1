package retrygrpc

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	"github.com/retrypolicy/retrypolicy/retry"
)

// WithHiddenResends returns a dial option that shows the client
// interceptors' loops the streams grpc-go sends again on its own within
// one attempt: its transparent retries, which it makes while no stream
// reached the server's application (a stream refused, a GOAWAY, a
// connection not yet ready), even with retries disabled, and which an
// interceptor cannot see through its invoker. It is a stats handler: each
// transparent retry (stats.Begin's IsTransparentRetryAttempt) is told to
// the call's loop (retry.HiddenResend): an Event whose Hidden is true, a
// count in retry.End.HiddenResends, and, past an attempt's first, a
// withdrawal from the call's budget; when the budget refuses, the
// interceptor fails the stream before its headers are sent (a hook it
// gives every call as per-call credentials, which runs before each
// stream's headers, after the caller's own), with Unavailable, and the
// loop decides on that failure as on any other. Without this option a
// call's End says that its hidden resends were not seen
// (HiddenSeen false), never that there were none. Give it to the
// connection the interceptors are given to.
func WithHiddenResends() grpc.DialOption { return grpc.WithStatsHandler(hiddenHandler{}) }

// hiddenHandler is WithHiddenResends' stats handler.
type hiddenHandler struct{}

func (hiddenHandler) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

// HandleRPC tells the loop of the stream's attempt that its resends are
// seen, and of each transparent retry.
func (hiddenHandler) HandleRPC(ctx context.Context, s stats.RPCStats) {
	b, ok := s.(*stats.Begin)
	switch {
	case !ok || !b.Client:
	case b.IsTransparentRetryAttempt:
		retry.HiddenResend(ctx)
	default:
		retry.WatchHidden(ctx)
	}
}

func (hiddenHandler) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

func (hiddenHandler) HandleConn(context.Context, stats.ConnStats) {}

// errResendRefused is the status of a stream stopped because the call's
// budget refused a hidden resend of its attempt.
var errResendRefused = status.Error(codes.Unavailable, retry.ErrResendRefused.Error())

// resendGate is the hook that runs before each stream's headers: it fails
// the stream once the loop refused a hidden resend of its attempt, then
// asks the caller's own per-call credentials, if any.
type resendGate struct{ next credentials.PerRPCCredentials }

func (g resendGate) GetRequestMetadata(ctx context.Context, uri ...string) (map[string]string, error) {
	if retry.ResendRefused(ctx) {
		return nil, errResendRefused
	}
	if g.next == nil {
		return nil, nil
	}
	return g.next.GetRequestMetadata(ctx, uri...)
}

func (g resendGate) RequireTransportSecurity() bool {
	return g.next != nil && g.next.RequireTransportSecurity()
}

// gate is the call option of the hook, for a call without per-call
// credentials of its own: made once.
var gate grpc.CallOption = grpc.PerRPCCredentials(resendGate{})

// gated returns opts with the hook after them: the caller's own per-call
// credentials, the last of which gRPC would use, run after it.
func gated(opts []grpc.CallOption) []grpc.CallOption {
	g := gate
	for i := len(opts) - 1; i >= 0; i-- {
		if c, ok := opts[i].(grpc.PerRPCCredsCallOption); ok {
			g = grpc.PerRPCCredentials(resendGate{next: c.Creds})
			break
		}
	}
	return append(opts, g)
}
