package retrygrpc_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/test/bufconn"

	"github.com/retrypolicy/retrypolicy"
)

// checkMethod and watchMethod are the health service's methods the tests
// call.
const (
	checkMethod = "/grpc.health.v1.Health/Check"
	watchMethod = "/grpc.health.v1.Health/Watch"
)

// health is a health service whose answers the test scripts: answer is
// called with the call's number (from 1) and its context, and returns the
// call's error (nil: SERVING).
type health struct {
	grpc_health_v1.UnimplementedHealthServer
	answer func(n int, ctx context.Context) error
	watch  func(n int, send func() error) error

	ctx      context.Context // the last stream's
	mu       sync.Mutex
	calls    int
	previous []string // each call's grpc-previous-rpc-attempts
}

func (h *health) count(ctx context.Context) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls++
	md, _ := metadata.FromIncomingContext(ctx)
	h.previous = append(h.previous, append(md.Get("grpc-previous-rpc-attempts"), "")[0])
	return h.calls
}

func (h *health) Calls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls
}

func (h *health) Check(ctx context.Context, _ *grpc_health_v1.HealthCheckRequest) (*grpc_health_v1.HealthCheckResponse, error) {
	n := h.count(ctx)
	if h.answer != nil {
		if err := h.answer(n, ctx); err != nil {
			return nil, err
		}
	}
	return &grpc_health_v1.HealthCheckResponse{Status: grpc_health_v1.HealthCheckResponse_SERVING}, nil
}

func (h *health) Watch(_ *grpc_health_v1.HealthCheckRequest, ss grpc.ServerStreamingServer[grpc_health_v1.HealthCheckResponse]) error {
	n := h.count(ss.Context())
	h.ctx = ss.Context()
	return h.watch(n, func() error {
		return ss.Send(&grpc_health_v1.HealthCheckResponse{Status: grpc_health_v1.HealthCheckResponse_SERVING})
	})
}

// serve starts a server of h on an in-memory listener, with the server
// options given, and returns a connection to it with the dial options
// given. Both end with the test.
func serve(t *testing.T, h *health, sopts []grpc.ServerOption, dopts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(sopts...)
	grpc_health_v1.RegisterHealthServer(srv, h)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	dopts = append([]grpc.DialOption{
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
	}, dopts...)
	cc, err := grpc.NewClient("passthrough:///bufnet", dopts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// bounded is a strategy of n attempts, retried after a millisecond.
func bounded(n int) retrypolicy.Strategy {
	return retrypolicy.Strategy{
		Kind:        retrypolicy.Bounded,
		MaxAttempts: n,
		Window:      time.Hour,
		Backoff:     retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond},
	}
}

// check calls Check through cc under ctx.
func check(ctx context.Context, cc *grpc.ClientConn, opts ...grpc.CallOption) error {
	_, err := grpc_health_v1.NewHealthClient(cc).Check(ctx, &grpc_health_v1.HealthCheckRequest{}, opts...)
	return err
}
