package retrygrpc_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retrygrpc"
)

// streamClient returns a connection to h through a stream interceptor.
func streamClient(t *testing.T, h *health, opts ...retry.Option) *grpc.ClientConn {
	t.Helper()
	in, err := retrygrpc.StreamClientInterceptor(bounded(5), opts...)
	require.NoError(t, err)
	return serve(t, h, nil, grpc.WithStreamInterceptor(in))
}

func watch(t *testing.T, cc *grpc.ClientConn) grpc.ServerStreamingClient[grpc_health_v1.HealthCheckResponse] {
	t.Helper()
	ss, err := grpc_health_v1.NewHealthClient(cc).Watch(context.Background(), &grpc_health_v1.HealthCheckRequest{Service: "jobs"})
	require.NoError(t, err)
	return ss
}

func TestAStreamFailingBeforeItsFirstMessageIsRetried(t *testing.T) {
	h := &health{watch: func(n int, send func() error) error {
		if n <= 2 {
			return status.Error(codes.Unavailable, "not yet")
		}
		return send()
	}}
	ss := watch(t, streamClient(t, h, retrygrpc.WithSafeMethods(watchMethod)))
	m, err := ss.Recv()
	require.NoError(t, err)
	assert.Equal(t, grpc_health_v1.HealthCheckResponse_SERVING, m.Status)
	_, err = ss.Recv()
	assert.ErrorIs(t, err, io.EOF)
	assert.Equal(t, 3, h.Calls())
	assert.Equal(t, []string{"", "1", "2"}, h.previous)
}

func TestAStreamFailingAfterItsFirstMessageIsNotRetried(t *testing.T) {
	h := &health{watch: func(_ int, send func() error) error {
		if err := send(); err != nil {
			return err
		}
		return status.Error(codes.Unavailable, "gone")
	}}
	ss := watch(t, streamClient(t, h, retrygrpc.WithSafeMethods(watchMethod)))
	_, err := ss.Recv()
	require.NoError(t, err)
	_, err = ss.Recv()
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, 1, h.Calls())
}

func TestAStreamGivenUpHasTheLastCode(t *testing.T) {
	h := &health{watch: func(int, func() error) error { return status.Error(codes.Unavailable, "down") }}
	ss := watch(t, streamClient(t, h, retrygrpc.WithSafeMethods(watchMethod)))
	_, err := ss.Recv()
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, 5, h.Calls())
	_, again := ss.Recv()
	assert.Equal(t, err, again, "every Recv after gives the same error")
}

func TestAnUnsafeStreamIsSentOnce(t *testing.T) {
	h := &health{watch: func(int, func() error) error { return status.Error(codes.Unavailable, "down") }}
	ss := watch(t, streamClient(t, h))
	_, err := ss.Recv()
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, 1, h.Calls())
}

func TestAStreamWithNoMessageEndsAtOnce(t *testing.T) {
	h := &health{watch: func(int, func() error) error { return nil }}
	ss := watch(t, streamClient(t, h, retrygrpc.WithSafeMethods(watchMethod)))
	_, err := ss.Recv()
	assert.ErrorIs(t, err, io.EOF)
	assert.Equal(t, 1, h.Calls())
}

func TestAStreamsHeaderBeforeItsFirstMessage(t *testing.T) {
	h := &health{watch: func(n int, send func() error) error {
		if n == 1 {
			return status.Error(codes.Unavailable, "not yet")
		}
		return send()
	}}
	ss := watch(t, streamClient(t, h, retrygrpc.WithSafeMethods(watchMethod)))
	_, err := ss.Header()
	require.NoError(t, err)
	_, err = ss.Recv()
	require.NoError(t, err)
	assert.Equal(t, 2, h.Calls())
}

func TestClientAndBidirectionalStreamsPassThrough(t *testing.T) {
	in, err := retrygrpc.StreamClientInterceptor(bounded(3), retrygrpc.WithSafe(func(string) bool { return true }))
	require.NoError(t, err)
	refused := status.Error(codes.Unavailable, "down")
	for _, desc := range []*grpc.StreamDesc{{ClientStreams: true}, {ClientStreams: true, ServerStreams: true}} {
		calls := 0
		_, err := in(context.Background(), desc, nil, "/s.S/M", func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, ...grpc.CallOption) (grpc.ClientStream, error) {
			calls++
			return nil, refused
		})
		assert.True(t, errors.Is(err, refused), "the streamer's own error, got %v", err)
		assert.Equal(t, 1, calls)
	}
}

func TestAStreamCallsSecondRequestIsRefused(t *testing.T) {
	in, err := retrygrpc.StreamClientInterceptor(bounded(3), retrygrpc.WithSafeMethods("/s.S/M"))
	require.NoError(t, err)
	cs, err := in(context.Background(), &grpc.StreamDesc{ServerStreams: true}, nil, "/s.S/M", nil)
	require.NoError(t, err)
	require.NoError(t, cs.SendMsg(1))
	assert.Equal(t, codes.Internal, status.Code(cs.SendMsg(2)))
	assert.Nil(t, cs.Trailer())
	assert.Equal(t, context.Background(), cs.Context())
}
