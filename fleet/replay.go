package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/tick"
)

// DefaultMaxReplayed is the most attempts a [Replay] makes when its
// MaxAttempts is zero.
const DefaultMaxReplayed = 10_000_000

// ReplayHorizon is how long after a log's last observation a replay
// follows: a job whose next attempt would start later is Unfinished.
const ReplayHorizon = 24 * time.Hour

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
	// Recovery is, over the Recovered completions at or after the
	// dependency's recovery (its first up observation after its last down
	// one), the time from it to each.
	Recovery  Percentiles
	Recovered int
	// PerMinute counts the attempts that start in each minute from the
	// Unix epoch, down or up, the minutes with none left out: in order, at
	// most one for each attempt.
	PerMinute []MinuteCount
	// Tick is the controller tick the replay ran under; 0 for the log as
	// recorded, and for a replay with none.
	Tick time.Duration
	// Truncated reports that the replay stopped at a bound before its
	// horizon, TruncatedBy which: its counts are then lower bounds.
	Truncated   bool
	TruncatedBy Bound
}

// MinuteCount is how many attempts start in the minute from Minute.
type MinuteCount struct {
	Minute time.Time
	N      int
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
	bound, err := rp.eng.run(ctx, saturatingAdd(log.avail.last, ReplayHorizon), rp.step)
	res := rp.result(bound)
	if err != nil {
		return res, fmt.Errorf("fleet: Replay: %w", err)
	}
	return res, nil
}

// replaying is a Replay under way: its events are the replayed jobs'
// attempts.
type replaying struct {
	r         Replay
	log       *Log
	res       ReplayResult
	histories []history // by job, for the replayed ones
	eng       *engine[int32]
	minutes   []minuteCount // the minutes of the attempts that start while down, in order
	all       []minuteCount // the minutes of every attempt, in order
	done      []time.Duration
	ended     int // jobs completed or fatal
}

func newReplaying(r Replay, log *Log, p *retrypolicy.Policy) *replaying {
	rp := &replaying{r: r, log: log, res: ReplayResult{Strategy: p.Strategy(), Jobs: len(log.jobs)}}
	rp.histories = make([]history, len(log.jobs))
	rp.eng = newEngine[int32](r.MaxAttempts, BoundMaxRuns)
	var replayed []int32
	for j := range log.jobs {
		if log.jobs[j].replayed {
			rp.histories[j].History = retrypolicy.NewHistory(p)
			replayed = append(replayed, int32(j))
		}
	}
	rp.eng.seed(len(replayed), func(i int) (time.Duration, int32) {
		return log.jobs[replayed[i]].first, replayed[i]
	})
	return rp
}

// step makes job's attempt that starts at at.
func (rp *replaying) step(at time.Duration, job int32) {
	j := &rp.log.jobs[job]
	rp.res.Attempts++
	rp.all = addMinute(rp.all, at)
	if !rp.log.avail.downAt(at) {
		rp.res.Completed++
		rp.ended++
		rp.done = append(rp.done, saturatingAdd(at, j.succeeded))
		return
	}
	rp.res.AttemptsDown++
	rp.minutes = addMinute(rp.minutes, at)
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
	rp.eng.schedule(tick.Next(d.Due.Sub(epoch), failure, rp.r.Tick), job)
}

// result is the figures of the attempts made, with those of the jobs not
// replayed; bound is what stopped the replay, if anything did.
func (rp *replaying) result(bound Bound) ReplayResult {
	res, as := rp.res, &rp.log.asRecorded
	_, replayed := rp.log.Jobs()
	res.Unfinished = replayed - rp.ended
	res.Completed += len(as.completions)
	res.Attempts += as.attempts
	res.AttemptsDown += as.down
	res.PeakPerMin = peak(rp.minutes, as.downMinutes)
	res.Recovery, res.Recovered = rp.log.recoveries(append(rp.done, as.completions...))
	res.TruncatedBy, res.Truncated = bound, bound != ""
	res.PerMinute = perMinute(merge(rp.all, as.allMinutes))
	res.Tick = rp.r.Tick
	return res
}

// addMinute counts an attempt at at in counts, whose minutes come in order.
func addMinute(counts []minuteCount, at time.Duration) []minuteCount {
	m := int64(at / time.Minute)
	if n := len(counts); n > 0 && counts[n-1].minute == m {
		counts[n-1].n++
		return counts
	}
	return append(counts, minuteCount{m, 1})
}

// merge returns the counts of a and b together, each in order of its
// minutes.
func merge(a, b []minuteCount) []minuteCount {
	out := make([]minuteCount, 0, len(a)+len(b))
	for len(a) > 0 || len(b) > 0 {
		switch {
		case len(b) == 0 || len(a) > 0 && a[0].minute < b[0].minute:
			out, a = append(out, a[0]), a[1:]
		case len(a) == 0 || b[0].minute < a[0].minute:
			out, b = append(out, b[0]), b[1:]
		default:
			out, a, b = append(out, minuteCount{a[0].minute, a[0].n + b[0].n}), a[1:], b[1:]
		}
	}
	return out
}

// perMinute returns counts as the exported form.
func perMinute(counts []minuteCount) []MinuteCount {
	out := make([]MinuteCount, len(counts))
	for i, c := range counts {
		out[i] = MinuteCount{epoch.Add(time.Duration(c.minute) * time.Minute), c.n}
	}
	return out
}
