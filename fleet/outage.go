package fleet

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"time"

	"github.com/retrypolicy/retrypolicy/attemptlog"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/splitmix"
	"github.com/retrypolicy/retrypolicy/internal/tick"
)

// simStart is the instant a simulation's t = 0 stands for.
var simStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Bounds of a simulation, whatever its strategy and options.
const (
	// DefaultMaxRuns is the most runs an [Outage] follows when its MaxRuns
	// is zero: about three seconds of work and at most a few hundred MB.
	DefaultMaxRuns = 10_000_000
	// MaxJobFailures is the most failures one job's History holds in a
	// simulation: a job that reaches it (a delay of 0 ns with no tick
	// retries at its failure's own instant forever) stops the simulation.
	MaxJobFailures = 100_000
)

// Outage is a fleet of jobs that share one provider, which is down from
// t = 0 for Down. A run that starts while it is down fails FailAfter later;
// a run that starts after succeeds, unless Capacity is set and the provider
// has already taken that many runs in the same second, when it fails at
// once. Each failure is recorded in the job's History and decided by the
// library; the job's next run starts at the decision's Due, or at the first
// controller Tick at or after it that comes after the failure. The
// simulation is deterministic for a Seed, and bounded: it follows at most
// MaxRuns runs, stops when a job's History holds [MaxJobFailures], and
// stops when its context is done. A zero field means its default.
type Outage struct {
	// Jobs is how many jobs there are; zero is 1,000.
	Jobs int
	// Down is how long the provider is down; zero is 30 minutes.
	Down time.Duration
	// FailAfter is how long a run lasts before it fails while the provider
	// is down: its uptime. Zero is a run that fails at once.
	FailAfter time.Duration
	// Spread spreads the jobs' first runs uniformly over [0, Spread),
	// drawn from Seed; zero starts every job at t = 0.
	Spread time.Duration
	// Capacity is the most runs a second the provider serves once it is up;
	// runs beyond it fail. Zero is no limit.
	Capacity int
	// Tick is the controller's check: a retry starts at the first multiple
	// of Tick at or after its due time and after its failure, so a job that
	// fails on a tick is seen at the next one. Zero retries exactly when
	// due, as the in-process loop does.
	Tick time.Duration
	// Horizon is how long after the provider comes back the simulation
	// runs; jobs that have not ended then are counted Unfinished. Zero is
	// 24 hours.
	Horizon time.Duration
	// Seed draws the jobs' first runs and their jitter seeds.
	Seed uint64
	// MaxRuns is the most runs the simulation follows, from 1 to
	// 1,000,000,000; zero is DefaultMaxRuns.
	MaxRuns int

	// Log, when set, is given each run as an attempt of an attempt log, as
	// the run ends: its job named job-1 … job-N, with its jitter seed, t = 0
	// at 2026-01-01T00:00:00Z. A [Replay] of the log can then be held
	// against the simulation that made it.
	Log func(attemptlog.Attempt)

	// onDecide, when set, sees each decision: the job, its run's start,
	// the failure, its uptime, and the decision.
	onDecide func(job int, start, failure time.Time, uptime time.Duration, d retrypolicy.Decision)
}

// Percentiles are the nearest-rank percentiles of a set of durations.
type Percentiles struct {
	P50, P99, Max time.Duration
}

// OutageResult is what a strategy did to the fleet.
type OutageResult struct {
	// Strategy is the strategy, its zero fields filled with their defaults.
	Strategy retrypolicy.Strategy
	// Load counts the runs that start in each minute from t = 0, and
	// FatalAt the jobs that end FATAL in each.
	Load, FatalAt []int
	// Peak is the most runs in a minute.
	Peak int
	// Runs counts every run; Decisions the failures decided.
	Runs, Decisions int
	// Succeeded counts the jobs whose run succeeded, Fatal those that
	// ended FATAL, Unfinished those that had not ended at the horizon.
	Succeeded, Fatal, Unfinished int
	// Recovery is, over the jobs that succeeded, the time from the
	// provider's recovery to the job's successful run (0 for a run that
	// starts as it recovers); zero when none succeeded.
	Recovery Percentiles
	// Truncated reports that the simulation stopped at a bound (MaxRuns
	// runs, a job's MaxJobFailures failures, or its context) before the
	// horizon: its counts are then lower bounds, and its other figures
	// those of the part it ran.
	Truncated bool
	// TruncatedBy names the bound that stopped it, when Truncated.
	TruncatedBy Bound
	// Tick is the controller tick the simulation ran under.
	Tick time.Duration
}

// withDefaults returns o with its zero fields filled.
func (o Outage) withDefaults() Outage {
	if o.Jobs == 0 {
		o.Jobs = 1000
	}
	if o.Down == 0 {
		o.Down = 30 * time.Minute
	}
	if o.Horizon == 0 {
		o.Horizon = 24 * time.Hour
	}
	if o.MaxRuns == 0 {
		o.MaxRuns = DefaultMaxRuns
	}
	return o
}

// check returns an error for an Outage that cannot run.
func (o Outage) check() error {
	switch {
	case o.Jobs < 1 || o.Jobs > 1_000_000:
		return errors.New("fleet: Outage.Jobs: must be between 1 and 1000000")
	case !within(o.Down, month) || !within(o.Horizon, month) || !within(o.Spread, month) || !within(o.FailAfter, 24*time.Hour):
		return errors.New("fleet: Outage: Down, Horizon and Spread must be from 0 to 30 days, FailAfter from 0 to a day")
	case tick.Check(o.Tick) != nil:
		return fmt.Errorf("fleet: Outage.Tick: %w", tick.Check(o.Tick))
	case o.Capacity < 0:
		return errors.New("fleet: Outage.Capacity: must not be negative")
	case o.MaxRuns < 1 || o.MaxRuns > 1_000_000_000:
		return errors.New("fleet: Outage.MaxRuns: must be between 1 and 1000000000")
	}
	return nil
}

