package bench

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

// firstTryStrategy is the strategy of BenchmarkHTTPFirstTry's retrying
// transports.
var firstTryStrategy = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5,
	Backoff: retrypolicy.Backoff{Kind: retrypolicy.ExponentialWithJitter, BaseDelay: 100 * time.Millisecond, MaxDelay: 5 * time.Second}}

// BenchmarkHTTPFirstTry is a GET on loopback that succeeds at once, through
// a bare http.Transport, through retryhttp's Transport over the same kind
// of transport, and through go-retryablehttp's client over it: what
// wrapping a client costs when nothing fails. Each client keeps its
// connection alive, so the request is what is measured, not the dial.
func BenchmarkHTTPFirstTry(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	get := func(b *testing.B, c *http.Client) {
		b.ReportAllocs()
		for b.Loop() {
			resp, err := c.Get(srv.URL)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatal(resp.Status)
			}
		}
	}
	b.Run("impl=bare", func(b *testing.B) {
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		get(b, &http.Client{Transport: tr})
	})
	b.Run("impl=retryhttp", func(b *testing.B) {
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		rt, err := retryhttp.NewTransport(tr, firstTryStrategy)
		if err != nil {
			b.Fatal(err)
		}
		get(b, &http.Client{Transport: rt})
	})
	b.Run("impl=retryhttp-unwatched", func(b *testing.B) {
		// A base transport that is not net/http's own (a wrapper around
		// one) is not watched for hidden resends, and without a budget's
		// stop or a timeout its attempts need no context of their own.
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		rt, err := retryhttp.NewTransport(wrapped{tr}, firstTryStrategy, retry.WithoutBudget())
		if err != nil {
			b.Fatal(err)
		}
		get(b, &http.Client{Transport: rt})
	})
	b.Run("impl=retryhttp-nobudget", func(b *testing.B) {
		// No budget: a hidden resend is counted and never refused, so the
		// attempt needs no context of its own to stop one.
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		rt, err := retryhttp.NewTransport(tr, firstTryStrategy, retry.WithoutBudget())
		if err != nil {
			b.Fatal(err)
		}
		get(b, &http.Client{Transport: rt})
	})
	b.Run("impl=retryhttp-hedged", func(b *testing.B) {
		// Hedged after a second: the GET answers long before, so this is
		// what hedging costs a request that never needs it, beside
		// impl=retryhttp over a transport that does I/O.
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		rt, err := retryhttp.NewTransport(tr, firstTryStrategy, retry.WithHedging(retry.Hedging{Attempts: 2, Delay: time.Second}))
		if err != nil {
			b.Fatal(err)
		}
		get(b, &http.Client{Transport: rt})
	})
	b.Run("impl=retryablehttp", func(b *testing.B) {
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		c := retryablehttp.NewClient()
		c.HTTPClient = &http.Client{Transport: tr}
		c.Logger = nil
		get(b, c.StandardClient())
	})
}

// wrapped is a RoundTripper around another, which retryhttp does not see
// through.
type wrapped struct{ http.RoundTripper }
