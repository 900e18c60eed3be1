package retryhttp

import (
	"time"

	"github.com/retrypolicy/retrypolicy"
)

// RecommendedStrategy returns the strategy this package recommends for an
// HTTP client's requests: 3 attempts (the first and two retries) within a
// minute, exponential delays from 200 ms, doubling, at most 2 s, with the
// strategy's additive jitter (up to a quarter more): waits of about
// 200 ms and 400 ms.
//
//	t, err := retryhttp.NewTransport(nil, retryhttp.RecommendedStrategy())
//
// Why: the caller waits while a synchronous layer retries, so a few
// attempts close together do what retrying a request is for, getting past
// a blip (a connection reset, an instance restarting, a 503 from a server
// shedding load for a moment), and give up within about a second of waits
// when the failure is not one. More attempts mostly add load to a
// dependency that is down, which the transport's default budget per host
// bounds besides (it stops retrying when most calls fail). The jitter
// keeps clients that failed together from retrying together; a wait a
// server asks (Retry-After) is still waited in full, up to a minute, the
// loop's limit for this backoff. Give requests a deadline too
// (http.Client.Timeout). Each call returns a value of its own, which the
// caller may change.
func RecommendedStrategy() retrypolicy.Strategy {
	return retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3, Window: time.Minute,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.ExponentialWithJitter,
			BaseDelay: 200 * time.Millisecond, Multiplier: 2, MaxDelay: 2 * time.Second}}
}
