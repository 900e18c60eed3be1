package retryhttp_test

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
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
	hedgeStrategy = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3, Window: time.Minute, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Second}}
	hedge20ms     = retry.WithHedging(retry.Hedging{Delay: 20 * time.Millisecond})
)

// slowFirst is a handler whose first request hangs until its client gives
// up on it, and whose others answer at once with their attempt's number.
func slowFirst(n *atomic.Int32, gone *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		_, _ = io.Copy(io.Discard, r.Body) // so that the server sees its client go
		if i == 1 {
			select {
			case <-r.Context().Done():
				gone.Add(1)
				return
			case <-time.After(time.Minute):
			}
		}
		_, _ = io.WriteString(w, "attempt "+strconv.Itoa(int(i)))
	})
}

// TestAHedgedGETTheFirstAnswerWins: through net/http on both sides, a GET
// whose first attempt hangs is answered by the hedge sent 20 ms after it;
// the server sees two attempts and the first one's client going away; the
// hedge is paid for from the budget, which the call refills by 0.1.
func TestAHedgedGETTheFirstAnswerWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n, gone atomic.Int32
		srv := newPipeServer(t, slowFirst(&n, &gone))
		b := retry.DefaultBudget()
		tr, err := retryhttp.NewTransport(srv.Transport, hedgeStrategy, hedge20ms, retry.WithBudget(b))
		require.NoError(t, err)
		start := time.Now()
		resp, err := (&http.Client{Transport: tr}).Get(srv.URL + "/x")
		require.NoError(t, err)
		assert.Equal(t, 20*time.Millisecond, time.Since(start))
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, "attempt 2", string(body))
		synctest.Wait()
		assert.Equal(t, int32(2), n.Load(), "attempts the server saw")
		assert.Equal(t, int32(1), gone.Load(), "the loser's request was cancelled")
		assert.InDelta(t, 9.1, b.Tokens(), 1e-9)
	})
}

// TestWhichRequestsHedge: GET hedges; a PUT, and a POST with an
// idempotency key, only when HedgeRequest opts them in; a POST without a
// key never.
func TestWhichRequestsHedge(t *testing.T) {
	for _, c := range []struct {
		method string
		key    bool
		optIn  bool
		want   int32
	}{
		{http.MethodGet, false, false, 2},
		{http.MethodHead, false, false, 2},
		{http.MethodPut, false, false, 1},
		{http.MethodPut, false, true, 2},
		{http.MethodPost, true, false, 1},
		{http.MethodPost, true, true, 2},
		{http.MethodPost, false, true, 1},
	} {
		t.Run(c.method+strconv.FormatBool(c.key)+strconv.FormatBool(c.optIn), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var n, gone atomic.Int32
				srv := newPipeServer(t, slowFirst(&n, &gone))
				tr, err := retryhttp.NewTransport(srv.Transport, hedgeStrategy, hedge20ms)
				require.NoError(t, err)
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				if c.optIn {
					ctx = retryhttp.HedgeRequest(ctx)
				}
				req, err := http.NewRequestWithContext(ctx, c.method, srv.URL, strings.NewReader("body"))
				require.NoError(t, err)
				if c.key {
					req.Header.Set("Idempotency-Key", "k1")
				}
				if resp, err := tr.RoundTrip(req); err == nil {
					resp.Body.Close()
				}
				synctest.Wait()
				assert.Equal(t, c.want, n.Load())
			})
		})
	}
}

// closeCounted is a response body whose Close is counted.
type closeCounted struct {
	io.Reader
	closed *atomic.Int32
}

func (b *closeCounted) Close() error { b.closed.Add(1); return nil }

// lateBase answers its first request after 30 ms whatever its context
// (a loser that still answers), a 503 to its second at once, and 200 to
// the third; every body counts its closing.
type lateBase struct {
	n      atomic.Int32
	closed atomic.Int32
	ctxs   sync.Map // attempt -> its request's context
}

func (b *lateBase) RoundTrip(req *http.Request) (*http.Response, error) {
	i := b.n.Add(1)
	b.ctxs.Store(i, req.Context())
	status := http.StatusOK
	switch i {
	case 1:
		time.Sleep(30 * time.Millisecond)
	case 2:
		status = http.StatusServiceUnavailable
	}
	return &http.Response{StatusCode: status, Header: http.Header{}, Body: &closeCounted{strings.NewReader("x"), &b.closed}, Request: req}, nil
}

