// Command layers runs a chain of four HTTP retry layers through an outage, with the one-layer rule and without.
//
// A client calls a gateway, which calls a service, which calls a driver's
// service, which calls a bottom dependency: four hops, each through a
// retryhttp transport of 3 attempts 1 ms apart, each service behind
// retryhttp.Handler. Requests arrive at the top at a steady rate; the
// bottom is down for the first part of the run. For the rule on (the
// default) and off (WithNestedRetries at every hop, with WithoutBudget so
// that no default budget bounds the storm either, as in the simulation,
// which has none), it prints the calls
// that reached the bottom a request and the requests that succeeded once
// it came back, beside fleet.Layers' simulation of the same chain, rate,
// outage and strategies (OnlyRetryable for the rule).
//
//	go run ./examples/layers             # real servers on loopback: 100 requests a second for 2 s, the bottom down 1 s
//	go run ./examples/layers -rate 50 -duration 4s -down 2s
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/fleet"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

// settings are a run's: the requests' rate and how long they arrive, and
// how long the bottom is down from the start.
type settings struct {
	rate           float64
	duration, down time.Duration
}

// hop is every hop's strategy: 3 attempts, 1 ms apart.
var hop = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3,
	Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}

func main() {
	s := settings{}
	flag.Float64Var(&s.rate, "rate", 100, "requests a second at the top")
	flag.DurationVar(&s.duration, "duration", 2*time.Second, "how long requests arrive")
	flag.DurationVar(&s.down, "down", time.Second, "how long the bottom is down from the start")
	flag.Parse()
	if err := run(os.Stdout, &loopback{}, s); err != nil {
		fmt.Fprintln(os.Stderr, "layers:", err)
		os.Exit(1)
	}
}

// run runs the chain with the rule on and off over net, beside the
// simulation, and prints both.
func run(out io.Writer, net network, s settings) error {
	fmt.Fprintf(out, "four layers of 3 attempts 1 ms apart; %.0f requests a second for %v; the bottom down for the first %v\n\n", s.rate, s.duration, s.down)
	fmt.Fprintf(out, "%-22s %-10s %9s %14s %10s\n", "", "", "requests", "bottom calls", "succeeded")
	for _, rule := range []bool{true, false} {
		real, err := runChain(net, s, rule)
		if err != nil {
			return err
		}
		sim, err := simulate(s, rule)
		if err != nil {
			return err
		}
		name := "one layer (default)"
		if !rule {
			name = "every layer retrying"
		}
		fmt.Fprintf(out, "%-22s %-10s %9d %14s %10d\n", name, "real", real.requests, perRequest(real.bottom, real.requests), real.succeeded)
		fmt.Fprintf(out, "%-22s %-10s %9d %14s %10d\n", "", "simulated", sim.Requests, perRequest(sim.BottomCalls, sim.Requests), sim.Succeeded)
	}
	return nil
}

// perRequest writes calls a request.
func perRequest(calls, requests int) string {
	return fmt.Sprintf("%.2f/request", float64(calls)/float64(max(requests, 1)))
}

// outcome is what a run of the chain counted.
type outcome struct {
	requests, succeeded, bottom int
}

// network serves handlers: real servers on loopback, or a network in
// memory for a test on a fake clock.
type network interface {
	// serve starts serving h and returns its URL and the transport that
	// reaches it.
	serve(h http.Handler) (string, http.RoundTripper)
	// close stops what serve started.
	close()
}

// runChain runs the chain over net: the bottom, three services and the
// client, each hop a retryhttp transport, with the rule or without.
func runChain(net network, s settings, rule bool) (outcome, error) {
	defer net.close()
	var opts []retry.Option
	if !rule {
		opts = append(opts, retry.WithNestedRetries(), retry.WithoutBudget())
	}
	start := time.Now()
	var bottom atomic.Int64
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		bottom.Add(1)
		if time.Since(start) < s.down {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	for range 4 { // three services, then the client's own hop
		url, rt := net.serve(h)
		t, err := retryhttp.NewTransport(rt, hop, opts...)
		if err != nil {
			return outcome{}, err
		}
		h = service(&http.Client{Transport: t}, url)
	}
	// h is now the gateway's handler wrapped once more: the client calls
	// through its transport, which the loop above made last.
	top := h.(caller)
	n := int(s.rate * s.duration.Seconds())
	interval := time.Duration(float64(time.Second) / s.rate)
	var succeeded atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if top.call(context.Background()) == nil {
				succeeded.Add(1)
			}
		})
		time.Sleep(time.Until(start.Add(time.Duration(i+1) * interval)))
	}
	wg.Wait()
	return outcome{requests: n, succeeded: int(succeeded.Load()), bottom: int(bottom.Load())}, nil
}

// caller is a service's handler, which the chain's top calls directly:
// the client's hop.
type caller struct {
	http.Handler
	client *http.Client
	next   string
}

// call sends one request to next and reports whether it succeeded.
func (c caller) call(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.next, nil)
	if err != nil {
		return err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s", resp.Status)
	}
	return nil
}

// service is a service's handler: it calls next through client with the
// request's context, and answers 503 when that fails. retryhttp.Handler
// marks the 503 when the call was retried below.
func service(client *http.Client, next string) caller {
	c := caller{client: client, next: next}
	c.Handler = retryhttp.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.call(r.Context()) != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	return c
}

// simulate runs fleet.Layers with the same chain, rate, outage and
// strategies; OnlyRetryable is the rule, and with it each layer has the
// token budget a transport gives each host by default, retry.DefaultBudget's.
func simulate(s settings, rule bool) (fleet.LayersResult, error) {
	layers := make([]fleet.Layer, 4)
	for i := range layers {
		layers[i] = fleet.Layer{Name: fmt.Sprint("layer ", i+1), Strategy: hop, OnlyRetryable: rule}
		if rule {
			layers[i].BudgetRatio, layers[i].BudgetBurst = retry.DefaultBudgetRatio, retry.DefaultBudgetBurst
		}
	}
	return fleet.Layers{Layers: layers, Rate: s.rate, Duration: s.duration, Down: s.down, Horizon: time.Minute}.Run(context.Background())
}

// loopback is a network of real servers on 127.0.0.1.
type loopback struct {
	servers []*httptest.Server
	client  *http.Transport
}

func (l *loopback) serve(h http.Handler) (string, http.RoundTripper) {
	srv := httptest.NewServer(h)
	l.servers = append(l.servers, srv)
	if l.client == nil {
		l.client = &http.Transport{MaxIdleConnsPerHost: 1000, MaxConnsPerHost: 0}
	}
	return srv.URL, l.client
}

func (l *loopback) close() {
	for _, s := range l.servers {
		s.Close()
	}
	if l.client != nil {
		l.client.CloseIdleConnections()
	}
	l.servers, l.client = nil, nil
}
