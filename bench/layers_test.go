package bench

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inMemory is a transport that serves each request with h, from a context
// of the server's own, as a server on the other end of a connection would.
func inMemory(h http.Handler) http.RoundTripper {
	return roundTrip(func(req *http.Request) (*http.Response, error) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req.Clone(context.Background()))
		return rec.Result(), nil
	})
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// hopThrough is a service that calls the next hop through client and
// answers 503 when that fails.
func hopThrough(client *http.Client) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, "http://next.test/", nil)
		resp, err := client.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if err != nil || resp.StatusCode != http.StatusOK {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
}

// chainOf builds a chain of four hops over a bottom that is down (a
// client, then three services, each calling the next with the client
// newClient makes) and returns the bottom's calls for one request.
func chainOf(t *testing.T, newClient func(next http.RoundTripper) *http.Client, wrap func(http.Handler) http.Handler) int64 {
	var bottom atomic.Int64
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		bottom.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	for range 3 {
		h = wrap(hopThrough(newClient(inMemory(h))))
	}
	req, _ := http.NewRequest(http.MethodGet, "http://top.test/", nil)
	resp, err := newClient(inMemory(h)).Do(req)
	if err == nil {
		resp.Body.Close()
	}
	return bottom.Load()
}

// TestAChainBesideAPeers: through a chain of four hops with the bottom
// down, one request makes 625 calls at the bottom with go-retryablehttp at
// every hop (its default 5 attempts, waits of 1 ms: 5^4), 81 with
// retryhttp's 3 attempts and the one-layer rule off (3^4), and 3 with it
// on.
func TestAChainBesideAPeers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		peer := chainOf(t, func(next http.RoundTripper) *http.Client {
			c := retryablehttp.NewClient()
			c.HTTPClient = &http.Client{Transport: next}
			c.RetryWaitMin, c.RetryWaitMax = time.Millisecond, time.Millisecond
			c.Logger = log.New(io.Discard, "", 0)
			return c.StandardClient()
		}, func(h http.Handler) http.Handler { return h })
		three := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3,
			Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}
		ours := func(opts ...retry.Option) int64 {
			return chainOf(t, func(next http.RoundTripper) *http.Client {
				tr, err := retryhttp.NewTransport(next, three, opts...)
				require.NoError(t, err)
				return &http.Client{Transport: tr}
			}, retryhttp.Handler)
		}
		off, on := ours(retry.WithNestedRetries(), retry.WithoutBudget()), ours() // off: no default budget either
		t.Logf("calls at the bottom for one request: go-retryablehttp %d, retryhttp without the rule %d, with it %d", peer, off, on)
		assert.Equal(t, int64(625), peer)
		assert.Equal(t, int64(81), off)
		assert.Equal(t, int64(3), on)
	})
}