// TestALosersBodyIsClosedAndTheWinnersContextKept: the hedge's 503 sends
// the third attempt at once, which wins; the 503's body and the late
// loser's are drained and closed; the winner's request context lives
// until the caller closes its body.
func TestALosersBodyIsClosedAndTheWinnersContextKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &lateBase{}
		tr, err := retryhttp.NewTransport(base, hedgeStrategy, retry.WithHedging(retry.Hedging{Attempts: 3, Delay: 20 * time.Millisecond}))
		require.NoError(t, err)
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://service.test/", nil)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, int32(3), base.n.Load())
		assert.Equal(t, int32(2), base.closed.Load(), "the 503's body and the loser's")
		winner, _ := base.ctxs.Load(int32(3))
		assert.NoError(t, winner.(context.Context).Err(), "the winner's context before its body is closed")
		loser, _ := base.ctxs.Load(int32(1))
		assert.Error(t, loser.(context.Context).Err(), "the loser's context")
		resp.Body.Close()
		assert.Error(t, winner.(context.Context).Err(), "the winner's context after")
		assert.Equal(t, 3, retryhttp.Attempt(winner.(context.Context)))
	})
}

// TestHedgedRequestsLeaveNoGoroutine: 10,000 hedged GETs through net/http,
// each with a loser, leave no goroutine once idle connections are closed.
func TestHedgedRequestsLeaveNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n, gone atomic.Int32
		srv := newPipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1)%2 == 1 {
				<-r.Context().Done() // every call's first attempt loses
				gone.Add(1)
				return
			}
			_, _ = io.WriteString(w, "ok")
		}))
		tr, err := retryhttp.NewTransport(srv.Transport, hedgeStrategy, hedge20ms, retry.WithoutBudget())
		require.NoError(t, err)
		client := &http.Client{Transport: tr}
		before := runtime.NumGoroutine()
		const calls = 10_000
		for range calls {
			resp, err := client.Get(srv.URL)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		srv.Transport.CloseIdleConnections()
		synctest.Wait()
		assert.Equal(t, int32(2*calls), n.Load())
		assert.Equal(t, int32(calls), gone.Load())
		// The count is the process's: a goroutine of the test runner's may
		// start meanwhile, so 2 are tolerated; a leak would be one a call.
		assert.LessOrEqual(t, runtime.NumGoroutine(), before+2, "goroutines left by hedged calls")
	})
}

// hostLatency is an in-memory transport whose requests take 2 ms, but for
// those with a "slow" query, which take 30 ms (their hedges too); it counts
// the requests of each host.
type hostLatency struct {
	mu    sync.Mutex
	sends map[string]int
}

func (h *hostLatency) RoundTrip(req *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.sends[req.URL.Host]++
	h.mu.Unlock()
	d := 2 * time.Millisecond
	if req.URL.RawQuery == "slow" {
		d = 30 * time.Millisecond
	}
	select {
	case <-time.After(d):
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("ok")), Request: req}, nil
}

// TestEachHostFollowsItsOwnLatency: a host whose last calls answered in
// 2 ms hedges a slow request after 2 ms; another host, not yet seen 20
// times, waits the fixed delay of 50 ms, so its 30 ms request is sent
// once.
func TestEachHostFollowsItsOwnLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &hostLatency{sends: map[string]int{}}
		tr, err := retryhttp.NewTransport(base, hedgeStrategy, // a budget per host, by default
			retry.WithHedging(retry.Hedging{Delay: 50 * time.Millisecond, Quantile: 0.5}))
		require.NoError(t, err)
		get := func(url string) {
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
		}
		for range retry.HedgeWarmup {
			get("http://warm.test/")
		}
		get("http://warm.test/?slow")
		get("http://cold.test/?slow")
		assert.Equal(t, retry.HedgeWarmup+2, base.sends["warm.test"], "the warm host hedged its slow request")
		assert.Equal(t, 1, base.sends["cold.test"], "the cold host kept its fixed delay")
	})
}
