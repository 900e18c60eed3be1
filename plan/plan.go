// Package plan runs a strategy's rules forward, for people choosing one:
// the timeline of a job that keeps failing ([Timeline]), what the strategy
// really does when every run crashes, with the traps in it ([Lint]), and
// what it does to a fleet: many jobs through a provider's outage
// ([Outage]), clients contending for one row ([Contention]), the model of
// AWS's "Exponential Backoff And Jitter", or requests down a chain of
// layers that each retry, through an outage of the bottom ([Layers]).
//
//	report, err := plan.Lint(ctx, strategy)
//	if err != nil {
//		return err // an invalid strategy: a *retrypolicy.ValidationError
//	}
//	for _, f := range report.Findings {
//		fmt.Println(f.Severity, f.Code, f.Message)
//	}
//
// It adds no rule to the library's: every wait is a [retrypolicy.History]'s
// decision. A job's crash loop starts with a failure at t = 0; each run
// fails at once (or after the uptime a timeline is given) and each retry
// starts exactly when due, with the jitter at its least: no extra. The
// simulations draw the jitter from their seed, as a fleet's jobs would, and
// are deterministic for it. Lint, Timeline and the simulations share
// nothing mutable: each is safe to call from many goroutines at once.
//
// # Bounds
//
// Every run is bounded in time and memory whatever the strategy and
// options. A crash loop (Lint, Timeline) follows at most MaxFailures
// failures. The simulations (Outage, Contention, Layers) all run on one
// event engine, which holds them to the same bounds: it counts every event
// it hands out, of whatever kind (a run, a message, an arrival, an
// attempt, a hop, a timeout), against a budget derived from the run's own
// option (an Outage's MaxRuns runs, a Contention's MaxMessages messages,
// EventsPerCall times a Layers run's MaxCalls); it holds at most
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
package plan

import (
	"time"

	"github.com/retrypolicy/retrypolicy"
)

// Step is one failure of a planned job and the decision on it.
type Step struct {
	// Start is when the run that failed started.
	Start time.Time
	// Failure is when it failed: Start plus the run's uptime.
	Failure time.Time
	// Decision is the strategy's decision on the failure, its jitter at its
	// least: Jitter is 0 and Due is Failure + Delay, when the next run
	// starts. It is Fatal at the last step of a job that gives up.
	Decision retrypolicy.Decision
}

// Timeline returns the failures of a job under s whose every run lasts
// uptime (0: it crashes as it starts), the first starting at start and each
// retry starting when due, until the strategy gives up or the job has
// failed max times, at most MaxFailures. It stops early, with the steps so
// far, when the next failure falls past what a History holds (the year
// 2262). It returns a *retrypolicy.ValidationError for an invalid s and
// nothing for max < 1.
func Timeline(s retrypolicy.Strategy, start time.Time, uptime time.Duration, max int) ([]Step, error) {
	p, _, err := unjittered(s)
	if err != nil {
		return nil, err
	}
	max = min(max, MaxFailures)
	var steps []Step
	for st := range crashLoop(p, start, uptime) {
		if len(steps) == max {
			break
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// unjittered compiles s with its jitter at its least (an
// exponential_with_jitter backoff is an exponential one, whose delays are
// the same), and returns s with its defaults filled.
func unjittered(s retrypolicy.Strategy) (*retrypolicy.Policy, retrypolicy.Strategy, error) {
	p, err := retrypolicy.Compile(s)
	if err != nil {
		return nil, s, err
	}
	s = p.Strategy()
	if s.Backoff.Kind != retrypolicy.ExponentialWithJitter {
		return p, s, nil
	}
	plain := s
	plain.Backoff.Kind = retrypolicy.Exponential
	p, err = retrypolicy.Compile(plain)
	return p, s, err
}

// crashLoop yields the failures of a job under p whose every run lasts
// uptime, each retry starting when due, until a fatal decision or a
// failure a History cannot hold.
func crashLoop(p *retrypolicy.Policy, start time.Time, uptime time.Duration) func(yield func(Step) bool) {
	return func(yield func(Step) bool) {
		h := retrypolicy.NewHistory(p)
		for run := start; ; {
			failure := run.Add(uptime)
			if h.Record(failure, uptime) != nil {
				return
			}
			d, _ := h.Decide(0, failure) // the history holds a failure
			if !yield(Step{Start: run, Failure: failure, Decision: d}) || d.Action == retrypolicy.Fatal {
				return
			}
			run = d.Due
		}
	}
}
