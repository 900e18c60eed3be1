package retryhttp_test

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

// hostServer answers each request with the status its host's entry of
// status gives (200 when none), and counts the requests each host gets.
type hostServer struct {
	status map[string]int
	sent   map[string]int
}

func newHostServer() *hostServer {
	return &hostServer{status: map[string]int{}, sent: map[string]int{}}
}

func (s *hostServer) RoundTrip(req *http.Request) (*http.Response, error) {
	s.sent[req.URL.Host]++
	code := s.status[req.URL.Host]
	if code == 0 {
		code = 200
	}
	return &http.Response{StatusCode: code, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}

// hostGet sends a GET of url through tr, and returns its status.
func hostGet(t *testing.T, tr http.RoundTripper, url string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// TestOneServerSpelledManyWaysHasOneBudget: the host table keys a server
// by its scheme, its host in lower case without a trailing dot, and its
// port as a number with the scheme's default filled in, so 40 spellings
// of one server that always answers 503 get the default budget's burst of
// 10 retries in all (not 10 each, 400), and its https side a budget
// of its own.
func TestOneServerSpelledManyWaysHasOneBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newHostServer()
		tr, err := retryhttp.NewTransport(srv, threeAttempts)
		require.NoError(t, err)
		n := 0
		for _, host := range []string{"svc.test", "SVC.test", "Svc.Test", "svc.TEST"} {
			for _, dot := range []string{"", "."} {
				for _, port := range []string{"", ":80", ":080", ":0080", ":00080"} {
					srv.status[host+dot+port] = 503
					assert.Equal(t, 503, hostGet(t, tr, "http://"+host+dot+port+"/"))
					n++
				}
			}
		}
		total := 0
		for _, c := range srv.sent {
			total += c
		}
		assert.Equal(t, 40, n)
		assert.Equal(t, 40+10, total, "40 requests and one burst of 10 retries")
		srv.status["svc.test:443"], srv.status["svc.test"] = 503, 503
		clear(srv.sent)
		for range 5 {
			hostGet(t, tr, "https://svc.test:443/")
			hostGet(t, tr, "https://SVC.test/")
		}
		assert.Equal(t, 10+10, srv.sent["svc.test:443"]+srv.sent["SVC.test"], "https is a server of its own: its own burst")
	})
}

// TestAHostBudgetsConstructor: NewTransport calls it once, and refuses the
// transport when it fails; then once per new host. A later failure makes
// the host share the overflow budget (made at construction), and is told
// to the observers once, with an Event of no failure whose Err is a
// *retryhttp.HostBudgetError naming the host.
func TestAHostBudgetsConstructor(t *testing.T) {
	boom := errors.New("boom")
	_, err := retryhttp.NewTransport(nil, threeAttempts, retryhttp.WithHostBudgets(func() (*retry.Budget, error) { return nil, boom }))
	assert.EqualError(t, err, "retryhttp: retryhttp.WithHostBudgets: boom")

	synctest.Test(t, func(t *testing.T) {
		calls := 0
		newBudget := func() (*retry.Budget, error) {
			if calls++; calls > 2 {
				return nil, boom
			}
			return retry.NewBudget(0, 2)
		}
		var told []retry.Event
		srv := newHostServer()
		tr, err := retryhttp.NewTransport(srv, threeAttempts, retryhttp.WithHostBudgets(newBudget), retry.WithObserver(func(e retry.Event) {
			if e.Failures == 0 {
				told = append(told, e)
			}
		}))
		require.NoError(t, err)
		assert.Equal(t, 1, calls, "once at construction: the overflow budget")
		hostGet(t, tr, "http://a.test/")
		hostGet(t, tr, "http://a.test/")
		assert.Equal(t, 2, calls, "once for a new host")
		srv.status["b.test"] = 503
		hostGet(t, tr, "http://b.test/")
		hostGet(t, tr, "http://B.test/")
		assert.Equal(t, 3, calls, "a host whose budget failed is not asked again")
		require.Len(t, told, 1, "told once")
		var he *retryhttp.HostBudgetError
		require.ErrorAs(t, told[0].Err, &he)
		assert.Equal(t, "http://b.test:80", he.Host)
		assert.ErrorIs(t, told[0].Err, boom)
		assert.Equal(t, 2+2, srv.sent["b.test"]+srv.sent["B.test"], "two requests, and the overflow budget's 2 retries")
	})
}

// TestAnEntryIsEvictedOnlyWhenItsBudgetIsFull: with the table full, a new
// host takes the place of a host whose budget is full, so it gets a budget
// of its own even when the overflow budget is drained; it never takes the
// place of a drained one, so a host's drained budget survives any number
// of new hosts (a chain of redirects to new names cannot launder it).
func TestAnEntryIsEvictedOnlyWhenItsBudgetIsFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newHostServer()
		tr, err := retryhttp.NewTransport(srv, threeAttempts)
		require.NoError(t, err)
		srv.status["drained.test"] = 503
		for range 6 {
			hostGet(t, tr, "http://drained.test/") // 10 retries: its budget spent
		}
		hosts := make([]string, retryhttp.MaxHosts-1)
		for i := range hosts {
			hosts[i] = fmt.Sprintf("h%d.test", i)
			srv.status[hosts[i]] = 503
			hostGet(t, tr, "http://"+hosts[i]+"/") // 2 retries each: not full
		}
		srv.status["over.test"] = 503
		for range 5 {
			hostGet(t, tr, "http://over.test/") // the table is full of drawn budgets: the overflow's 10 retries
		}
		assert.Equal(t, 15, srv.sent["over.test"], "over.test shares the overflow budget")
		for _, h := range hosts {
			srv.status[h] = 0
			for range 20 {
				hostGet(t, tr, "http://"+h+"/") // 20 calls that end well refill 2 tokens: full again
			}
		}
		srv.status["new.test"] = 503
		hostGet(t, tr, "http://new.test/")
		assert.Equal(t, 3, srv.sent["new.test"], "a budget of its own, in a full one's place, though the overflow is drained")
		for i := range 2 * retryhttp.MaxHosts {
			hostGet(t, tr, fmt.Sprintf("http://r%d.test/", i))
		}
		clear(srv.sent)
		hostGet(t, tr, "http://drained.test/")
		assert.Equal(t, 1, srv.sent["drained.test"], "still drained after 2,048 new hosts")
	})
}

// TestTheHostTableUnderConcurrency: requests to more hosts than the table
// holds, from several goroutines at once, some spelled apart, take their
// entries, make new ones and evict full ones without a data race (go test
// -race) and each get their answer.
func TestTheHostTableUnderConcurrency(t *testing.T) {
	tr, err := retryhttp.NewTransport(roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
	}), threeAttempts)
	require.NoError(t, err)
	var wg sync.WaitGroup
	var answered atomic.Int64
	for g := range 4 {
		wg.Go(func() {
			for i := range retryhttp.MaxHosts / 2 {
				req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://H%d.test:%04d/", i+g*400, 80), nil)
				if err != nil {
					return
				}
				if resp, err := tr.RoundTrip(req); err == nil && resp.StatusCode == 200 {
					answered.Add(1)
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(4*retryhttp.MaxHosts/2), answered.Load())
}
