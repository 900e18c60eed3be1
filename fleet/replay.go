package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/tick"
)

// DefaultMaxReplayed is the most attempts a [Replay] makes when its
// MaxAttempts is zero.
const DefaultMaxReplayed = 10_000_000

// ReplayHorizon is how long after a log's last observation a replay
// follows: a job whose next attempt would start at or after it (or past
// the last instant a log holds) is Unfinished.
const ReplayHorizon = 24 * time.Hour

// ReplayJobBytes is the most a replay holds for each job of its log: the
// job's History and its place among the jobs, its completion, and the
// event that waits for it. See Replay for the whole bound.
const ReplayJobBytes = 160

// Replay is a strategy run on a recorded history (docs/semantics.md, section 6):
// the dependency's availability read from a [Log], each job that failed
// there started when it was and retried by the library's decisions under
// the strategy and the controller's Tick (ticks at multiples of it since
// the Unix epoch). A replayed attempt that starts while the dependency is
// down fails after the job's median recorded failed attempt (its uptime)
// and is decided then; one that starts while it is up succeeds, and the
// job completes its median recorded success later (0 if none). An attempt
// that would start more than [ReplayHorizon] after the log's last
// observation is not made: its job is Unfinished. A job with no recorded
// failure is not replayed: it completes as recorded. A replay is
// deterministic, and bounded: at most MaxAttempts replayed attempts, a
// History's [MaxJobFailures], the held failures' [MaxHeldFailures], and
// its context. A zero field means its default.
//
// Its memory is a function of its log, never of the attempts it makes or
// the time they span: beside the Log, a replay holds at most
// [ReplayJobBytes] for each job of the log, 16 bytes for each failure its
// Histories hold at once (at most MaxHeldFailures), 64 bytes for each job
// waiting for an attempt at once (at most one a job: jobs arrive as the run
// reaches their first attempt), and 64 KiB for its [Load] of at most
// [MaxLoadBuckets] buckets. A two-line log from 1970 to 2262 costs what any
// two-line log costs.
type Replay struct {
	// Tick is the controller's check; zero retries exactly when due.
	Tick time.Duration
	// MaxAttempts is the most attempts the replay makes, from 1 to
	// 1,000,000,000 (the recorded attempts of jobs not replayed do not
	// count); zero is DefaultMaxReplayed.
	MaxAttempts int
}

// ReplayResult is what a log records, or what a strategy would have done
// with its jobs.
type ReplayResult struct {
	// Strategy is the strategy replayed, its zero fields filled; the zero
	// Strategy for the log as recorded.
	Strategy retrypolicy.Strategy
	// Jobs counts the log's jobs; Completed, Fatal and Unfinished those
	// that ended so (a log records no Unfinished job).
	Jobs, Completed, Fatal, Unfinished int
	// FatalCompletedInReality counts the Fatal jobs that the log completes.
	FatalCompletedInReality int
	// Attempts counts the attempts made (and the recorded ones of the jobs
	// not replayed), AttemptsDown those that start while the dependency is
	// down, and PeakPerMin the most of those that start in one minute
	// (minutes from the Unix epoch).
	Attempts, AttemptsDown, PeakPerMin int
	// Replayed counts the attempts the replay made: Attempts less the
	// recorded ones of the jobs not replayed. MaxAttempts bounds it.
	Replayed int
	// Recovery is, over the Recovered completions at or after the
	// dependency's recovery (its first up observation after its last down
	// one), the time from it to each.
	Recovery  Percentiles
	Recovered int
	// Load is the attempts that start in each minute, down or up, over
	// the run, in at most MaxLoadBuckets buckets.
	Load Load
	// Tick is the controller tick the replay ran under; 0 for the log as
	// recorded, and for a replay with none.
	Tick time.Duration
	// Truncated reports that the replay stopped at a bound before its
	// horizon, TruncatedBy which: its counts are then lower bounds.
	Truncated   bool
	TruncatedBy Bound
}

// check returns an error for a Replay that cannot run.
func (r Replay) check() error {
	if err := tick.Check(r.Tick); err != nil {
		return fmt.Errorf("fleet: Replay.Tick: %w", err)
	}
	if r.MaxAttempts < 0 || r.MaxAttempts > 1_000_000_000 {
		return errors.New("fleet: Replay.MaxAttempts: must be between 0 and 1000000000")
	}
	return nil
}

// Run replays log under s. It returns a *retrypolicy.ValidationError for
// an invalid s, and an error for a Replay that cannot run. When ctx is
// done it stops within a few thousand attempts and returns the result so
// far, Truncated, with an error that wraps ctx's.
func (r Replay) Run(ctx context.Context, log *Log, s retrypolicy.Strategy) (ReplayResult, error) {
	if err := r.check(); err != nil {
		return ReplayResult{}, err
	}
	if r.MaxAttempts == 0 {
		r.MaxAttempts = DefaultMaxReplayed
	}
	p, err := retrypolicy.Compile(s)
	if err != nil {
		return ReplayResult{}, err
	}
	rp := newReplaying(r, log, p)
	bound, err := rp.eng.run(ctx, rp.end-1, rp.step)
	res := rp.result(bound)
	if err != nil {
		return res, fmt.Errorf("fleet: Replay: %w", err)
	}
	return res, nil
}

