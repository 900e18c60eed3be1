// Command collapse shows a retry collapse on loopback, and the default budget that prevents it.
//
// A server near its capacity is pushed over by a short spike; with no
// budget, its clients' retries keep its queue full after the spike has
// gone. The default budget of a retryhttp transport stops retrying when
// most calls fail, and the server recovers.
//
// The server has 4 workers of 10 ms (400 requests a second) and a queue
// of 200 (a full queue's wait, 0.5 s, is past the clients' 250 ms attempt
// timeout); requests arrive at 320 a second, three times that for a
// second from t = 2 s; a request whose client gave up is served anyway.
// Each request is a retryhttp transport's loop of 4 attempts with
// exponential jitter from 250 ms, once with no budget and once with the
// transport's default. It prints the requests that succeeded each second,
// for both, within 20 s.
//
//	go run ./examples/collapse
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

// settings are a run's: the arrivals and the spike, and how long it lasts.
type settings struct {
	rate     float64
	spikeAt  time.Duration
	duration time.Duration
}

func main() {
	duration := flag.Duration("duration", 7*time.Second, "how long each run lasts")
	flag.Parse()
	s := settings{rate: 320, spikeAt: 2 * time.Second, duration: min(max(*duration, 3*time.Second), 9*time.Second)}
	if err := run(os.Stdout, s); err != nil {
		fmt.Fprintln(os.Stderr, "collapse:", err)
		os.Exit(1)
	}
}

// strategy is every request's: 4 attempts, exponential jitter from 250 ms.
var strategy = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 4,
	Backoff: retrypolicy.Backoff{Kind: retrypolicy.ExponentialWithJitter, BaseDelay: 250 * time.Millisecond, Multiplier: 2}}

// run runs the spike with no budget, then with the default one, and
// prints the goodput a second of each.
func run(out io.Writer, s settings) error {
	fmt.Fprintf(out, "%v requests a second to 4 workers of 10ms (400 a second), a queue of 200, attempts timing out after 250ms;\nthree times the load for 1s from t = %v. Requests that succeeded, each second:\n\n", s.rate, s.spikeAt)
	for _, c := range []struct {
		name string
		opts []retry.Option
	}{{"no budget", []retry.Option{retry.WithoutBudget()}}, {"the default budget", nil}} {
		goodput, err := spike(s, c.opts)
		if err != nil {
			return err
		}
		cells := make([]string, len(goodput))
		for i, n := range goodput {
			cells[i] = fmt.Sprintf("%4d", n)
		}
		fmt.Fprintf(out, "%-20s %s\n", c.name, strings.Join(cells, " "))
	}
	return nil
}

// spike runs one server and its clients through the spike, and returns
// the requests that succeeded each second.
func spike(s settings, opts []retry.Option) ([]int, error) {
	srv := newServer(4, 200, 10*time.Millisecond)
	defer srv.close()
	base := &http.Transport{MaxIdleConnsPerHost: 1000}
	defer base.CloseIdleConnections()
	tr, err := retryhttp.NewTransport(base, strategy, append([]retry.Option{retry.WithAttemptTimeout(250 * time.Millisecond)}, opts...)...)
	if err != nil {
		return nil, err
	}
	secs := int(s.duration / time.Second)
	goodput := make([]int, secs)
	var mu sync.Mutex
	var wg sync.WaitGroup
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Now()
	for next := time.Duration(0); next < s.duration; {
		rate := s.rate
		if next >= s.spikeAt && next < s.spikeAt+time.Second {
			rate *= 3
		}
		next += time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
		time.Sleep(time.Until(start.Add(next)))
		wg.Go(func() {
			resp, err := tr.RoundTrip(mustGet(srv.URL))
			if err != nil {
				return
			}
			resp.Body.Close()
			if sec := int(time.Since(start) / time.Second); resp.StatusCode == http.StatusOK && sec < secs {
				mu.Lock()
				goodput[sec]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return goodput, nil
}

// mustGet returns a GET request of url, which is the server's own.
func mustGet(url string) *http.Request {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	return req
}

// server is an HTTP server on loopback with workers each serving one
// request at a time for service, and a FIFO queue of at most queue
// requests: a request beyond it is answered 503 at once. A request whose
// client gave up stays queued and is served anyway.
type server struct {
	*httptest.Server
	jobs    chan chan struct{}
	stop    context.CancelFunc
	workers sync.WaitGroup
}

func newServer(workers, queue int, service time.Duration) *server {
	s := &server{jobs: make(chan chan struct{}, queue)}
	ctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	for range workers {
		s.workers.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case done := <-s.jobs:
					time.Sleep(service)
					close(done)
				}
			}
		})
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		done := make(chan struct{})
		select {
		case s.jobs <- done:
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		select {
		case <-done:
			io.WriteString(w, "ok")
		case <-r.Context().Done(): // the client gave up; the work is done anyway
		}
	}))
	return s
}

func (s *server) close() {
	s.Server.Close()
	s.stop()
	s.workers.Wait()
}
