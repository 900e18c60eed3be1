package retrygrpc_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/retrypolicy/retrypolicy/retrygrpc"
)

// TestAFirstTryAllocatesTwo: a safe call that succeeds at once costs the
// interceptor itself 2 allocations, the call's state and its attempt's
// context; gRPC filling in the trailer it asks for costs one more, inside
// gRPC (147 beside the bare call's 144 in BenchmarkGRPCPeers): within the
// bound of 4 more than the bare call.
func TestAFirstTryAllocatesTwo(t *testing.T) {
	in, err := retrygrpc.UnaryClientInterceptor(bounded(3), safeCheck)
	require.NoError(t, err)
	invoke := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	ctx := context.Background()
	allocs := testing.AllocsPerRun(200, func() {
		if err := in(ctx, checkMethod, nil, nil, nil, invoke); err != nil {
			t.Fatal(err)
		}
	})
	assert.Equal(t, 2.0, allocs)
}