// replaying is a Replay under way. Its events are the replayed jobs'
// attempts, an int32 each: a job's index for a retry, and -(k+1) for the
// first attempt of the k-th job in order of first attempts, which arrive
// one at a time (each arrival schedules the next), so that what waits is
// the jobs under way, not every job of the log.
type replaying struct {
	r         Replay
	log       *Log
	res       ReplayResult
	histories []history // by job, for the replayed ones
	eng       *engine[int32]
	order     []int32       // the replayed jobs, by first attempt
	end       time.Duration // the horizon: no attempt starts at or after it
	down, all minuteStream  // the attempts a minute, as the run goes
	load      *loadSeries
	done      []time.Duration
	ended     int // jobs completed or fatal
}

func newReplaying(r Replay, log *Log, p *retrypolicy.Policy) *replaying {
	rp := &replaying{r: r, log: log, res: ReplayResult{Strategy: p.Strategy(), Jobs: len(log.jobs)},
		end: saturatingAdd(log.avail.last, ReplayHorizon), load: newLoadSeries(log.firstMinute)}
	rp.histories = make([]history, len(log.jobs))
	for j := range log.jobs {
		if log.jobs[j].replayed {
			rp.histories[j].History = retrypolicy.NewHistory(p)
			rp.order = append(rp.order, int32(j))
		}
	}
	slices.SortStableFunc(rp.order, func(a, b int32) int { return cmp.Compare(log.jobs[a].first, log.jobs[b].first) })
	rp.eng = newEngine[int32](r.MaxAttempts, BoundMaxRuns)
	// Every job of the log replays: at most one event waits for each.
	rp.eng.maxPending = max(MaxPendingEvents, len(rp.order)+1)
	rp.down = minuteStream{recorded: log.asRecorded.downMinutes, emit: func(c minuteCount) {
		rp.res.PeakPerMin = max(rp.res.PeakPerMin, c.n)
	}}
	rp.all = minuteStream{recorded: log.asRecorded.allMinutes, emit: rp.load.add}
	if len(rp.order) > 0 {
		rp.eng.scheduleFirst(log.jobs[rp.order[0]].first, -1)
	}
	return rp
}

// step makes the attempt ev that starts at at: a job's first, or a retry.
func (rp *replaying) step(at time.Duration, ev int32) {
	if k := int(-ev - 1); ev < 0 && k+1 < len(rp.order) {
		rp.eng.scheduleFirst(rp.log.jobs[rp.order[k+1]].first, int32(-(k + 2)))
	}
	rp.attempt(at, rp.jobOf(ev))
}

// jobOf returns the job whose attempt ev is.
func (rp *replaying) jobOf(ev int32) int32 {
	if ev < 0 {
		return rp.order[-ev-1]
	}
	return ev
}

// attempt makes job's attempt that starts at at.
func (rp *replaying) attempt(at time.Duration, job int32) {
	j := &rp.log.jobs[job]
	rp.res.Attempts++
	rp.all.add(at)
	if !rp.log.avail.downAt(at) {
		rp.res.Completed++
		rp.ended++
		rp.done = append(rp.done, saturatingAdd(at, j.succeeded))
		return
	}
	rp.res.AttemptsDown++
	rp.down.add(at)
	failure := saturatingAdd(at, j.failed)
	d, ok := rp.eng.decide(&rp.histories[job], epoch.Add(failure), j.failed, j.seed)
	if !ok { // past what a History holds: past every horizon
		return
	}
	if d.Action == retrypolicy.Fatal {
		rp.res.Fatal++
		rp.ended++
		if j.completes {
			rp.res.FatalCompletedInReality++
		}
		rp.eng.forget(&rp.histories[job])
		return
	}
	if next := tick.Next(d.Due.Sub(epoch), failure, rp.r.Tick); next < rp.end {
		rp.eng.schedule(next, job)
	} // else at or past the horizon: the job is unfinished
}

// result is the figures of the attempts made, with those of the jobs not
// replayed; bound is what stopped the replay, if anything did.
func (rp *replaying) result(bound Bound) ReplayResult {
	res, as := rp.res, &rp.log.asRecorded
	_, replayed := rp.log.Jobs()
	res.Unfinished = replayed - rp.ended
	res.Replayed = res.Attempts
	res.Completed += len(as.completions)
	res.Attempts += as.attempts
	res.AttemptsDown += as.down
	rp.down.close()
	rp.all.close()
	res.PeakPerMin = rp.res.PeakPerMin
	res.Load = rp.load.load()
	res.Recovery, res.Recovered = rp.log.recoveries(append(rp.done, as.completions...))
	res.TruncatedBy, res.Truncated = bound, bound != ""
	res.Tick = rp.r.Tick
	return res
}
