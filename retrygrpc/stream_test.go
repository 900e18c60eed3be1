package retrygrpc_test

import (
	"context"
	"errors"
	"io"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

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

// TestClientAndBidirectionalStreamsAreSentOnce: a client-streaming or
// bidirectional call goes through the loop, sent once: opened as it is
// first used, its error returned there and by its first receive, with no
// second attempt, and counted by the end callback.
func TestClientAndBidirectionalStreamsAreSentOnce(t *testing.T) {
	var ends []retry.End
	in, err := retrygrpc.StreamClientInterceptor(bounded(3), retrygrpc.WithSafe(func(string) bool { return true }),
		retry.WithEnd(func(e retry.End) { ends = append(ends, e) }))
	require.NoError(t, err)
	refused := status.Error(codes.Unavailable, "down")
	for _, desc := range []*grpc.StreamDesc{{ClientStreams: true}, {ClientStreams: true, ServerStreams: true}} {
		calls := 0
		cs, err := in(context.Background(), desc, nil, "/s.S/M", func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, ...grpc.CallOption) (grpc.ClientStream, error) {
			calls++
			return nil, refused
		})
		require.NoError(t, err, "opened as it is first used")
		ended := len(ends)
		assert.True(t, errors.Is(cs.SendMsg(1), refused), "the streamer's own error")
		assert.Len(t, ends, ended+1, "the call ended as it failed to open, before any receive")
		assert.True(t, errors.Is(cs.RecvMsg(new(int)), refused), "the streamer's own error")
		assert.True(t, errors.Is(cs.CloseSend(), refused), "the streamer's own error")
		_, err = cs.Header()
		assert.True(t, errors.Is(err, refused), "the streamer's own error")
		assert.Equal(t, 1, calls, "sent once")
	}
	require.Len(t, ends, 2)
	for _, e := range ends {
		assert.Equal(t, 1, e.Attempts)
		assert.Equal(t, "/s.S/M", retry.CallName(e.Context))
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
	assert.Equal(t, "/s.S/M", retry.CallName(cs.Context()), "the call's context, named by its method")
}

// TestAStreamsOtherMethodsAreNotHeldByItsLoop: while the first message's
// loop runs (here, as it decides a retry), the stream's Context returns at
// once from another goroutine. Until the stream's lock was held briefly,
// RecvMsg held it across the whole loop, waits and receives included, and
// Context waited for the loop to end.
func TestAStreamsOtherMethodsAreNotHeldByItsLoop(t *testing.T) {
	h := &health{watch: func(n int, send func() error) error {
		if n == 1 {
			return status.Error(codes.Unavailable, "not yet")
		}
		return send()
	}}
	var stream atomic.Pointer[grpc.ServerStreamingClient[grpc_health_v1.HealthCheckResponse]]
	returned := make(chan bool, 1)
	observe := retry.WithObserver(func(retry.Event) {
		got := make(chan struct{})
		go func() {
			(*stream.Load()).Context()
			close(got)
		}()
		select {
		case <-got:
			returned <- true
		case <-time.After(10 * time.Second): // a deadlock's bound, not a measure of speed
			returned <- false
		}
	})
	ss := watch(t, streamClient(t, h, retrygrpc.WithSafeMethods(watchMethod), observe))
	stream.Store(&ss)
	_, err := ss.Recv()
	require.NoError(t, err)
	assert.True(t, <-returned, "Context returned while the loop decided its retry")
}

// doneCtx is a context of a type the context package does not know, so
// that each context made from it watches it with a goroutine of its own
// until that context ends: a count of goroutines shows what is left alive.
type doneCtx struct {
	context.Context
	done chan struct{}
}

func (c doneCtx) Done() <-chan struct{} { return c.done }

// Err is context.Canceled once done is closed, as a context's must be: a
// goroutine still watching it when the test closes done cancels its child
// with this error (nil there panics the context package).
func (c doneCtx) Err() error {
	select {
	case <-c.done:
		return context.Canceled
	default:
		return nil
	}
}

// TestAnEmptyStreamEndsItsAttempt: a safe server stream that ends with no
// message ends its attempt's context when Recv returns io.EOF: 100 such
// streams leave no goroutine watching the caller's context. Until it did,
// each stream's attempt lived until the caller's context ended (515 bytes
// a call).
func TestAnEmptyStreamEndsItsAttempt(t *testing.T) {
	h := &health{watch: func(int, func() error) error { return nil }}
	cc := streamClient(t, h, retrygrpc.WithSafeMethods(watchMethod))
	caller := doneCtx{Context: context.Background(), done: make(chan struct{})}
	defer close(caller.done)
	client := grpc_health_v1.NewHealthClient(cc)
	before := runtime.NumGoroutine()
	for range 100 {
		ss, err := client.Watch(caller, &grpc_health_v1.HealthCheckRequest{Service: "jobs"})
		require.NoError(t, err)
		_, err = ss.Recv()
		require.ErrorIs(t, err, io.EOF)
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before+20 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), before+20, "goroutines left watching the caller's context after 100 empty streams")
}

// TestAStreamSentOnceIsALayer: a server-streaming call that may not be
// sent again (not safe, or Disable) still goes through the loop: its
// end callback is called, and a status the server marks retried below
// reports to the layer above, so that a retry.Do around it makes one
// attempt, RetriedBelow, not three.
func TestAStreamSentOnceIsALayer(t *testing.T) {
	for _, disable := range []bool{false, true} {
		var ends []retry.End
		opts := []retry.Option{retry.WithEnd(func(e retry.End) { ends = append(ends, e) })}
		var callOpts []grpc.CallOption
		if disable {
			opts = append(opts, retrygrpc.WithSafeMethods(watchMethod))
			callOpts = append(callOpts, retrygrpc.Disable())
		}
		in, err := retrygrpc.StreamClientInterceptor(bounded(3), opts...)
		require.NoError(t, err)
		h := &health{}
		h.watch = func(int, func() error) error { return retriedThenFails(h.ctx, codes.Unavailable) }
		cc := serve(t, h, []grpc.ServerOption{grpc.StreamInterceptor(retrygrpc.StreamServerInterceptor())}, grpc.WithStreamInterceptor(in))
		attempts := 0
		_, err = retry.Do(context.Background(), bounded(3), func(ctx context.Context) (int, error) {
			attempts++
			ss, err := grpc_health_v1.NewHealthClient(cc).Watch(ctx, &grpc_health_v1.HealthCheckRequest{}, callOpts...)
			if err != nil {
				return 0, err
			}
			_, err = ss.Recv()
			return 0, err
		})
		var gu *retry.GiveUpError
		require.ErrorAs(t, err, &gu)
		assert.Equal(t, retry.RetriedBelow, gu.Reason, "disabled: %v", disable)
		assert.Equal(t, 1, attempts, "attempts of the retry.Do around the stream")
		assert.Equal(t, 1, h.Calls(), "the stream sent once")
		require.Len(t, ends, 1, "the stream's end callback")
		assert.Equal(t, 1, ends[0].Attempts)
	}
}
