package retrygrpc

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
)

// token is a caller's own per-call credentials.
type token struct{}

func (token) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "t"}, nil
}
func (token) RequireTransportSecurity() bool { return true }

// TestTheGateStopsAStreamOnceAResendIsRefused: the hook before each
// stream's headers lets streams through (asking the caller's credentials)
// until the call's budget refuses a hidden resend of the attempt (its
// second: the first is free), then fails each with Unavailable; it keeps
// the caller's credentials, which gRPC would otherwise drop for it.
func TestTheGateStopsAStreamOnceAResendIsRefused(t *testing.T) {
	b, err := retry.NewBudget(0, 1)
	require.NoError(t, err)
	require.True(t, b.Withdraw())
	opts := gated([]grpc.CallOption{grpc.PerRPCCredentials(token{})})
	require.Len(t, opts, 2)
	g := opts[1].(grpc.PerRPCCredsCallOption).Creds
	assert.True(t, g.RequireTransportSecurity(), "the caller's")
	assert.Equal(t, []grpc.CallOption{gate}, gated(nil))
	_, err = retry.Do(context.Background(), retrypolicy.Strategy{Kind: retrypolicy.None}, func(ctx context.Context) (int, error) {
		md, err := g.GetRequestMetadata(ctx)
		assert.NoError(t, err)
		assert.Equal(t, "t", md["authorization"])
		assert.True(t, retry.HiddenResend(ctx), "the first is free")
		_, err = g.GetRequestMetadata(ctx)
		assert.NoError(t, err)
		assert.False(t, retry.HiddenResend(ctx), "the second, refused")
		_, err = g.GetRequestMetadata(ctx)
		assert.Equal(t, codes.Unavailable, status.Code(err))
		return 1, nil
	}, retry.WithBudget(b))
	require.NoError(t, err)
}
