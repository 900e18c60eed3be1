// Package whatif holds the what-if options and the runs they make.
//
// The options of plan, lint, simulate and replay are flags of the command
// and query parameters of the HTTP API alike, with their checks; their
// Run methods run the plans, lints, simulations and replays, and package
// report renders what they return.
package whatif

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/tick"
	"github.com/retrypolicy/retrypolicy/plan"
)

// planStart is the fixed instant a plan starts from, so that its output is
// the same on every run.
var planStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Bounds of plan's options: a picture of at most a few hundred KB.
const (
	maxPlanFailures = plan.MaxPlanFailures
	maxPlanUptime   = 1e9 // seconds
)

// Seconds is a flag of seconds (90, 1.5) or of a Go duration (1m30s).
type Seconds time.Duration

// String returns the duration, "0" for none.
func (v *Seconds) String() string {
	if *v == 0 {
		return "0"
	}
	return time.Duration(*v).String()
}

// Set reads seconds or a Go duration.
func (v *Seconds) Set(text string) error {
	if secs, err := strconv.ParseFloat(text, 64); err == nil && !math.IsNaN(secs) && !math.IsInf(secs, 0) {
		if math.Abs(secs) > maxPlanUptime {
			return errors.New("must be between 0 and 1e9 seconds")
		}
		*v = Seconds(secs * float64(time.Second))
		return nil
	}
	d, err := time.ParseDuration(text)
	if err != nil {
		return errors.New("must be seconds (90, 1.5) or a duration (1m30s)")
	}
	*v = Seconds(d)
	return nil
}

// WholeNumber is a flag of a whole number.
type WholeNumber int

// String returns the number.
func (v *WholeNumber) String() string { return strconv.Itoa(int(*v)) }

// Set reads a whole number.
func (v *WholeNumber) Set(text string) error {
	n, err := strconv.Atoi(text)
	if err != nil {
		return errors.New("must be a whole number")
	}
	*v = WholeNumber(n)
	return nil
}

// Option is a problem with one option: a flag of the command, or a query
// parameter of the server's.
type Option struct{ Name, Rule string }

// Error returns "NAME: RULE".
func (e Option) Error() string { return e.Name + ": " + e.Rule }

// TickOption is the controller's tick that plan, lint and simulate
// assume: a flag of the command, a query parameter of the server's, the
// same default everywhere (docs/semantics.md, section 5).
type TickOption struct{ Tick Duration }

// Define defines the tick as a flag of fs, its default the controller's
// minute; what is the help's prefix (simulate's "outage: ").
func (o *TickOption) Define(fs *flag.FlagSet, what string) {
	o.Tick = Duration(tick.Default)
	fs.Var(&o.Tick, "tick", what+"the controller's check for failed jobs, a `DURATION` from 0 to 24h: each retry starts at\nthe first tick at or after its due time; 0 retries exactly when due (the in-process loop)")
}

// Check returns the tick when it is out of range.
func (o *TickOption) Check() []Option {
	if err := tick.Check(time.Duration(o.Tick)); err != nil {
		return []Option{{"tick", err.Error()}}
	}
	return nil
}

// Lint lints s under the tick.
func (o *TickOption) Lint(ctx context.Context, s retrypolicy.Strategy) (plan.Report, error) {
	return plan.Lint(ctx, s, plan.WithTick(time.Duration(o.Tick)))
}

// PlanOptions are plan's options: flags of the command, query parameters
// of the server's /v1/plan.
type PlanOptions struct {
	Uptime Seconds
	Count  WholeNumber
	TickOption
}

// Define defines the options as flags of fs, with their defaults.
func (o *PlanOptions) Define(fs *flag.FlagSet) {
	fs.Var(&o.Uptime, "uptime", "how long each run lasts before it fails, a `DURATION`: seconds (90, 1.5) or Go's form (1m30s),\nup to 1e9 s; 0, the default, is a job that crashes as it starts")
	o.Count = 12
	fs.Var(&o.Count, "failures", "how many failures to simulate at most, `N` from 1 to 1000")
	o.TickOption.Define(fs, "")
}

// Check returns the options out of range.
func (o *PlanOptions) Check() []Option {
	errs := o.TickOption.Check()
	if o.Uptime < 0 || time.Duration(o.Uptime) > maxPlanUptime*time.Second {
		errs = append(errs, Option{"uptime", fmt.Sprintf("must be between 0 and 1e9 seconds, got %v", time.Duration(o.Uptime))})
	}
	if o.Count < 1 || o.Count > maxPlanFailures {
		errs = append(errs, Option{"failures", fmt.Sprintf("must be between 1 and %d, got %d", maxPlanFailures, o.Count)})
	}
	return errs
}

// Run returns the plan of s and what lint finds in it; ctx bounds lint.
func (o *PlanOptions) Run(ctx context.Context, s retrypolicy.Strategy) ([]plan.Step, plan.Report, error) {
	steps, err := plan.Timeline(s, planStart, time.Duration(o.Uptime), int(o.Count), plan.WithTick(time.Duration(o.Tick)))
	if err != nil {
		return nil, plan.Report{}, err
	}
	report, err := o.Lint(ctx, s)
	return steps, report, err
}
