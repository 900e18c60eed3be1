package retrygrpc_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retrygrpc"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

// grpcLayer serves h behind the server interceptor, and returns a
// connection to it through a client interceptor of 3 attempts.
func grpcLayer(t *testing.T, h *health, nested bool) *grpc.ClientConn {
	t.Helper()
	opts := []retry.Option{safeCheck}
	var sopts []retrygrpc.ServerOption
	if nested {
		// The rule off, and the default budget too: nothing but the
		// strategies bounds the storm.
		opts = append(opts, retry.WithNestedRetries(), retry.WithoutBudget())
		sopts = append(sopts, retrygrpc.WithoutMark())
	}
	unary := retrygrpc.UnaryServerInterceptor(sopts...)
	stream := retrygrpc.StreamServerInterceptor(sopts...)
	in, err := retrygrpc.UnaryClientInterceptor(bounded(3), opts...)
	require.NoError(t, err)
	return serve(t, h, []grpc.ServerOption{grpc.UnaryInterceptor(unary), grpc.StreamInterceptor(stream)}, grpc.WithUnaryInterceptor(in))
}

// down answers Unavailable to every call: the bottom of a chain.
func down(int, context.Context) error { return status.Error(codes.Unavailable, "down") }

// grpcChain builds n gRPC services, each calling the next through a client
// interceptor of 3 attempts, the last one down; it returns a connection
// to the first, through a client interceptor too, and the services.
func grpcChain(t *testing.T, n int, nested bool) (*grpc.ClientConn, []*health) {
	layers := make([]*health, n)
	layers[n-1] = &health{answer: down}
	next := grpcLayer(t, layers[n-1], nested)
	for i := n - 2; i >= 0; i-- {
		below := next
		layers[i] = &health{answer: func(_ int, ctx context.Context) error { return check(ctx, below) }}
		next = grpcLayer(t, layers[i], nested)
	}
	return next, layers
}

func calls(layers []*health) []int {
	n := make([]int, len(layers))
	for i, h := range layers {
		n[i] = h.Calls()
	}
	return n
}

func TestAChainOfFourRetriesAtOneLayer(t *testing.T) {
	cc, layers := grpcChain(t, 4, false)
	err := check(context.Background(), cc)
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, []int{1, 1, 1, 3}, calls(layers), "calls received at each layer, top first")
}

func TestAChainOfFourWithNestedRetriesMultiplies(t *testing.T) {
	cc, layers := grpcChain(t, 4, true)
	err := check(context.Background(), cc)
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, []int{3, 9, 27, 81}, calls(layers), "calls received at each layer, top first")
}

// httpLayer serves handle behind retryhttp.Handler, counting its
// requests: it answers 503 when handle fails.
func httpLayer(t *testing.T, handle func(ctx context.Context) error) (*http.Client, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(retryhttp.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if err := handle(r.Context()); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})))
	t.Cleanup(srv.Close)
	tr, err := retryhttp.NewTransport(srv.Client().Transport, bounded(3))
	require.NoError(t, err)
	return &http.Client{Transport: &base{tr, srv.URL}}, &n
}

// base sends every request to url.
type base struct {
	rt  http.RoundTripper
	url string
}

func (b *base) RoundTrip(r *http.Request) (*http.Response, error) { return b.rt.RoundTrip(r) }

// get gets c's server's root under ctx, failing with Unavailable for a
// 503.
func get(ctx context.Context, c *http.Client) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Transport.(*base).url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return status.Error(codes.Unavailable, err.Error())
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusServiceUnavailable {
		return status.Error(codes.Unavailable, "HTTP 503")
	}
	return nil
}

func TestAChainOfHTTPAndGRPCRetriesAtOneLayer(t *testing.T) {
	// top to bottom: HTTP (A), gRPC (B), HTTP (C), gRPC (D), D down.
	d := &health{answer: down}
	toD := grpcLayer(t, d, false)
	toC, c := httpLayer(t, func(ctx context.Context) error { return check(ctx, toD) })
	b := &health{answer: func(_ int, ctx context.Context) error { return get(ctx, toC) }}
	toB := grpcLayer(t, b, false)
	toA, a := httpLayer(t, func(ctx context.Context) error { return check(ctx, toB) })

	assert.Equal(t, codes.Unavailable, status.Code(get(context.Background(), toA)))
	assert.Equal(t, []int{1, 1, 1, 3}, []int{int(a.Load()), b.Calls(), int(c.Load()), d.Calls()}, "calls received at A, B, C, D")
}

// retriedThenFails runs a loop of 2 attempts that fail under ctx, as a
// handler retrying a dependency of its own does, then fails with code.
func retriedThenFails(ctx context.Context, code codes.Code) error {
	_, _ = retry.Do(ctx, bounded(2), func(context.Context) (int, error) { return 0, errors.New("dependency down") })
	return status.Error(code, "gave up below")
}

func TestTheServerMarksARetriedCodeRetriedBelow(t *testing.T) {
	cases := []struct {
		name   string
		answer func(int, context.Context) error
		want   []string
	}{
		{"retried below, a retried code", func(_ int, ctx context.Context) error { return retriedThenFails(ctx, codes.Unavailable) }, []string{"1"}},
		{"retried below, another code", func(_ int, ctx context.Context) error { return retriedThenFails(ctx, codes.Internal) }, nil},
		{"not retried below", down, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			unary := retrygrpc.UnaryServerInterceptor()
			cc := serve(t, &health{answer: tc.answer}, []grpc.ServerOption{grpc.UnaryInterceptor(unary)})
			var trailer metadata.MD
			_ = check(context.Background(), cc, grpc.Trailer(&trailer))
			assert.Equal(t, tc.want, trailer.Get(retrygrpc.RetriedBelowTrailer))
		})
	}
}

func TestTheStreamServerMarksARetriedCodeRetriedBelow(t *testing.T) {
	stream := retrygrpc.StreamServerInterceptor()
	var h *health
	h = &health{watch: func(int, func() error) error { return retriedThenFails(h.ctx, codes.Unavailable) }}
	cc := serve(t, h, []grpc.ServerOption{grpc.StreamInterceptor(stream)})
	ss := watch(t, cc)
	_, err := ss.Recv()
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, []string{"1"}, ss.Trailer().Get(retrygrpc.RetriedBelowTrailer))
}

func TestNestedRetriesLeaveTheTrailerUnset(t *testing.T) {
	unary := retrygrpc.UnaryServerInterceptor(retrygrpc.WithoutMark())
	cc := serve(t, &health{answer: func(_ int, ctx context.Context) error { return retriedThenFails(ctx, codes.Unavailable) }},
		[]grpc.ServerOption{grpc.UnaryInterceptor(unary)})
	var trailer metadata.MD
	assert.Equal(t, codes.Unavailable, status.Code(check(context.Background(), cc, grpc.Trailer(&trailer))))
	assert.Empty(t, trailer.Get(retrygrpc.RetriedBelowTrailer))
}
