package retrygrpc_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retrygrpc"
)

// refusing is an HTTP/2 server on in-memory pipes, written frame by
// frame, that answers every stream with a REFUSED_STREAM: the stream was
// not processed, so grpc-go retries it transparently. It counts the
// streams that reached it.
type refusing struct {
	h2server
	streams atomic.Int64
}

func (s *refusing) dial(context.Context, string) (net.Conn, error) {
	return s.open(nil, func(c *h2conn, id uint32) {
		s.streams.Add(1)
		c.write(3, 0, id, []byte{0, 0, 0, 7}) // RST_STREAM REFUSED_STREAM
	}), nil
}

// refusedCall makes one Check through an interceptor of bounded(3) with
// opts to a refusing server, the dial options given, and returns how it
// ended and the streams that reached the server.
func refusedCall(t *testing.T, dopts []grpc.DialOption, opts ...retry.Option) (retry.End, int, error) {
	t.Helper()
	srv := &refusing{}
	defer srv.close()
	var end retry.End
	// A refused stream's status is Unavailable, or at times Unknown (an
	// EOF grpc-go meets as the stream is reset while it sends): both
	// retried, so that the loop's attempts do not depend on which.
	unary, err := retrygrpc.UnaryClientInterceptor(bounded(3), append(opts, retrygrpc.WithSafeMethods(checkMethod),
		retrygrpc.WithCodes(codes.Unavailable, codes.Unknown), retry.WithEnd(func(e retry.End) { end = e }))...)
	require.NoError(t, err)
	cc, err := grpc.NewClient("passthrough:///refusing", append([]grpc.DialOption{
		grpc.WithContextDialer(srv.dial), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(unary), grpc.WithDisableRetry()}, dopts...)...)
	require.NoError(t, err)
	err = check(context.Background(), cc)
	cc.Close()
	return end, int(srv.streams.Load()), err
}

// TestTransparentRetriesAreSeenWithTheDialOption: against a server that
// refuses every stream, grpc-go sends each of the loop's 3 attempts twice
// (a transparent retry, retries disabled): 6 streams. With
// WithHiddenResends the end counts the 3 resends and says they were seen;
// without it, it says they were not seen, never that there were none.
// Under an empty budget the one attempt's resend is free: 2 streams, and
// the loop gives up budget_exhausted.
func TestTransparentRetriesAreSeenWithTheDialOption(t *testing.T) {
	end, streams, err := refusedCall(t, []grpc.DialOption{retrygrpc.WithHiddenResends()}, retry.WithoutBudget())
	assert.Error(t, err)
	assert.Equal(t, 6, streams)
	assert.Equal(t, 3, end.Attempts)
	assert.True(t, end.HiddenSeen)
	assert.Equal(t, 3, end.HiddenResends)

	end, streams, _ = refusedCall(t, nil, retry.WithoutBudget())
	assert.Equal(t, 6, streams)
	assert.False(t, end.HiddenSeen, "not seen")
	assert.Zero(t, end.HiddenResends)

	b, err := retry.NewBudget(0, 1)
	require.NoError(t, err)
	require.True(t, b.Withdraw())
	end, streams, err = refusedCall(t, []grpc.DialOption{retrygrpc.WithHiddenResends()}, retry.WithBudget(b))
	var gu *retry.GiveUpError
	require.ErrorAs(t, err, &gu)
	assert.Equal(t, retry.BudgetExhausted, gu.Reason)
	assert.Equal(t, 2, streams)
	assert.Equal(t, 1, end.HiddenResends)
}
