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
// starts when due, with the jitter at its least: no extra. [WithTick] puts
// a controller's check in the loop, as a scheduler that looks for failed
// jobs once a minute has: each retry then starts at the first tick at or
// after its due time that comes after its failure, ticks falling at
// multiples of the tick from the first run's start (docs/semantics.md, section 5).
// With no tick, the default in Go, a retry starts exactly when due: the
// in-process loop. A crash loop follows at most MaxFailures failures, and
// Lint stops when its context is done. Lint and Timeline share nothing mutable: each is safe
// to call from many goroutines at once. What a strategy does to many jobs
// at once is package fleet's.
package plan

import (
	"fmt"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/tick"
)

// Option configures Lint, LintGo and Timeline; the With functions make
// them.
type Option struct{ set func(config) config }

// config is what the options set.
type config struct {
	tick time.Duration
}

// DefaultTick is a controller's tick where none is given: the command's
// --tick default, and the tick a strategy is linted under when what runs
// it is not known (retrypolicy-vet).
const DefaultTick = tick.Default

// WithTick runs the crash loop under a controller that checks for failed
// jobs every d: each retry starts at the first tick at or after its due
// time that is strictly after its failure, so a delay of 0 waits a tick.
// Zero, the default, is no tick: each retry starts exactly when due. A d
// below 0 or above a day is an error of the call that takes it.
func WithTick(d time.Duration) Option {
	return Option{func(c config) config { c.tick = d; return c }}
}

// configure applies opts, and checks what they set.
func configure(opts []Option) (config, error) {
	var c config
	for _, o := range opts {
		if o.set != nil {
			c = o.set(c)
		}
	}
	if err := tick.Check(c.tick); err != nil {
		return c, fmt.Errorf("plan: WithTick: %w", err)
	}
	return c, nil
}

// Step is one failure of a planned job and the decision on it.
type Step struct {
	// Start is when the run that failed started.
	Start time.Time
	// Failure is when it failed: Start plus the run's uptime.
	Failure time.Time
	// Decision is the strategy's decision on the failure, its jitter at its
	// least: Jitter is 0 and Due is Failure + Delay. It is Fatal at the last
	// step of a job that gives up.
	Decision retrypolicy.Decision
	// Retry is when the next run starts: Due with no tick, the first tick
	// at or after Due that is after Failure under one; zero at a Fatal
	// step.
	Retry time.Time
}

// Timeline returns the failures of a job under s whose every run lasts
// uptime (0: it crashes as it starts), the first starting at start and each
// retry starting when due (under WithTick, at the tick that runs it),
// until the strategy gives up or the job has failed max times, at most
// MaxFailures. It stops early, with the steps so far, when the next
// failure falls past what a History holds (the year 2262). It returns a
// *retrypolicy.ValidationError for an invalid s, an error for an option
// out of range, and nothing for max < 1.
func Timeline(s retrypolicy.Strategy, start time.Time, uptime time.Duration, max int, opts ...Option) ([]Step, error) {
	c, err := configure(opts)
	if err != nil {
		return nil, err
	}
	p, _, err := unjittered(s)
	if err != nil {
		return nil, err
	}
	max = min(max, MaxFailures)
	var steps []Step
	for st := range (crashLoop{p: p, start: start, uptime: uptime, every: c.tick}).steps() {
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

// crashLoop is a job under p whose every run lasts uptime, the first
// starting at start, each retry when due or at the tick after, ticks at
// multiples of every from start (every 0: when due).
type crashLoop struct {
	p             *retrypolicy.Policy
	start         time.Time
	uptime, every time.Duration
}

// steps yields the loop's failures until a fatal decision or a failure a
// History cannot hold.
func (l crashLoop) steps() func(yield func(Step) bool) {
	p, start, uptime, every := l.p, l.start, l.uptime, l.every
	return func(yield func(Step) bool) {
		h := retrypolicy.NewHistory(p)
		for run := start; ; {
			failure := run.Add(uptime)
			if h.Record(failure, uptime) != nil {
				return
			}
			d, _ := h.Decide(0, failure) // the history holds a failure
			st := Step{Start: run, Failure: failure, Decision: d}
			if d.Action != retrypolicy.Fatal {
				st.Retry = start.Add(tick.Next(d.Due.Sub(start), failure.Sub(start), every))
			}
			if !yield(st) || d.Action == retrypolicy.Fatal {
				return
			}
			run = st.Retry
		}
	}
}
