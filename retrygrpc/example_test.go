package retrygrpc_test

import (
	"context"
	"fmt"
	"net"
	"time"

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

// flaky is a health service that is Unavailable for its first two calls.
type flaky struct {
	grpc_health_v1.UnimplementedHealthServer
	calls int
}

func (f *flaky) Check(context.Context, *grpc_health_v1.HealthCheckRequest) (*grpc_health_v1.HealthCheckResponse, error) {
	if f.calls++; f.calls <= 2 {
		return nil, status.Error(codes.Unavailable, "starting")
	}
	return &grpc_health_v1.HealthCheckResponse{Status: grpc_health_v1.HealthCheckResponse_SERVING}, nil
}

// A client retries the health check, which it names safe, under a strategy
// of 5 attempts; the server's interceptor takes part in retrying at one
// layer.
func ExampleUnaryClientInterceptor() {
	strategy := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: time.Millisecond, MaxDelay: 100 * time.Millisecond}}
	retrying, err := retrygrpc.UnaryClientInterceptor(strategy,
		retrygrpc.WithSafeMethods("/grpc.health.v1.Health/Check"),
		retry.WithObserver(func(e retry.Event) {
			fmt.Printf("failure %d: %v\n", e.Failures, status.Code(e.Err))
		}))
	if err != nil {
		fmt.Println(err)
		return
	}
	marking := retrygrpc.UnaryServerInterceptor()

	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(grpc.UnaryInterceptor(marking))
	grpc_health_v1.RegisterHealthServer(srv, &flaky{})
	go srv.Serve(lis)
	defer srv.Stop()
	conn, err := grpc.NewClient("passthrough:///flaky",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(retrying))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()

	resp, err := grpc_health_v1.NewHealthClient(conn).Check(context.Background(), &grpc_health_v1.HealthCheckRequest{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Status)
	// Output:
	// failure 1: Unavailable
	// failure 2: Unavailable
	// SERVING
}

// The strategy recommended for a client interceptor: HTTP's, three
// attempts, the retries about 200 ms and 400 ms apart.
func ExampleRecommendedStrategy() {
	s := retrygrpc.RecommendedStrategy()
	fmt.Println(s.Kind, s.MaxAttempts, s.Backoff.BaseDelay)
	in, err := retrygrpc.UnaryClientInterceptor(s, retrygrpc.WithSafeMethods("/inventory.Stock/Get"))
	fmt.Println(in != nil, err)
	// Output:
	// bounded 3 200ms
	// true <nil>
}
