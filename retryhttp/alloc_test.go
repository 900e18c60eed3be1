package retryhttp

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrypolicy/retrypolicy"
)

// scripted answers each request with the next status of its script, over
// and over; its responses' bodies are reused, so that what a round trip
// allocates is the caller's.
type scripted struct {
	statuses []int
	i        int
	bodies   []*reusable
}

type reusable struct{ bytes.Reader }

func (r *reusable) Close() error { return nil }

func (s *scripted) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	status := s.statuses[s.i%len(s.statuses)]
	body := s.bodies[s.i%len(s.bodies)]
	s.i++
	body.Reset([]byte("ok"))
	return &http.Response{StatusCode: status, Body: body, Header: http.Header{}, Request: req}, nil
}

// handResend is the least a loop that resends a failed request does with
// net/http: a clone of the request for each attempt after the first,
// with its body again from GetBody.
func handResend(rt http.RoundTripper, req *http.Request, attempts int) (*http.Response, error) {
	for a := 1; ; a++ {
		r := req
		if a > 1 {
			r = req.Clone(req.Context())
			if req.GetBody != nil {
				body, err := req.GetBody()
				if err != nil {
					return nil, err
				}
				r.Body = body
			}
		}
		resp, err := rt.RoundTrip(r)
		if err != nil || resp.StatusCode < 500 || a == attempts {
			return resp, err
		}
		resp.Body.Close()
	}
}

// TestARetryAllocatesWhatAResendNeeds: a retry of a PUT with a body, from
// the second on (the first compiles the strategy and makes the failures'
// History, once a call), allocates no more than a loop that resends it
// with net/http alone (a clone of the request, and its body again), the
// growth of the History its failures go in, and the attempt's context of
// its own (so that a report through an earlier attempt counts for none);
// the response the stub makes is counted on both sides. It runs on synctest's clock, so that
// every wait is waited on the loop's timer however slow the machine.
func TestARetryAllocatesWhatAResendNeeds(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector sync.Pool drops what it is given at random, so the drain's buffer is made again: allocations are counted without it")
	}
	synctest.Test(t, testARetryAllocates)
}

func testARetryAllocates(t *testing.T) {
	s := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Nanosecond}}
	perRetry := func(send func(rt *scripted, req *http.Request)) float64 {
		cost := func(statuses []int) float64 {
			rt := &scripted{statuses: statuses, bodies: []*reusable{{}, {}, {}, {}}}
			return testing.AllocsPerRun(50, func() {
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodPut, "http://example.test/x", strings.NewReader("payload"))
				rt.i = 0
				send(rt, req)
			})
		}
		return (cost([]int{503, 503, 503, 503, 503, 503, 503, 503, 503, 200}) - cost([]int{503, 200})) / 8
	}
	ours := perRetry(func(rt *scripted, req *http.Request) {
		tr, err := NewTransport(rt, s)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatal(err, resp)
		}
	})
	hand := perRetry(func(rt *scripted, req *http.Request) {
		resp, err := handResend(rt, req, 10)
		if err != nil || resp.StatusCode != 200 {
			t.Fatal(err, resp)
		}
	})
	// What recording the failures from the second to the ninth allocates.
	p, err := retrypolicy.Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	record := func(n int) float64 {
		return testing.AllocsPerRun(50, func() {
			h := retrypolicy.NewHistory(p)
			for i := range n {
				_ = h.Record(at.Add(time.Duration(i)), 0)
			}
		})
	}
	growth := (record(9) - record(1)) / 8
	t.Logf("allocations a retry: retryhttp %.2f, a hand resend with net/http %.2f, the History's growth %.2f", ours, hand, growth)
	if ours > hand+growth+1 {
		t.Errorf("a retry allocates %.2f times, a resend with net/http %.2f, the History's growth %.2f and its attempt's context 1", ours, hand, growth)
	}
}

// TestAFirstTryAllocatesOnlyItsAttempt: a request that succeeds at once
// allocates one object in the transport beyond what its base transport
// does, the attempt's context its loop hands the attempt (which the layers
// below report to): the options are made in NewTransport, the loop's
// state stays on the stack, and the History is made at the first failure.
func TestAFirstTryAllocatesOnlyItsAttempt(t *testing.T) {
	s := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5, Window: time.Minute,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.ExponentialWithJitter, BaseDelay: time.Second}}
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://example.test/x", nil)
	base := &scripted{statuses: []int{200}, bodies: []*reusable{{}}}
	tr, err := NewTransport(base, s)
	if err != nil {
		t.Fatal(err)
	}
	send := func(rt http.RoundTripper) func() {
		return func() {
			resp, err := rt.RoundTrip(req)
			if err != nil || resp.StatusCode != 200 {
				t.Fatal(err, resp)
			}
		}
	}
	bare, ours := testing.AllocsPerRun(100, send(base)), testing.AllocsPerRun(100, send(tr))
	if ours > bare+1 {
		t.Errorf("a first try allocates %v times through the transport, %v through its base alone (and one for its attempt)", ours, bare)
	}
}
