package bench

import (
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cristalhq/hedgedhttp"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/hedgepolicy"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/test/bufconn"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retrygrpc"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

// hedgeStrategy is the strategy of the hedging benchmarks: a bounded one
// of 3 attempts, whose max_attempts lets a hedge through.
var hedgeStrategy = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3, Window: time.Hour,
	Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Second}}

// memoryServer is an in-memory transport: every request is answered at
// once with "ok", but for every other one when slowFirst is set, which
// waits until its context ends (a loser) or 10 ms pass. With slowFirst it
// notes when the slow request arrived, when the next (the hedge) arrived,
// and when the hedge answered (Unix nanoseconds), for the phases of a
// hedged call (phases).
type memoryServer struct {
	slowFirst                 bool
	n                         atomic.Int64
	slowAt, hedgeAt, answerAt atomic.Int64
}

func (m *memoryServer) RoundTrip(req *http.Request) (*http.Response, error) {
	if m.slowFirst {
		if m.n.Add(1)%2 == 1 {
			m.slowAt.Store(time.Now().UnixNano())
			select {
			case <-req.Context().Done():
				return nil, req.Context().Err()
			case <-time.After(10 * time.Millisecond):
			}
		} else {
			m.hedgeAt.Store(time.Now().UnixNano())
			defer func() { m.answerAt.Store(time.Now().UnixNano()) }()
		}
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("ok")), Request: req}, nil
}

// phases sums, over a run's calls, the two phases of a call one hedge
// answers: from the first attempt's arrival to the hedge's (the delay, as
// the Go runtime's timers keep it), and from the hedge's answer to the
// call's return (the winner handed back, and what the call waits for);
// and the calls' own time, without what the loop does between them. It
// keeps each call's first phase too, for its median: the runtime fires a
// short timer either near its time or much later, so the mean is the
// share of late ones, and the median what a call usually waits. Its room
// is made before the timed loop (newPhases), so that the one-hedge cases'
// allocations are the calls' own.
type phases struct {
	toHedge, afterAnswer, calls time.Duration
	each                        []time.Duration
}

// newPhases returns phases with room for the first phases of more calls
// than a one-hedge run of a second makes.
func newPhases() phases { return phases{each: make([]time.Duration, 0, 1<<14)} }

// add adds the phases of the call that began at begin and returned at end.
func (p *phases) add(m *memoryServer, begin, end time.Time) {
	d := time.Duration(m.hedgeAt.Load() - m.slowAt.Load())
	p.toHedge += d
	p.each = append(p.each, d)
	p.afterAnswer += time.Duration(end.UnixNano() - m.answerAt.Load())
	p.calls += end.Sub(begin)
}

// report reports their means over n calls, and the first phase's median,
// in µs.
func (p *phases) report(b *testing.B, n int) {
	b.ReportMetric(float64(p.toHedge.Nanoseconds())/1e3/float64(n), "µs-to-hedge/op")
	b.ReportMetric(float64(p.afterAnswer.Nanoseconds())/1e3/float64(n), "µs-answer-to-return/op")
	b.ReportMetric(float64(p.calls.Nanoseconds())/1e3/float64(n), "µs-call/op")
	slices.Sort(p.each)
	b.ReportMetric(float64(p.each[len(p.each)/2].Nanoseconds())/1e3, "µs-to-hedge-p50/op")
}

// getAll is a benchmark's loop: GETs of url through client, which m
// answers, gap apart (the gap timed: stopping the timer reads the memory
// statistics, which stops the world); a run whose calls are hedged once
// (m.slowFirst) reports their phases.
func (m *memoryServer) getAll(b *testing.B, client *http.Client, url string, gap time.Duration) {
	ph := newPhases()
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		begin := time.Now()
		resp, err := client.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatal(resp.Status)
		}
		if m.slowFirst {
			ph.add(m, begin, time.Now())
			n++
		}
		if gap > 0 {
			time.Sleep(gap)
		}
	}
	if n > 0 {
		ph.report(b, n)
	}
}

// hedgePeer is a hedging HTTP transport: retryhttp's, failsafe-go's hedge
// policy, cristalhq/hedgedhttp, each hedging once after delay.
type hedgePeer struct {
	name string
	wrap func(base http.RoundTripper, delay time.Duration) (http.RoundTripper, error)
}

