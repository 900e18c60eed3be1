package retryhttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	threeAttempts = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}
	oneAttempt = retrypolicy.Strategy{Kind: retrypolicy.None}
)

// served is a network in memory: a transport that serves each request
// with h, as a server on the other end of a connection would, its request
// carrying the client's context (as a server's would not: a test of
// layers across HTTP gives each handler a context of its own, below).
func served(h http.Handler) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		rec := httptest.NewRecorder()
		// A server starts from a context of its own, not the client's.
		h.ServeHTTP(rec, req.Clone(context.Background()))
		return rec.Result(), nil
	})
}

// counted counts the requests h serves.
func counted(n *atomic.Int32, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1); h.ServeHTTP(w, r) })
}

// down is a dependency that always answers 503.
var down = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })

// proxy is a service's handler: it calls next through client with the
// request's context, and answers 503 when the call fails.
func proxy(client *http.Client, next string) http.Handler {
	return retryhttp.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, next, nil)
		resp, err := client.Do(req)
		if err != nil || resp.StatusCode >= 500 {
			if resp != nil {
				resp.Body.Close()
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		resp.Body.Close()
		w.WriteHeader(http.StatusOK)
	}))
}

// chainCalls runs a chain of four layers (a client, then three services,
// each calling the next through a retryhttp transport) over a bottom that
// is down, and returns the calls each service and the bottom saw, and the
// status the client got.
func chainCalls(t *testing.T, lowest retrypolicy.Strategy, opts ...retry.Option) ([4]int32, int) {
	t.Helper()
	var calls [4]int32
	var counters [4]atomic.Int32
	var h http.Handler = counted(&counters[3], down)
	for i := 2; i >= 0; i-- {
		s := threeAttempts
		if i == 2 {
			s = lowest
		}
		tr, err := retryhttp.NewTransport(served(h), s, opts...)
		require.NoError(t, err)
		h = counted(&counters[i], proxy(&http.Client{Transport: tr}, "http://next.test/"))
	}
	tr, err := retryhttp.NewTransport(served(h), threeAttempts, opts...)
	require.NoError(t, err)
	resp, err := (&http.Client{Transport: tr}).Get("http://top.test/")
	require.NoError(t, err)
	resp.Body.Close()
	for i := range calls {
		calls[i] = counters[i].Load()
	}
	return calls, resp.StatusCode
}

// TestAChainRetriesAtOneLayer: through four layers of 3 attempts with the
// bottom down, the bottom sees 3 calls a request and each service 1; with
// WithNestedRetries and WithoutBudget at every layer, 81 at the bottom
// (3^4); with WithNestedRetries alone, the default budgets stop it at 29. With the
// lowest service's client making a single attempt, the layer above it
// retries: 3 calls at the bottom, 3 at the lowest service.
func TestAChainRetriesAtOneLayer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls, status := chainCalls(t, threeAttempts)
		assert.Equal(t, [4]int32{1, 1, 1, 3}, calls)
		assert.Equal(t, http.StatusServiceUnavailable, status)

		// The rule off, and the budgets the transports take by default
		// too: nothing but the strategies bounds the storm.
		calls, _ = chainCalls(t, threeAttempts, retry.WithNestedRetries(), retry.WithoutBudget())
		assert.Equal(t, [4]int32{3, 9, 27, 81}, calls)

		// The rule off, the default budgets on: each transport's host
		// budget (0.1, 10) grants its burst of 10 retries and then none,
		// as no call ends well. The client: 1 + 2 retries = 3; the first
		// service: 3 + 6 = 9; the second: 9 + 10 = 19; the third: 19 +
		// 10 = 29 at the bottom.
		calls, _ = chainCalls(t, threeAttempts, retry.WithNestedRetries())
		assert.Equal(t, [4]int32{3, 9, 19, 29}, calls)

		calls, _ = chainCalls(t, oneAttempt)
		assert.Equal(t, [4]int32{1, 1, 3, 3}, calls)
	})
}

