package retryhttp_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

// throttleGet sends a GET of url through tr, and returns its status, or 0
// with the reason when the transport gave up without a response.
func throttleGet(t *testing.T, tr http.RoundTripper, url string) (int, retry.Reason) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		var gu *retry.GiveUpError
		require.ErrorAs(t, err, &gu)
		return 0, gu.Reason
	}
	resp.Body.Close()
	return resp.StatusCode, 0
}

// TestEachHostHasAThrottleOfItsOwn: a host that answers 503 to every
// request (sent once: the strategy none) soon has most of its requests
// rejected unsent, giving up Throttled; another host, which answers 200,
// never has one rejected. A rejected request is not sent: the server
// counts only the requests let through.
func TestEachHostHasAThrottleOfItsOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newHostServer()
		srv.status["down.test"] = 503
		seed := uint64(0)
		tr, err := retryhttp.NewTransport(srv, retrypolicy.Strategy{Kind: retrypolicy.None}, retryhttp.WithHostThrottles(func() (*retry.Throttle, error) {
			th, err := retry.NewThrottle(2, time.Minute)
			seed++
			th.Seed(seed)
			return th, err
		}))
		require.NoError(t, err)
		throttled := 0
		for range 100 {
			code, why := throttleGet(t, tr, "http://down.test/")
			if why == retry.Throttled {
				throttled++
			} else {
				assert.Equal(t, 503, code)
			}
			code, why = throttleGet(t, tr, "http://up.test/")
			assert.Equal(t, 200, code)
			assert.Zero(t, why)
		}
		assert.Equal(t, 100, srv.sent["up.test"])
		assert.Equal(t, 100, srv.sent["down.test"]+throttled, "a rejected request is not sent")
		assert.Greater(t, throttled, 80, "with nothing accepted, rejections near requests/(requests+1)")
	})
}

// TestHostThrottlesConstructorAndConflicts: a constructor that fails
// refuses the transport, naming the option; a later failure makes the
// host share the overflow entry and is told once, as a
// *retryhttp.HostThrottleError naming the host; retry.WithThrottle and a
// nil constructor are refused.
func TestHostThrottlesConstructorAndConflicts(t *testing.T) {
	boom := errors.New("boom")
	_, err := retryhttp.NewTransport(nil, threeAttempts, retryhttp.WithHostThrottles(func() (*retry.Throttle, error) { return nil, boom }))
	assert.EqualError(t, err, "retryhttp: retryhttp.WithHostThrottles: boom")
	_, err = retryhttp.NewTransport(nil, threeAttempts, retryhttp.WithHostThrottles(func() (*retry.Throttle, error) { return nil, nil }))
	assert.EqualError(t, err, "retryhttp: retryhttp.WithHostThrottles: the function made no throttle")
	_, err = retryhttp.NewTransport(nil, threeAttempts, retryhttp.WithHostThrottles(nil))
	assert.EqualError(t, err, "retryhttp: retryhttp.WithHostThrottles: the function is nil")
	th, err := retry.NewThrottle(2, time.Second)
	require.NoError(t, err)
	_, err = retryhttp.NewTransport(nil, threeAttempts, retry.WithThrottle(th))
	assert.EqualError(t, err, "retryhttp: retry.WithThrottle: a transport takes throttles per host; give retryhttp.WithHostThrottles")

	synctest.Test(t, func(t *testing.T) {
		calls := 0
		newThrottle := func() (*retry.Throttle, error) {
			if calls++; calls > 2 {
				return nil, boom
			}
			return retry.NewThrottle(2, time.Second)
		}
		var told []retry.Event
		srv := newHostServer()
		tr, err := retryhttp.NewTransport(srv, threeAttempts, retryhttp.WithHostThrottles(newThrottle), retry.WithoutBudget(), retry.WithObserver(func(e retry.Event) {
			if e.Failures == 0 {
				told = append(told, e)
			}
		}))
		require.NoError(t, err)
		assert.Equal(t, 1, calls, "once at construction: the overflow entry")
		hostGet(t, tr, "http://a.test/")
		hostGet(t, tr, "http://a.test/")
		hostGet(t, tr, "http://b.test/")
		hostGet(t, tr, "http://b.test/")
		assert.Equal(t, 3, calls, "once for each new host")
		require.Len(t, told, 1, "told once")
		var he *retryhttp.HostThrottleError
		require.ErrorAs(t, told[0].Err, &he)
		assert.Equal(t, "http://b.test:80", he.Host)
		assert.ErrorIs(t, told[0].Err, boom)
	})
}

// ExampleWithHostThrottles: each host gets a throttle of its own; a host
// that fails every request soon has most of them rejected unsent, while
// the others go out as before.
func ExampleWithHostThrottles() {
	var reached atomic.Int64
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer down.Close()
	tr, err := retryhttp.NewTransport(nil, retrypolicy.Strategy{Kind: retrypolicy.None},
		retryhttp.WithHostThrottles(func() (*retry.Throttle, error) {
			th, err := retry.NewThrottle(2, time.Minute) // k = 2 (the window should hold 5 requests or more)
			if err == nil {
				th.Seed(1) // for the same output on every run
			}
			return th, err
		}))
	if err != nil {
		panic(err)
	}
	client := &http.Client{Transport: tr}
	rejected := 0
	for range 50 {
		resp, err := client.Get(down.URL)
		if err != nil {
			if gu, ok := errors.AsType[*retry.GiveUpError](err); ok && gu.Reason == retry.Throttled {
				rejected++
			}
			continue
		}
		resp.Body.Close()
	}
	fmt.Println("reached the server:", reached.Load(), "rejected:", rejected)
	// Output: reached the server: 7 rejected: 43
}

// TestAnEntryWhoseThrottleRejectsIsNotEvicted: with the table full, new
// hosts take the place of hosts whose throttle rejects nothing, never of
// one whose throttle rejects: a down host stays throttled after 2,048 new
// hosts (a fresh throttle would let its first 5 requests through).
func TestAnEntryWhoseThrottleRejectsIsNotEvicted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newHostServer()
		seed := uint64(0)
		tr, err := retryhttp.NewTransport(srv, retrypolicy.Strategy{Kind: retrypolicy.None}, retry.WithoutBudget(),
			retryhttp.WithHostThrottles(func() (*retry.Throttle, error) {
				th, err := retry.NewThrottle(1, time.Minute)
				seed++
				th.Seed(seed)
				return th, err
			}))
		require.NoError(t, err)
		srv.status["down.test"] = 503
		for range 20 {
			throttleGet(t, tr, "http://down.test/")
		}
		for i := range retryhttp.MaxHosts - 1 {
			hostGet(t, tr, fmt.Sprintf("http://h%d.test/", i))
		}
		for i := range 2 * retryhttp.MaxHosts {
			hostGet(t, tr, fmt.Sprintf("http://r%d.test/", i))
		}
		clear(srv.sent)
		for range 5 {
			throttleGet(t, tr, "http://down.test/")
		}
		assert.Less(t, srv.sent["down.test"], 5, "still throttled")
	})
}
