// Command worker calls a flaky HTTP service through retryhttp, as a custom worker would.
//
// It prints each retry: the failure, the wait and why. The service runs on loopback in the same process: it fails twice with 503,
// then asks for two seconds with 429 and Retry-After, then answers; a
// second resource does not exist (404), which is never retried. The worker
// sends one idempotency key for every attempt of a job, so the service
// does the work once however many attempts reach it, and the transport
// knows that the POST is safe to send again.
//
//	go run ./examples/worker
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: newFlakyService()}
	go srv.Serve(ln)
	defer srv.Close()
	w := worker{base: "http://" + ln.Addr().String(), transport: http.DefaultTransport, out: os.Stdout}
	if err := w.run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

// strategy retries in milliseconds, up to 5 failures within a minute.
var strategy = retrypolicy.Strategy{
	Kind:        retrypolicy.Bounded,
	MaxAttempts: 5,
	Window:      time.Minute,
	Backoff:     retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: 200 * time.Millisecond, Multiplier: 2, MaxDelay: 5 * time.Second},
}

// worker calls the service at base over transport, and says what happens
// on out.
type worker struct {
	base      string
	transport http.RoundTripper
	out       io.Writer
}

// run does two jobs against the service, through a client whose transport
// retries over the worker's: one that succeeds after retries, one that
// fails for good at once.
func (w worker) run(ctx context.Context) error {
	base, out := w.base, w.out
	t, err := retryhttp.NewTransport(w.transport, strategy, retry.WithObserver(func(e retry.Event) {
		fmt.Fprintf(out, "  failure %d: %v; %d in the window; waiting %v (%s)\n", e.Failures, e.Err, e.Decision.InWindow, e.Wait, why(e))
	}))
	if err != nil {
		return err
	}
	client := &http.Client{Transport: t, Timeout: 30 * time.Second}
	for _, job := range []struct{ name, path string }{{"report", "/report"}, {"missing", "/missing"}} {
		fmt.Fprintf(out, "job %s:\n", job.name)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+job.path, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Idempotency-Key", "job-"+job.name) // made once, sent with every attempt
		resp, err := client.Do(req)
		if err != nil {
			fmt.Fprintf(out, "  gave up: %v\n", err)
			continue
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case err != nil:
			return err
		case resp.StatusCode == http.StatusOK:
			fmt.Fprintf(out, "  done: %s\n", body)
		default:
			fmt.Fprintf(out, "  answered %s: not a failure a retry fixes\n", resp.Status)
		}
	}
	return nil
}

// why says where a wait comes from.
func why(e retry.Event) string {
	if wait := e.Decision.Delay + e.Decision.Jitter; e.Wait > wait {
		return "the server's Retry-After, longer than the backoff's " + wait.String()
	}
	if e.Decision.InWindow == 1 {
		return "the backoff after 1 failure"
	}
	return "the backoff after " + strconv.Itoa(e.Decision.InWindow) + " failures"
}

// flakyService fails each idempotency key's first attempts the same way,
// and does the work once per key.
type flakyService struct {
	mu       sync.Mutex
	attempts map[string]int
	done     map[string]string
}

func newFlakyService() *flakyService {
	return &flakyService{attempts: map[string]int{}, done: map[string]string{}}
}

func (s *flakyService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/report" {
		http.NotFound(w, r)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts[key]++
	switch s.attempts[key] {
	case 1, 2:
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	case 3:
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	if _, ok := s.done[key]; !ok {
		s.done[key] = "report " + strconv.Itoa(len(s.done)+1) + " written"
	}
	fmt.Fprint(w, s.done[key])
}
