// Command chain runs a chain of four gRPC retry layers through an outage, with the one-layer rule and without.
//
// A client calls a service, which calls a second, which calls a third,
// which calls a bottom dependency: four hops, each through a retrygrpc
// client interceptor of 3 attempts 1 ms apart, each service behind
// retrygrpc's server interceptor, all on loopback. The service is gRPC's
// health service (its code comes with gRPC). Calls arrive at the top at a
// steady rate; the bottom answers Unavailable for the first part of the
// run. For the rule on (the default) and off (WithNestedRetries at every
// hop, with WithoutBudget so that no default budget bounds the storm
// either, as in the simulation, which has none), it prints the calls each layer received a request and the requests
// that succeeded, beside fleet.Layers' simulation of the same chain, rate,
// outage and strategies (OnlyRetryable for the rule).
//
//	go run ./examples/chain             # 100 calls a second for 2 s, the bottom down 1 s
//	go run ./examples/chain -rate 50 -duration 4s -down 2s
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/fleet"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retrygrpc"
)

// settings are a run's: the calls' rate and how long they arrive, and how
// long the bottom is down from the start.
type settings struct {
	rate           float64
	duration, down time.Duration
}

// hop is every hop's strategy: 3 attempts, 1 ms apart.
var hop = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3,
	Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}

// check is the method every layer calls: safe to retry.
const check = "/grpc.health.v1.Health/Check"

func main() {
	s := settings{}
	flag.Float64Var(&s.rate, "rate", 100, "calls a second at the top")
	flag.DurationVar(&s.duration, "duration", 2*time.Second, "how long calls arrive")
	flag.DurationVar(&s.down, "down", time.Second, "how long the bottom is down from the start")
	flag.Parse()
	if err := run(os.Stdout, s); err != nil {
		fmt.Fprintln(os.Stderr, "chain:", err)
		os.Exit(1)
	}
}

// run runs the chain with the rule on and off, beside the simulation, and
// prints both.
func run(out io.Writer, s settings) error {
	fmt.Fprintf(out, "four gRPC layers of 3 attempts 1 ms apart; %.0f calls a second for %v; the bottom down for the first %v\n\n", s.rate, s.duration, s.down)
	fmt.Fprintf(out, "%-22s %-10s %9s  %-32s %10s\n", "", "", "calls", "calls a call at layers 1 to 4", "succeeded")
	for _, rule := range []bool{true, false} {
		real, err := runChain(s, rule)
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
		fmt.Fprintf(out, "%-22s %-10s %9d  %-32s %10d\n", name, "real", real.calls, perCall(real.layers, real.calls), real.succeeded)
		fmt.Fprintf(out, "%-22s %-10s %9d  %-32s %10d\n", "", "simulated", sim.Requests, perCall(sim.Attempts, sim.Requests), sim.Succeeded)
	}
	return nil
}

// perCall writes each layer's calls a call at the top.
func perCall(layers []int, calls int) string {
	parts := make([]string, len(layers))
	for i, n := range layers {
		parts[i] = fmt.Sprintf("%.2f", float64(n)/float64(max(calls, 1)))
	}
	return strings.Join(parts, " ")
}

// outcome is what a run of the chain counted: the calls made at the top,
// those that succeeded, and the calls each layer received, top first.
type outcome struct {
	calls, succeeded int
	layers           []int
}

// service is a layer of the chain: a health service that counts its calls
// and answers with next's answer, or is the bottom when next is nil.
type service struct {
	grpc_health_v1.UnimplementedHealthServer
	calls atomic.Int64
	next  grpc_health_v1.HealthClient
	down  func() bool // the bottom's: whether it is down now
}

// Check calls the next layer with the call's context, or answers as the
// bottom.
func (s *service) Check(ctx context.Context, req *grpc_health_v1.HealthCheckRequest) (*grpc_health_v1.HealthCheckResponse, error) {
	s.calls.Add(1)
	if s.next != nil {
		return s.next.Check(ctx, req)
	}
	if s.down() {
		return nil, status.Error(codes.Unavailable, "the bottom is down")
	}
	return &grpc_health_v1.HealthCheckResponse{Status: grpc_health_v1.HealthCheckResponse_SERVING}, nil
}

// chain is the servers and connections of a run, closed together.
type chain struct {
	servers []*grpc.Server
	conns   []*grpc.ClientConn
}

func (c *chain) close() {
	for _, cc := range c.conns {
		cc.Close()
	}
	for _, s := range c.servers {
		s.Stop()
	}
}

// serve serves s on loopback behind the server interceptor, and returns
// a client of it through a client interceptor of hop; without the rule,
// the client takes retry.WithNestedRetries and retry.WithoutBudget, and
// the server WithoutMark.
func (c *chain) serve(s *service, rule bool) (grpc_health_v1.HealthClient, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	opts := []retry.Option{retrygrpc.WithSafeMethods(check)}
	var marks []retrygrpc.ServerOption
	if !rule {
		opts = append(opts, retry.WithNestedRetries(), retry.WithoutBudget())
		marks = append(marks, retrygrpc.WithoutMark())
	}
	marking := retrygrpc.UnaryServerInterceptor(marks...)
	srv := grpc.NewServer(grpc.UnaryInterceptor(marking))
	grpc_health_v1.RegisterHealthServer(srv, s)
	c.servers = append(c.servers, srv)
	go func() { _ = srv.Serve(lis) }()
	retrying, err := retrygrpc.UnaryClientInterceptor(hop, opts...)
	if err != nil {
		return nil, err
	}
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUnaryInterceptor(retrying))
	if err != nil {
		return nil, err
	}
	c.conns = append(c.conns, cc)
	return grpc_health_v1.NewHealthClient(cc), nil
}

// runChain runs the chain: the bottom, three services and the client,
// each hop through a client interceptor, with the rule or without.
func runChain(s settings, rule bool) (outcome, error) {
	c := &chain{}
	defer c.close()
	start := time.Now()
	layers := []*service{{}, {}, {}, {down: func() bool { return time.Since(start) < s.down }}}
	var next grpc_health_v1.HealthClient
	for i := len(layers) - 1; i >= 0; i-- { // the bottom first, then up to the client's hop
		layers[i].next = next
		client, err := c.serve(layers[i], rule)
		if err != nil {
			return outcome{}, err
		}
		next = client
	}
	n := int(s.rate * s.duration.Seconds())
	interval := time.Duration(float64(time.Second) / s.rate)
	var succeeded atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, err := next.Check(context.Background(), &grpc_health_v1.HealthCheckRequest{}); err == nil {
				succeeded.Add(1)
			}
		})
		time.Sleep(time.Until(start.Add(time.Duration(i+1) * interval)))
	}
	wg.Wait()
	o := outcome{calls: n, succeeded: int(succeeded.Load())}
	for _, l := range layers {
		o.layers = append(o.layers, int(l.calls.Load()))
	}
	return o, nil
}

// simulate runs fleet.Layers with the same chain, rate, outage and
// strategies; OnlyRetryable is the rule.
func simulate(s settings, rule bool) (fleet.LayersResult, error) {
	layers := make([]fleet.Layer, 4)
	for i := range layers {
		layers[i] = fleet.Layer{Name: fmt.Sprint("layer ", i+1), Strategy: hop, OnlyRetryable: rule}
	}
	return fleet.Layers{Layers: layers, Rate: s.rate, Duration: s.duration, Down: s.down, Horizon: time.Minute}.Run(context.Background())
}
