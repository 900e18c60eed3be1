package bench

import (
	"context"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	grpcretry "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/retry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retrygrpc"
)

// flakyHealth is a health service whose calls fail with Unavailable but
// for every failures+1-th: calls come one at a time, so each call's first
// failures attempts fail and the next succeeds.
type flakyHealth struct {
	grpc_health_v1.UnimplementedHealthServer
	failures int64
	calls    atomic.Int64
}

func (h *flakyHealth) Check(context.Context, *grpc_health_v1.HealthCheckRequest) (*grpc_health_v1.HealthCheckResponse, error) {
	if n := h.calls.Add(1); h.failures > 0 && n%(h.failures+1) != 0 {
		return nil, status.Error(codes.Unavailable, "down")
	}
	return &grpc_health_v1.HealthCheckResponse{Status: grpc_health_v1.HealthCheckResponse_SERVING}, nil
}

// grpcPeer is a way to retry a unary call: a connection's options that
// retry attempts attempts on Unavailable and ResourceExhausted, wait
// apart.
type grpcPeer struct {
	name string
	dial func(attempts int, wait time.Duration) ([]grpc.DialOption, error)
}

// grpcPeers are the bare call, retrygrpc's interceptor, go-grpc-middleware's
// retry interceptor, and grpc-go's built-in retry (a service config).
var grpcPeers = []grpcPeer{
	{"bare", func(int, time.Duration) ([]grpc.DialOption, error) { return nil, nil }},
	{"retrygrpc", func(attempts int, wait time.Duration) ([]grpc.DialOption, error) {
		s := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: attempts, Window: 7 * 24 * time.Hour,
			Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: wait}}
		in, err := retrygrpc.UnaryClientInterceptor(s, retrygrpc.WithSafeMethods("/grpc.health.v1.Health/Check"))
		return []grpc.DialOption{grpc.WithUnaryInterceptor(in)}, err
	}},
	{"middleware", func(attempts int, wait time.Duration) ([]grpc.DialOption, error) {
		in := grpcretry.UnaryClientInterceptor(grpcretry.WithMax(uint(attempts)),
			grpcretry.WithCodes(codes.Unavailable, codes.ResourceExhausted), grpcretry.WithBackoff(grpcretry.BackoffLinear(wait)))
		return []grpc.DialOption{grpc.WithUnaryInterceptor(in)}, nil
	}},
	{"builtin", func(attempts int, wait time.Duration) ([]grpc.DialOption, error) {
		backoff := strconv.FormatFloat(wait.Seconds(), 'f', -1, 64) + "s"
		config := `{"methodConfig":[{"name":[{"service":"grpc.health.v1.Health"}],"retryPolicy":{` +
			`"maxAttempts":` + strconv.Itoa(attempts) + `,"initialBackoff":"` + backoff + `","maxBackoff":"` + backoff + `",` +
			`"backoffMultiplier":1,"retryableStatusCodes":["UNAVAILABLE","RESOURCE_EXHAUSTED"]}}]}`
		return []grpc.DialOption{grpc.WithDefaultServiceConfig(config)}, nil
	}},
}

// BenchmarkGRPCPeers is a unary call to an in-memory server through each
// of grpcPeers: one that succeeds at once (first-try: what the interceptor
// costs when nothing fails), each configured for 3 attempts; and one
// retried three times, 1 µs apart, each configured for 4 attempts (so
// that the waits are not what is measured). The bare call is the first
// try's floor; it does not retry.
func BenchmarkGRPCPeers(b *testing.B) {
	for _, c := range []struct {
		name     string
		failures int64
		attempts int
	}{{"first-try", 0, 3}, {"retried=3", 3, 4}} {
		for _, p := range grpcPeers {
			if c.failures > 0 && p.name == "bare" {
				continue
			}
			b.Run(c.name+"/impl="+p.name, func(b *testing.B) {
				opts, err := p.dial(c.attempts, time.Microsecond)
				if err != nil {
					b.Fatal(err)
				}
				h := &flakyHealth{failures: c.failures}
				client := grpcClient(b, h, opts)
				ctx := context.Background()
				req := &grpc_health_v1.HealthCheckRequest{}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := client.Check(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
				if want := int64(b.N) * (c.failures + 1); h.calls.Load() != want {
					b.Fatalf("%s: %d calls at the server, want %d", p.name, h.calls.Load(), want)
				}
			})
		}
	}
}

// grpcClient serves h on an in-memory listener and returns a client of it
// through a connection with opts; both end with the benchmark.
func grpcClient(b *testing.B, h grpc_health_v1.HealthServer, opts []grpc.DialOption) grpc_health_v1.HealthClient {
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	grpc_health_v1.RegisterHealthServer(srv, h)
	go func() { _ = srv.Serve(lis) }()
	b.Cleanup(srv.Stop)
	opts = append([]grpc.DialOption{
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
	}, opts...)
	cc, err := grpc.NewClient("passthrough:///bufnet", opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cc.Close() })
	return grpc_health_v1.NewHealthClient(cc)
}
