// Package fleet simulates many jobs retrying against one shared dependency.
//
// [Outage] runs a fleet of jobs through a provider's outage, [Contention]
// clients contending for one row (the model of AWS's "Exponential Backoff
// And Jitter"), and [Layers] requests down a chain of layers that each
// retry, through an outage of the bottom. [Collapse] runs a server near its
// capacity through a trigger (a spike, a capacity drop, or random
// failures) under policies side by side (one attempt, the strategy alone, a
// token budget, a windowed budget, the transports' default, three under a
// client-side throttle, and hedging with and without a budget), to show a
// collapse that outlives its trigger, the budgets and throttles that
// prevent it, and what they cost where failures do not come from load. [Tail] runs a server whose
// service time has a slow tail under hedged calls (a second attempt sent
// once the first has not answered within a delay), to show what hedging
// buys and costs. [Replay] runs a strategy on a
// recorded [Log] of attempts instead ([ReadLog] reads one): what it would
// have done with the same jobs through the same outages.
//
// An Outage, for instance:
//
//	r, err := fleet.Outage{Jobs: 1000, Down: 30 * time.Minute, Tick: time.Minute}.Run(ctx, strategy)
//	if err != nil {
//		return err // an invalid strategy or option
//	}
//	fmt.Println(r.Peak, "runs in the busiest minute;", r.Fatal, "jobs given up")
//
// It adds no rule to the library's: every wait is a [retrypolicy.History]'s
// decision, each job's or call's own. The simulations draw the jitter from
// their seed, as a fleet's jobs would, and are deterministic for it; they
// share nothing mutable, so each is safe to run from many goroutines at
// once.
//
// # Bounds
//
// Every run is bounded in time and memory whatever the strategy and
// options. The simulations all run on one event engine, which holds them
// to the same bounds: it counts every event it hands out, of whatever kind
// (a run, a message, an arrival, an attempt, a hop, a timeout), against a
// budget derived from the run's own
// option (an Outage's MaxRuns runs, a Contention's MaxMessages messages,
// EventsPerCall times a Layers run's MaxCalls, 16 times a Collapse's, 12
// times a Tail's); it holds at most
// MaxPendingEvents events waiting at once (a timeout whose attempt has
// ended leaves with it) and MaxHeldFailures failures in all the run's
// Histories, MaxJobFailures in one; and it looks at the context every few
// thousand events. A Layers run also stops at its MaxCalls calls and at
// MaxCallsInFlight calls in flight at once. A run that reaches a bound
// stops there and says which (Truncated, TruncatedBy): its counts are then
// lower bounds. Options that would overflow are refused, or saturate
// where a bound is meant (a breaker open for the longest Duration, a Rate
// so low that the next request never comes).
//
// So what a simulation holds is a function of the bounds alone, whatever
// its rates, latencies and timeouts: at most, as slices grow by doubling,
// twice 32 bytes a waiting event (24 for an Outage) and 8 bytes a held
// failure, beside its jobs or calls in flight (a History of 48 bytes and
// a slot of 64 each; at most 1,000,000 jobs, MaxCallsInFlight calls), a
// count a minute or second of the run, and for Layers at most a million
// latencies of 8 bytes: under 600 MB at the very worst, and a few MB for
// the defaults.
package fleet