// TestAMarkedResponseIsReturnedAsReceived: a service that retried below
// answers a marked 503, which the client's transport returns unread after
// one request, the mark on it; with WithNestedRetries it retries it.
func TestAMarkedResponseIsReturnedAsReceived(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dep, service atomic.Int32
		handler := counted(&service, retryhttp.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			retry.Do(r.Context(), threeAttempts, func(context.Context) (int, error) { dep.Add(1); return 0, errors.New("down") })
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("tried 3 times"))
		})))
		tr, err := retryhttp.NewTransport(served(handler), threeAttempts)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(mustRequest(t))
		require.NoError(t, err)
		defer resp.Body.Close()
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		assert.Equal(t, "1", resp.Header.Get(retryhttp.RetriedBelowHeader))
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, "tried 3 times", string(body), "as received, unread")
		assert.Equal(t, int32(1), service.Load())
		assert.Equal(t, int32(3), dep.Load())

		nested, err := retryhttp.NewTransport(served(handler), threeAttempts, retry.WithNestedRetries())
		require.NoError(t, err)
		resp, err = nested.RoundTrip(mustRequest(t))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, int32(4), service.Load(), "three more requests")

		// A transport that retries nested still reports the marked
		// response to the loop whose attempt sent the request.
		calls := 0
		_, err = retry.Do(context.Background(), threeAttempts, func(ctx context.Context) (int, error) {
			calls++
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/", nil)
			resp, err := nested.RoundTrip(req)
			if err != nil {
				return 0, err
			}
			resp.Body.Close()
			return 0, errors.New(resp.Status)
		})
		assert.Equal(t, 1, calls)
		ge, _ := errors.AsType[*retry.GiveUpError](err)
		assert.Equal(t, retry.RetriedBelow, ge.Reason)
	})
}

// TestAMarkedResponseToARequestSentOnceReports: a POST without an
// idempotency key is sent once, and a marked 503 in answer still reports
// to the loop whose attempt sent it: that loop gives up RetriedBelow after
// one attempt. Until every layer reported whatever it may resend, the loop
// made 3 attempts, each retried below.
func TestAMarkedResponseToARequestSentOnceReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var service atomic.Int32
		marked := counted(&service, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set(retryhttp.RetriedBelowHeader, "1")
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		tr, err := retryhttp.NewTransport(served(marked), threeAttempts)
		require.NoError(t, err)
		calls := 0
		_, err = retry.Do(context.Background(), threeAttempts, func(ctx context.Context) (int, error) {
			calls++
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://svc.test/orders", strings.NewReader("order"))
			resp, err := tr.RoundTrip(req)
			if err != nil {
				return 0, err
			}
			resp.Body.Close()
			return 0, errors.New(resp.Status)
		})
		assert.Equal(t, 1, calls)
		assert.Equal(t, int32(1), service.Load())
		ge, _ := errors.AsType[*retry.GiveUpError](err)
		require.NotNil(t, ge, "%v", err)
		assert.Equal(t, retry.RetriedBelow, ge.Reason)
	})
}

// TestRetryHTTPInsideRetry: a transport that gives up after retrying
// reports to the loop whose attempt sent the request: the loop gives up
// RetriedBelow, and the server saw 3 calls, not 9.
func TestRetryHTTPInsideRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var server atomic.Int32
		tr, err := retryhttp.NewTransport(served(counted(&server, down)), threeAttempts)
		require.NoError(t, err)
		_, err = retry.Do(context.Background(), threeAttempts, func(ctx context.Context) (int, error) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/", nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				return 0, err
			}
			resp.Body.Close()
			return 0, errors.New(resp.Status)
		})
		ge, _ := errors.AsType[*retry.GiveUpError](err)
		require.NotNil(t, ge, "%v", err)
		assert.Equal(t, retry.RetriedBelow, ge.Reason)
		assert.Equal(t, int32(3), server.Load())
	})
}

// TestMarksThatMeanNothing: a mark on a status that is not retried (404)
// does not report, so the loop above retries; a mark a client puts on a
// request is not a report, so a service that retried nothing answers an
// unmarked 503, which the client retries.
func TestMarksThatMeanNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		notFound := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set(retryhttp.RetriedBelowHeader, "1")
			w.WriteHeader(http.StatusNotFound)
		})
		tr, err := retryhttp.NewTransport(served(notFound), threeAttempts)
		require.NoError(t, err)
		calls := 0
		_, err = retry.Do(context.Background(), threeAttempts, func(ctx context.Context) (int, error) {
			calls++
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/", nil)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
			return 0, errors.New(resp.Status)
		})
		assert.Equal(t, 3, calls)
		ge, _ := errors.AsType[*retry.GiveUpError](err)
		assert.Equal(t, retry.AttemptsExhausted, ge.Reason)

		var service atomic.Int32
		tr, err = retryhttp.NewTransport(served(counted(&service, retryhttp.Handler(down))), threeAttempts)
		require.NoError(t, err)
		req := mustRequest(t)
		req.Header.Set(retryhttp.RetriedBelowHeader, "1")
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Empty(t, resp.Header.Get(retryhttp.RetriedBelowHeader))
		assert.Equal(t, int32(3), service.Load())
	})
}

func mustRequest(t *testing.T) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://svc.test/", nil)
	require.NoError(t, err)
	return req
}
