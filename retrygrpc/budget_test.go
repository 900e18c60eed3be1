package retrygrpc_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retrygrpc"
)

// TestWhatEndsACallWell pins which calls refill a token budget: one that
// succeeded, or failed with a code the interceptor would not retry (a
// NotFound); not one that failed with a retried code, safe or not, one
// whose server refused a retry (an invalid pushback), or one the caller
// cancelled. Each call runs once (the strategy none), on a budget of
// (0.5, 1) whose one token is spent: a good end leaves 0.5.
func TestWhatEndsACallWell(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name   string
		answer func(int, context.Context) error
		safe   bool
		ctx    context.Context
		well   bool
	}{
		{"OK", func(int, context.Context) error { return nil }, true, context.Background(), true},
		{"NotFound", func(int, context.Context) error { return status.Error(codes.NotFound, "no") }, true, context.Background(), true},
		{"NotFound, not safe", func(int, context.Context) error { return status.Error(codes.NotFound, "no") }, false, context.Background(), true},
		{"Unavailable", func(int, context.Context) error { return status.Error(codes.Unavailable, "down") }, true, context.Background(), false},
		{"Unavailable, not safe: sent once", func(int, context.Context) error { return status.Error(codes.Unavailable, "down") }, false, context.Background(), false},
		{"a pushback of -1: the server refuses", func(_ int, ctx context.Context) error {
			_ = grpc.SetTrailer(ctx, metadata.Pairs(retrygrpc.PushbackTrailer, "-1"))
			return status.Error(codes.Unavailable, "go away")
		}, true, context.Background(), false},
		{"the caller's cancellation", func(int, context.Context) error { return nil }, true, canceled, false},
	} {
		b, err := retry.NewBudget(0.5, 1)
		require.NoError(t, err)
		require.True(t, b.Withdraw())
		opts := []retry.Option{retry.WithBudget(b)}
		if c.safe {
			opts = append(opts, safeCheck)
		}
		cc := client(t, &health{answer: c.answer}, retrypolicy.Strategy{Kind: retrypolicy.None}, opts...)
		_ = check(c.ctx, cc)
		want := 0.0
		if c.well {
			want = 0.5
		}
		assert.Equal(t, want, b.Tokens(), c.name)
	}
}

// TestAnInterceptorHasABudgetByDefault: an interceptor given no budget
// shares a token budget of (0.1, 10) among its calls: 50 safe calls of 3
// attempts to a service that is down make 10 retries in all (the burst;
// no call ends well). Told retry.WithoutBudget, they make 100.
func TestAnInterceptorHasABudgetByDefault(t *testing.T) {
	down := func(int, context.Context) error { return status.Error(codes.Unavailable, "down") }
	h := &health{answer: down}
	cc := client(t, h, bounded(3), safeCheck)
	for range 50 {
		assert.Equal(t, codes.Unavailable, status.Code(check(context.Background(), cc)))
	}
	assert.Equal(t, 60, h.Calls(), "50 calls and the burst of 10 retries")

	h = &health{answer: down}
	cc = client(t, h, bounded(3), safeCheck, retry.WithoutBudget())
	for range 50 {
		_ = check(context.Background(), cc)
	}
	assert.Equal(t, 150, h.Calls(), "3 attempts each, unbounded")
}
