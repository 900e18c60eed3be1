// Package plan runs one strategy forward, for people choosing it.
//
// [Timeline] is the failures of a job that keeps failing, and [Lint] what
// the strategy does when every run crashes, with the traps in it:
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
// starts exactly when due, with the jitter at its least: no extra. A crash
// loop follows at most MaxFailures failures, and Lint stops when its
// context is done. Lint and Timeline share nothing mutable: each is safe
// to call from many goroutines at once. What a strategy does to many jobs
// at once is package fleet's.
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