// month is the longest Down, Horizon and Spread of an Outage.
const month = 30 * 24 * time.Hour

// within reports whether d is from 0 to most.
func within(d, most time.Duration) bool { return d >= 0 && d <= most }

// Run simulates the fleet under s. It returns a
// *retrypolicy.ValidationError for an invalid s, and an error for an
// Outage that cannot run. When ctx is done it stops within a few thousand
// runs and returns the result so far, Truncated, with an error that
// wraps ctx's.
func (o Outage) Run(ctx context.Context, s retrypolicy.Strategy) (OutageResult, error) {
	o = o.withDefaults()
	if err := o.check(); err != nil {
		return OutageResult{}, err
	}
	p, err := retrypolicy.Compile(s)
	if err != nil {
		return OutageResult{}, err
	}
	f := newFleet(o, p)
	err = f.run(ctx)
	return f.result(), err
}

// fleet is an Outage under way: its events are the jobs' runs.
type fleet struct {
	o         Outage
	r         OutageResult
	histories []history      // all under the one Policy
	eng       *engine[int32] // each run's job
	recovered []time.Duration
	second    time.Duration // the second whose runs inSecond counts
	inSecond  int
}

func newFleet(o Outage, p *retrypolicy.Policy) *fleet {
	f := &fleet{o: o, r: OutageResult{Strategy: p.Strategy()}, second: -1}
	f.histories = make([]history, o.Jobs)
	for i := range f.histories {
		f.histories[i].History = retrypolicy.NewHistory(p)
	}
	f.eng = newEngine[int32](o.MaxRuns, BoundMaxRuns)
	f.eng.heap = make([]entry[int32], 0, o.Jobs)
	rng := o.Seed
	f.eng.seed(o.Jobs, func(i int) (time.Duration, int32) {
		var at time.Duration
		if o.Spread > 0 {
			hi, _ := bits.Mul64(splitmix.Next(&rng), uint64(o.Spread))
			at = time.Duration(hi)
		}
		return at, int32(i)
	})
	return f
}

// run follows the runs until the horizon or a bound.
func (f *fleet) run(ctx context.Context) error {
	var err error
	f.r.TruncatedBy, err = f.eng.run(ctx, f.o.Down+f.o.Horizon, f.step)
	f.r.Truncated = f.r.TruncatedBy != ""
	if err != nil {
		return fmt.Errorf("fleet: Outage: %w", err)
	}
	return nil
}

// step runs job's run that starts at at.
func (f *fleet) step(at time.Duration, job int32) {
	o := &f.o
	f.r.Runs++
	f.r.Load = bump(f.r.Load, at)
	failure, fails := at+o.FailAfter, at < o.Down
	if !fails && o.Capacity > 0 {
		if s := at / time.Second; s != f.second {
			f.second, f.inSecond = s, 0
		}
		f.inSecond++
		failure, fails = at, f.inSecond > o.Capacity
	}
	if o.Log != nil {
		end := failure
		if !fails {
			end = at // a run that succeeds ends as it starts
		}
		o.Log(attemptlog.Attempt{Job: "job-" + strconv.Itoa(int(job)+1), Start: simStart.Add(at), End: simStart.Add(end),
			Succeeded: !fails, Seed: jobSeed(o.Seed, int(job)), HasSeed: true})
	}
	if !fails {
		f.recovered = append(f.recovered, at-o.Down)
		return
	}
	failedAt := simStart.Add(failure)
	uptime := failure - at
	d, _ := f.eng.decide(&f.histories[job], failedAt, uptime, jobSeed(o.Seed, int(job))) // within a History's range: at most 61 days from 2026
	f.r.Decisions++
	if o.onDecide != nil {
		o.onDecide(int(job), simStart.Add(at), failedAt, uptime, d)
	}
	if d.Action == retrypolicy.Fatal {
		f.r.Fatal++
		f.r.FatalAt = bump(f.r.FatalAt, failure)
		return
	}
	f.eng.schedule(tick.Next(d.Due.Sub(simStart), failure, o.Tick), job)
}

// result is the figures of the runs followed.
func (f *fleet) result() OutageResult {
	r := f.r
	r.Unfinished, r.Succeeded = f.eng.waiting(), len(f.recovered)
	for _, n := range r.Load {
		r.Peak = max(r.Peak, n)
	}
	r.Recovery = percentiles(f.recovered)
	r.Tick = f.o.Tick
	return r
}

// bump counts one more in the minute of at.
func bump(perMinute []int, at time.Duration) []int {
	m := int(at / time.Minute)
	for len(perMinute) <= m {
		perMinute = append(perMinute, 0)
	}
	perMinute[m]++
	return perMinute
}

// percentiles returns the nearest-rank p50, p99 and max of ds, which it
// sorts.
func percentiles(ds []time.Duration) Percentiles {
	if len(ds) == 0 {
		return Percentiles{}
	}
	slices.Sort(ds)
	rank := func(p int) time.Duration { return ds[(len(ds)*p+99)/100-1] }
	return Percentiles{P50: rank(50), P99: rank(99), Max: ds[len(ds)-1]}
}

// jobSeed returns job i's jitter seed in a simulation drawn from seed.
func jobSeed(seed uint64, i int) uint64 {
	x := seed ^ uint64(i)*0x9e3779b97f4a7c15
	return splitmix.Next(&x)
}
