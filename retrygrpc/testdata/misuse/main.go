// Command misuse gives a server interceptor a client interceptor's
// options: it must not compile (misuse_test.go builds it).
package main

import (
	"time"

	"google.golang.org/grpc/codes"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retrygrpc"
)

func main() {
	_ = retrygrpc.UnaryServerInterceptor(retrygrpc.WithSafeMethods("/s.S/M"))
	_ = retrygrpc.StreamServerInterceptor(retrygrpc.WithCodes(codes.Unavailable))
	_ = retrygrpc.UnaryServerInterceptor(retry.WithNestedRetries())
	_, _ = retrygrpc.UnaryClientInterceptor(retrypolicy.Strategy{}, retrygrpc.WithoutMark(), retry.WithAttemptTimeout(time.Second))
}
