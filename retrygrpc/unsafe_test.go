package retrygrpc_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retrygrpc"
)

// TestAnUnsafeCallReportsWhateverItsOptions pins the one-layer rule for a
// call the interceptor may not send again: built WithNestedRetries (its
// own loop retries what was retried below), it still tells the layer
// above that a layer below retried, so that a retry.Do around it gives up
// after one attempt, RetriedBelow, rather than three.
func TestAnUnsafeCallReportsWhateverItsOptions(t *testing.T) {
	h := &health{answer: func(_ int, ctx context.Context) error { return retriedThenFails(ctx, codes.Unavailable) }}
	in, err := retrygrpc.UnaryClientInterceptor(bounded(3), retry.WithNestedRetries(), retry.WithoutBudget())
	require.NoError(t, err)
	cc := serve(t, h, []grpc.ServerOption{grpc.UnaryInterceptor(retrygrpc.UnaryServerInterceptor())}, grpc.WithUnaryInterceptor(in))
	attempts := 0
	_, err = retry.Do(context.Background(), bounded(3), func(ctx context.Context) (int, error) {
		attempts++
		return 0, check(ctx, cc)
	})
	var gu *retry.GiveUpError
	require.ErrorAs(t, err, &gu)
	assert.Equal(t, retry.RetriedBelow, gu.Reason)
	assert.Equal(t, 1, attempts, "attempts of the retry.Do around the unsafe call")
	assert.Equal(t, 1, h.Calls(), "an unsafe call is sent once")
}

// TestEveryCallIsCountedSafeOrNot: 100 unsafe calls, each failing with a
// retried code, are each sent once, each end the loop (an End callback
// per call), and each is seen by the budget: a windowed budget of 10 in
// an hour counts 100 calls and no retry, so a whole token is left.
func TestEveryCallIsCountedSafeOrNot(t *testing.T) {
	b, err := retry.NewWindowBudget(10, time.Hour, 0)
	require.NoError(t, err)
	var ends atomic.Int64
	h := &health{answer: down}
	cc := client(t, h, bounded(3), retry.WithBudget(b), retry.WithEnd(func(retry.End) { ends.Add(1) }))
	for range 100 {
		assert.Equal(t, codes.Unavailable, status.Code(check(context.Background(), cc)))
	}
	assert.Equal(t, 100, h.Calls(), "each unsafe call sent once")
	assert.Equal(t, int64(100), ends.Load(), "end callbacks")
	assert.Equal(t, 1.0, b.Tokens(), "no retry withdrawn")
}