var hedgePeers = []hedgePeer{
	{"retryhttp", func(base http.RoundTripper, _ time.Duration) (http.RoundTripper, error) {
		return retryhttp.NewTransport(base, hedgeStrategy)
	}},
	{"retryhttp-hedged", func(base http.RoundTripper, delay time.Duration) (http.RoundTripper, error) {
		// No budget, as the peers have none: with the default host budget,
		// a hedge every call would be refused after the burst.
		return retryhttp.NewTransport(base, hedgeStrategy, retry.WithHedging(retry.Hedging{Attempts: 2, Delay: delay}), retry.WithoutBudget())
	}},
	{"failsafe-hedge", func(base http.RoundTripper, delay time.Duration) (http.RoundTripper, error) {
		return failsafehttp.NewRoundTripper(base, hedgepolicy.NewBuilderWithDelay[*http.Response](delay).WithMaxHedges(1).Build()), nil
	}},
	{"hedgedhttp", func(base http.RoundTripper, delay time.Duration) (http.RoundTripper, error) {
		return hedgedhttp.NewRoundTripper(delay, 2, base)
	}},
}

// leastHedge is retryhttp without hedging over a transport that does the
// least any hedging transport must do for a request answered before its
// delay, and nothing else: arm a timer for the delay (where a hedge would
// be sent), send the first attempt under a context of its own that could
// cancel it were it to lose (a copy of the request), and stop the timer;
// the winner's context ends when its body is closed. Beside
// impl=retryhttp, it is the floor of impl=retryhttp-hedged's ratio.
var leastHedge = hedgePeer{"least-hedge", func(base http.RoundTripper, delay time.Duration) (http.RoundTripper, error) {
	return retryhttp.NewTransport(leastHedgeTransport{base, delay}, hedgeStrategy)
}}

type leastHedgeTransport struct {
	base  http.RoundTripper
	delay time.Duration
}

func (l leastHedgeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	timer := time.AfterFunc(l.delay, func() {})
	resp, err := l.base.RoundTrip(req.WithContext(ctx))
	timer.Stop()
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = cancelingBody{resp.Body, cancel}
	return resp, nil
}

// cancelingBody is a response body whose Close ends its request's context.
type cancelingBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelingBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// BenchmarkHedgedHTTP is a GET through an in-memory transport: answered
// before the hedging delay (case=no-hedge: a second), and answered by a
// hedge sent after 50 µs while the first attempt hangs (case=one-hedge),
// through retryhttp without hedging, with it, failsafe-go's hedge policy
// and cristalhq/hedgedhttp, and (no-hedge only) least-hedge, the floor of
// any hedge. A one-hedge call also reports the means of its two phases
// and the median of the first (phases): the first is the runtime's timer,
// which fires a 50 µs delay either near it or up to about 1 ms late (by
// our reading of the runtime, its poller sleeps in whole milliseconds
// when no processor is busy); the second is the implementation's own.
func BenchmarkHedgedHTTP(b *testing.B) {
	for _, c := range []struct {
		name      string
		slowFirst bool
		delay     time.Duration
	}{{"no-hedge", false, time.Second}, {"one-hedge", true, 50 * time.Microsecond}} {
		for _, p := range append(hedgePeers, leastHedge) {
			if c.slowFirst && (p.name == "retryhttp" || p.name == leastHedge.name) {
				continue // it does not hedge
			}
			b.Run("case="+c.name+"/impl="+p.name, func(b *testing.B) {
				srv := &memoryServer{slowFirst: c.slowFirst}
				rt, err := p.wrap(srv, c.delay)
				if err != nil {
					b.Fatal(err)
				}
				srv.getAll(b, &http.Client{Transport: rt}, "http://service.test/", 0)
			})
		}
	}
}

