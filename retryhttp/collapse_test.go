package retryhttp_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

// queueServer is a server in memory of the collapse what-if's shape:
// workers each serving one request at a time for service, a FIFO queue of
// at most queue requests (a request beyond it is answered 503 at once),
// and a request whose client gave up served anyway: its answer is
// dropped, the work wasted.
type queueServer struct {
	service time.Duration
	jobs    chan chan int // each request's answer, once served
	stop    context.CancelFunc
	workers sync.WaitGroup
}

// newQueueServer starts the workers; close stops them.
func newQueueServer(workers, queue int, service time.Duration) *queueServer {
	s := &queueServer{service: service, jobs: make(chan chan int, queue)}
	var ctx context.Context
	ctx, s.stop = context.WithCancel(context.Background())
	for range workers {
		s.workers.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case answer := <-s.jobs:
					time.Sleep(s.service)
					answer <- http.StatusOK // buffered: an abandoned request's answer is dropped
				}
			}
		})
	}
	return s
}

// close stops the workers once each has finished its request.
func (s *queueServer) close() {
	s.stop()
	s.workers.Wait()
}

// RoundTrip queues the request, or refuses it with a 503 when the queue is
// full, and waits for its answer or the end of its context.
func (s *queueServer) RoundTrip(req *http.Request) (*http.Response, error) {
	answer := make(chan int, 1)
	select {
	case s.jobs <- answer:
	default:
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
	}
	select {
	case code := <-answer:
		return &http.Response{StatusCode: code, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
}

// collapseRun drives tr with open-loop arrivals (Poisson, seeded) at rate
// a second, times spike from at for span, over secs seconds, and returns
// the requests that succeeded in each second.
func collapseRun(t *testing.T, tr http.RoundTripper, rate, spike float64, at, span time.Duration, secs int) []int {
	goodput := make([]int, secs)
	var mu sync.Mutex
	var wg sync.WaitGroup
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Now()
	for {
		r := rate
		if since := time.Since(start); since >= at && since < at+span {
			r *= spike
		}
		time.Sleep(time.Duration(rng.ExpFloat64() / r * float64(time.Second)))
		if time.Since(start) >= time.Duration(secs)*time.Second {
			break
		}
		wg.Go(func() {
			req, err := http.NewRequest(http.MethodGet, "http://server.test/", nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				return
			}
			resp.Body.Close()
			if s := int(time.Since(start) / time.Second); resp.StatusCode == http.StatusOK && s < secs {
				mu.Lock()
				goodput[s]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return goodput
}

// recoveredAt applies the collapse what-if's rule to goodput: the first
// second from end (the trigger's end) at which the mean over it and the 4
// seconds before it is at least 90% of the mean over the 30 s before at,
// and stays so for 10 seconds; -1 for none.
func recoveredAt(goodput []int, at, end int) int {
	baseline := 0
	for s := at - 30; s < at; s++ {
		baseline += goodput[s]
	}
	good := 0
	for s := end; s < len(goodput); s++ {
		sum := 0
		for k := s - 4; k <= s; k++ {
			sum += goodput[k]
		}
		if float64(sum)/5 < 0.9*float64(baseline)/30 {
			good = 0
			continue
		}
		if good++; good == 10 {
			return s - 9
		}
	}
	return -1
}

// TestTheDefaultBudgetRecoversFromACollapse drives the real transport
// against a server of the collapse what-if's shape, scaled down (4
// workers of 100 ms, a queue of 200, 32 requests a second: the load 0.8
// of capacity, a full queue's wait 5 s against an attempt timeout of 1 s),
// through a spike of three times the load for 10 s, under a strategy of 4
// attempts with exponential jitter from 1 s. With no budget the server
// stays collapsed: goodput below half its baseline for the rest of the
// run. With the transport's default budget (a token budget that only
// requests that end well refill) it recovers by the what-if's rule before
// the run ends.
func TestTheDefaultBudgetRecoversFromACollapse(t *testing.T) {
	strategy := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 4,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.ExponentialWithJitter, BaseDelay: time.Second, Multiplier: 2}}
	const secs, at, span = 150, 30, 10
	run := func(opts ...retry.Option) []int {
		var goodput []int
		synctest.Test(t, func(t *testing.T) {
			server := newQueueServer(4, 200, 100*time.Millisecond)
			defer server.close()
			tr, err := retryhttp.NewTransport(server, strategy, append([]retry.Option{retry.WithAttemptTimeout(time.Second)}, opts...)...)
			require.NoError(t, err)
			goodput = collapseRun(t, tr, 32, 3, at*time.Second, span*time.Second, secs)
		})
		return goodput
	}

	none := run(retry.WithoutBudget())
	baseline := 0
	for _, n := range none[at-30 : at] {
		baseline += n
	}
	for s := at + span; s < secs; s++ {
		assert.Less(t, float64(none[s]), float64(baseline)/30/2, "second %d without a budget: %v", s, none[at:])
	}

	byDefault := run()
	recovered := recoveredAt(byDefault, at, at+span)
	t.Logf("with the default budget, recovered %d s after the spike; goodput from it: %v", recovered-(at+span), byDefault[at:])
	assert.GreaterOrEqual(t, recovered, at+span, "with the default budget it recovers before the run ends")
}
