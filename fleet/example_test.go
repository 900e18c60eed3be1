package fleet_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/fleet"
)

// Retries multiply down a call chain: four layers of three attempts each
// send 81 calls a request to a bottom that is down; the client alone
// retrying sends 3.
func ExampleLayers() {
	for _, c := range fleet.DocumentedChains()[:2] {
		l := fleet.Layers{Layers: c.Layers, Rate: 10, Duration: 10 * time.Second, Down: time.Hour, Horizon: time.Minute}
		r, err := l.Run(context.Background())
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: %d requests, %.0f calls each at the bottom, attempts by layer %v\n", c.Name, r.Requests, r.Amplification, r.Attempts)
	}
	// Output:
	// every-layer: 100 requests, 81 calls each at the bottom, attempts by layer [300 900 2700 8100]
	// client-only: 100 requests, 3 calls each at the bottom, attempts by layer [300 300 300 300]
}

// A job failed at 10:00:00 and 10:00:05 and succeeded at 10:00:30: the
// dependency was down until then. Under none it would have been FATAL at
// its first failure; under a fixed 10 s backoff it would have run at
// 10:00:10 and 10:00:20 (down) and 10:00:30 (up), and completed.
func ExampleReplay() {
	log, err := fleet.ReadLog(strings.NewReader(`{"job":"a","started_at":"2026-03-03T10:00:00Z","ended_at":"2026-03-03T10:00:00Z","outcome":"failed"}
{"job":"a","started_at":"2026-03-03T10:00:05Z","ended_at":"2026-03-03T10:00:05Z","outcome":"failed"}
{"job":"a","started_at":"2026-03-03T10:00:30Z","ended_at":"2026-03-03T10:00:30Z","outcome":"succeeded"}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fixed := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 10 * time.Second}}
	for _, s := range []retrypolicy.Strategy{{Kind: retrypolicy.None}, fixed} {
		r, err := fleet.Replay{}.Run(context.Background(), log, s)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: %d attempts, %d completed, %d FATAL (%d completed in reality)\n", r.Strategy.Kind, r.Attempts, r.Completed, r.Fatal, r.FatalCompletedInReality)
	}
	// Output:
	// none: 1 attempts, 0 completed, 1 FATAL (1 completed in reality)
	// unless_stopped: 4 attempts, 1 completed, 0 FATAL (0 completed in reality)
}

// ExampleCollapse: a server at 0.8 of its capacity, a spike of three times
// the load for 10 s; one attempt and the budgets that only successes
// refill recover (goodput back) and settle (attempts back within 1.1x the
// arrivals) 32 s and 0 s after it; the strategy alone and the windowed
// budget do neither. Behind a throttle, calls the server cannot serve are
// not sent, and every throttled policy recovers sooner. Hedging on the
// budget recovers; hedging with no budget collapses.
func ExampleCollapse() {
	results, err := fleet.DefaultCollapse().Run(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range results {
		fmt.Printf("%-17s recovered %-5v settled %-5v %.2f attempts a call\n", r.Policy, r.Recovered, r.Settled, r.Amplification)
	}
	// Output:
	// none              recovered true  settled true  1.00 attempts a call
	// strategy          recovered false settled false 3.92 attempts a call
	// token             recovered true  settled true  1.02 attempts a call
	// windowed          recovered false settled false 2.14 attempts a call
	// default           recovered true  settled true  1.02 attempts a call
	// throttle          recovered true  settled true  0.49 attempts a call
	// throttle-strategy recovered true  settled true  0.61 attempts a call
	// throttle-default  recovered true  settled true  0.53 attempts a call
	// hedge             recovered true  settled true  1.01 attempts a call
	// hedge-unbudgeted  recovered false settled false 2.00 attempts a call
}

// ExampleCollapse_randomFailures: 90% of the attempts failing for 20 s, at
// a quarter of the default load, so that the server is never overloaded:
// the default budget saves few more of the span's calls than one attempt
// does, the strategy alone most; where failures do not come with load, a
// budget costs successful calls.
func ExampleCollapse_randomFailures() {
	c := fleet.DefaultCollapse()
	c.Rate, c.Spike, c.FailShare, c.TriggerFor = 20, 0, 0.9, 20*time.Second
	results, err := c.Run(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range results {
		fmt.Printf("%-17s %3.0f%% of the span's calls succeeded\n", r.Policy, 100*float64(r.TriggerSucceeded)/float64(r.TriggerArrivals))
	}
	// Output:
	// none               10% of the span's calls succeeded
	// strategy           60% of the span's calls succeeded
	// token              11% of the span's calls succeeded
	// windowed           60% of the span's calls succeeded
	// default            11% of the span's calls succeeded
	// throttle           10% of the span's calls succeeded
	// throttle-strategy  46% of the span's calls succeeded
	// throttle-default   11% of the span's calls succeeded
	// hedge              12% of the span's calls succeeded
	// hedge-unbudgeted   20% of the span's calls succeeded
}

// ExampleTail: hedging after the service time's 95th percentile (17.5 ms)
// brings the 99th percentile from a slow call's 210 ms to 28 ms, for 5%
// more attempts; following the latency, to 27 ms for 7%.
func ExampleTail() {
	results, err := fleet.DefaultTail().Run(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range results {
		fmt.Printf("%-16s p99 %6.1f ms, %4.1f%% extra load\n", r.Policy, float64(r.P99)/1e6, 100*r.ExtraLoad)
	}
	// Output:
	// none             p99  210.1 ms,  0.0% extra load
	// hedge            p99   27.7 ms,  5.0% extra load
	// hedge-following  p99   26.7 ms,  7.2% extra load
	// hedge-unbudgeted p99   27.7 ms,  5.0% extra load
}