// BenchmarkHedgedGRPC is a unary call over bufconn answered at once (its
// hedging delay a second): through retrygrpc's interceptor without
// hedging and with it.
func BenchmarkHedgedGRPC(b *testing.B) {
	const method = "/grpc.health.v1.Health/Check"
	for _, c := range []struct {
		name string
		opts []retry.Option
	}{
		{"retrygrpc", []retry.Option{retrygrpc.WithSafeMethods(method)}},
		{"retrygrpc-hedged", []retry.Option{retry.WithHedging(retry.Hedging{Delay: time.Second}), retrygrpc.WithHedgedMethods(method)}},
	} {
		b.Run("case=no-hedge/impl="+c.name, func(b *testing.B) {
			in, err := retrygrpc.UnaryClientInterceptor(hedgeStrategy, c.opts...)
			if err != nil {
				b.Fatal(err)
			}
			client := grpcClient(b, &flakyHealth{}, []grpc.DialOption{grpc.WithUnaryInterceptor(in)})
			ctx := context.Background()
			req := &grpc_health_v1.HealthCheckRequest{}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := client.Check(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRetryHedge is a call that succeeds at once through retry.Do,
// and through retry.Hedge (its delay a second) and a Loop's Hedge: what
// hedging costs a call that never needs it (a goroutine, its attempt's
// context, a timer).
func BenchmarkRetryHedge(b *testing.B) {
	op := func(context.Context) (int, error) { return 1, nil }
	ctx := context.Background()
	h := retry.WithHedging(retry.Hedging{Delay: time.Second})
	b.Run("impl=do", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := retry.Do(ctx, hedgeStrategy, op); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=hedge", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := retry.Hedge(ctx, hedgeStrategy, op, h); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=loop-hedge", func(b *testing.B) {
		l, err := retry.New[int](hedgeStrategy, h)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := l.Hedge(ctx, op); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkHedgedHTTPBufconn is BenchmarkHedgedHTTP over net/http's own
// transport on an in-memory connection (bufconn, BenchmarkHedgedGRPC's
// in-memory transport): the request is written and read as HTTP/1.1,
// with no socket. A GET answered before the delay (case=no-hedge: a
// second) through retryhttp without hedging and with it, each with the
// default budget and without one, and through the peers; and one answered
// by a hedge sent after 50 µs while the first request hangs until its
// context ends or 10 ms pass (case=one-hedge; a loser's cancellation
// closes its connection, so that the next call's hedge dials a new one:
// most calls dial once, for every implementation); and the same with the
// calls 200 µs apart (case=one-hedge-spaced; its time per operation
// includes the gap, µs-call/op does not): back to
// back, the next call's delay runs while the last one's loser is torn
// down on the server, which changes how often the runtime fires a 50 µs
// timer late, and by implementation.
func BenchmarkHedgedHTTPBufconn(b *testing.B) {
	hedging := func(delay time.Duration) retry.Option {
		return retry.WithHedging(retry.Hedging{Attempts: 2, Delay: delay})
	}
	impls := append([]hedgePeer{
		{"retryhttp-nobudget", func(base http.RoundTripper, _ time.Duration) (http.RoundTripper, error) {
			return retryhttp.NewTransport(base, hedgeStrategy, retry.WithoutBudget())
		}},
		{"retryhttp-hedged-budget", func(base http.RoundTripper, delay time.Duration) (http.RoundTripper, error) {
			return retryhttp.NewTransport(base, hedgeStrategy, hedging(delay))
		}},
	}, hedgePeers...)
	for _, c := range []struct {
		name      string
		slowFirst bool
		delay     time.Duration
		gap       time.Duration // between calls, untimed
	}{{"no-hedge", false, time.Second, 0}, {"one-hedge", true, 50 * time.Microsecond, 0}, {"one-hedge-spaced", true, 50 * time.Microsecond, 200 * time.Microsecond}} {
		for _, p := range impls {
			if c.slowFirst && (p.name == "retryhttp" || p.name == "retryhttp-nobudget" || p.name == "retryhttp-hedged-budget") {
				continue // it does not hedge, or its budget refuses a hedge a call after the burst
			}
			b.Run("case="+c.name+"/impl="+p.name, func(b *testing.B) {
				srv := &memoryServer{slowFirst: c.slowFirst}
				base, url := bufconnHTTP(b, srv)
				rt, err := p.wrap(base, c.delay)
				if err != nil {
					b.Fatal(err)
				}
				srv.getAll(b, &http.Client{Transport: rt}, url, c.gap)
			})
		}
	}
}

// bufconnHTTP serves srv's answers (memoryServer.RoundTrip, its status
// and body) over HTTP/1.1 on an in-memory listener, and returns
// net/http's transport dialing it and the URL to ask, both ended with b.
func bufconnHTTP(b *testing.B, srv *memoryServer) (*http.Transport, string) {
	lis := bufconn.Listen(64 << 10) // a connection's buffers, made once a run: small beside its calls
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := srv.RoundTrip(r)
		if err != nil {
			return // a loser: its client is gone
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	})}
	go func() { _ = hs.Serve(lis) }()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return lis.DialContext(ctx)
	}}
	b.Cleanup(func() {
		tr.CloseIdleConnections()
		_ = hs.Close()
	})
	return tr, "http://service.test/"
}
