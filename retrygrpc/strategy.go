package retrygrpc

import (
	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

// RecommendedStrategy returns the strategy this package recommends for a
// client's calls, the one recommended for HTTP requests
// (retryhttp.RecommendedStrategy): 3 attempts within a minute, exponential
// delays from 200 ms, doubling, at most 2 s, with the additive jitter.
//
//	retrying, err := retrygrpc.UnaryClientInterceptor(retrygrpc.RecommendedStrategy(),
//		retrygrpc.WithSafeMethods("/inventory.Stock/Get"))
//
// Why the same: a gRPC call is a synchronous layer as a request is, whose
// caller waits; a few attempts close together get past an Unavailable
// (a connection lost, a server draining) and give up within about a second
// of waits when the failure lasts, while the interceptor's default budget
// stops retrying when most calls fail. A server's pushback is waited in
// full, up to a minute. Give calls a deadline too. Each call returns a
// value of its own, which the caller may change.
func RecommendedStrategy() retrypolicy.Strategy { return retryhttp.RecommendedStrategy() }
