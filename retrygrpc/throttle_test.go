package retrygrpc_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retrygrpc"
)

// TestInterceptorsTakeAThrottle: retry.WithThrottle given to the unary
// and the stream interceptors rejects calls unsent once the server has
// accepted nothing (the throttle's window already full of requests), and
// the call gives up Throttled; a call's own CallOptions throttle replaces
// the interceptor's.
func TestInterceptorsTakeAThrottle(t *testing.T) {
	busy, err := retry.NewThrottle(1, time.Minute)
	require.NoError(t, err)
	busy.Seed(1)
	for range 1000 {
		busy.Sent() // a rejection of 1000/1001
	}
	unary, err := retrygrpc.UnaryClientInterceptor(bounded(3), retrygrpc.WithSafeMethods(checkMethod), retry.WithThrottle(busy))
	require.NoError(t, err)
	stream, err := retrygrpc.StreamClientInterceptor(bounded(3), retry.WithThrottle(busy))
	require.NoError(t, err)
	h := &health{
		answer: func(int, context.Context) error { return nil },
		watch:  func(_ int, send func() error) error { return send() },
	}
	cc := serve(t, h, nil, grpc.WithUnaryInterceptor(unary), grpc.WithStreamInterceptor(stream))

	err = check(context.Background(), cc)
	var gu *retry.GiveUpError
	require.ErrorAs(t, err, &gu)
	assert.Equal(t, retry.Throttled, gu.Reason)
	assert.ErrorIs(t, err, retry.ErrThrottled)

	w, err := grpc_health_v1.NewHealthClient(cc).Watch(context.Background(), &grpc_health_v1.HealthCheckRequest{})
	if err == nil {
		_, err = w.Recv()
	}
	require.ErrorAs(t, err, &gu)
	assert.Equal(t, retry.Throttled, gu.Reason)
	assert.Equal(t, 0, h.Calls(), "nothing reached the server")

	idle, err := retry.NewThrottle(1, time.Minute)
	require.NoError(t, err)
	require.NoError(t, check(context.Background(), cc, retrygrpc.CallOptions(retry.WithThrottle(idle))))
	assert.Equal(t, 1, h.Calls())
}

// unavailable is a health service that is Unavailable for every call.
type unavailable struct {
	grpc_health_v1.UnimplementedHealthServer
	calls int
}

func (d *unavailable) Check(context.Context, *grpc_health_v1.HealthCheckRequest) (*grpc_health_v1.HealthCheckResponse, error) {
	d.calls++
	return nil, status.Error(codes.Unavailable, "down")
}

// A client throttles its calls to a server that fails every one: once
// its window holds five requests and none was accepted, most calls are
// rejected locally, and never reach the server.
func ExampleUnaryClientInterceptor_throttle() {
	throttle, err := retry.NewThrottle(2, time.Minute) // k = 2 (the window should hold 5 requests or more)
	if err != nil {
		fmt.Println(err)
		return
	}
	throttle.Seed(1) // for the same output on every run
	once := retrypolicy.Strategy{Kind: retrypolicy.None}
	throttling, err := retrygrpc.UnaryClientInterceptor(once, retry.WithThrottle(throttle))
	if err != nil {
		fmt.Println(err)
		return
	}
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	service := &unavailable{}
	grpc_health_v1.RegisterHealthServer(srv, service)
	go srv.Serve(lis)
	defer srv.Stop()
	conn, err := grpc.NewClient("passthrough:///down",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(throttling))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	rejected := 0
	for range 50 {
		_, err := grpc_health_v1.NewHealthClient(conn).Check(context.Background(), &grpc_health_v1.HealthCheckRequest{})
		if errors.Is(err, retry.ErrThrottled) {
			rejected++
		}
	}
	fmt.Println("reached the server:", service.calls, "rejected:", rejected)
	// Output: reached the server: 7 rejected: 43
}
