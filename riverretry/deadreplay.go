package riverretry

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/retrypolicy/retrypolicy/queuekit"
)

// ReplayOptions say how DeadJobs.Replay makes dead jobs available again.
type ReplayOptions struct {
	// Rate is how many jobs a second are made available, in (0,
	// queuekit.MaxReplayRate]: the n-th (from 0) n/Rate seconds after the
	// first, plus its jitter (queuekit.Pacing). Required.
	Rate float64
	// Jitter, when positive, delays each by a random part of it.
	Jitter time.Duration
	// Limit, when positive, is the most jobs replayed; the rest are left
	// for another replay.
	Limit int
	// ResetAttempts starts each job anew: a job of the same kind, args,
	// queue, priority, tags and metadata (the policy's record dropped, so
	// that no failure of its earlier life counts) is inserted and the dead
	// one deleted, in one transaction. Without it, the job itself is made
	// available (River's JobRetry): its attempts and the policy's record
	// of its failures are kept, and count against it.
	ResetAttempts bool
	// DryRun changes nothing: each job that would be replayed is reported
	// as ReplayWould (at once, not paced).
	DryRun bool
	// Each, when set, is told what became of each job the filter selects,
	// in order.
	Each func(ReplayResult)
	// Progress, when set, is told how the replay goes at most once a
	// second, and once at its end.
	Progress func(ReplayProgress)
}

// check returns why o cannot replay.
func (o ReplayOptions) check() error {
	if o.Limit < 0 {
		return errors.New("riverretry: ReplayOptions.Limit: must not be negative, got " + strconv.Itoa(o.Limit))
	}
	return (&queuekit.Pacing{Rate: o.Rate, Jitter: o.Jitter}).Check("riverretry: ReplayOptions.")
}

// ReplayOutcome is what became of a dead job in a replay.
type ReplayOutcome string

// A dead job's outcomes in a replay.
const (
	// ReplayReplayed: made available again (or, with ResetAttempts,
	// inserted anew and the dead one deleted).
	ReplayReplayed ReplayOutcome = "replayed"
	// ReplayFailed: its transaction failed: the job is left as it was.
	ReplayFailed ReplayOutcome = "failed"
	// ReplayWould: a dry run's, a job that would be replayed.
	ReplayWould ReplayOutcome = "would replay"
)

// ReplayResult is what became of one dead job.
type ReplayResult struct {
	DeadJob DeadJob
	Outcome ReplayOutcome
	// ID is the id of the job that runs again: the dead job's, or with
	// ResetAttempts the new one's.
	ID int64
	// Err says why it failed.
	Err error
}

// ReplayProgress is how a replay goes.
type ReplayProgress struct {
	// Replayed counts the jobs replayed, Failed those left as they were.
	Replayed, Failed int
	// Rate is the sends a second so far (queuekit.Pacing.SentRate), and
	// Elapsed the time since the replay began.
	Rate    float64
	Elapsed time.Duration
}

// ReplayReport is what a replay did.
type ReplayReport struct {
	// Matched counts the dead jobs the filter selected and the replay
	// looked at; the rest count their outcomes.
	Matched, Replayed, Failed, Would int
	// Elapsed is how long it took.
	Elapsed time.Duration
}

// Replay makes the dead jobs f selects available again, at o.Rate a
// second, each in a transaction of its own: a replay interrupted (the
// process killed, ctx ended) leaves each job either replayed or as it
// was, so that one run again replays each once and loses none. A job
// whose transaction fails is left as it was and reported; the replay goes
// on. It returns when every selected job was looked at, Limit were
// replayed, or ctx ends (its error then).
func (d *DeadJobs[TTx]) Replay(ctx context.Context, f Filter, o ReplayOptions) (ReplayReport, error) {
	if err := o.check(); err != nil {
		return ReplayReport{}, err
	}
	if err := f.Check(); err != nil {
		return ReplayReport{}, err
	}
	r := jobReplay[TTx]{d: d, o: o, pace: queuekit.Pacing{Rate: o.Rate, Jitter: o.Jitter, Now: d.now, Sleep: d.sleep}}
	r.began = r.pace.Clock()
	err := r.run(ctx, f)
	r.report.Elapsed = r.pace.Clock().Sub(r.began)
	r.progress(true)
	return r.report, err
}

// jobReplay is one run of Replay.
type jobReplay[TTx any] struct {
	d      *DeadJobs[TTx]
	o      ReplayOptions
	pace   queuekit.Pacing
	report ReplayReport
	began  time.Time
	told   time.Time
	last   ReplayProgress // the last told
	said   bool           // a progress was told
}

// run replays the dead jobs f selects.
func (r *jobReplay[TTx]) run(ctx context.Context, f Filter) error {
	for dj, err := range r.d.read(ctx, f) {
		if err != nil {
			return err
		}
		if r.o.Limit > 0 && r.report.Replayed+r.report.Would >= r.o.Limit {
			return nil
		}
		r.report.Matched++
		res := ReplayResult{DeadJob: dj, Outcome: ReplayWould}
		if !r.o.DryRun {
			if err := r.pace.Wait(ctx); err != nil {
				return err
			}
			res.ID, err = r.one(ctx, dj.Job)
			res.Outcome, res.Err = ReplayReplayed, err
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				res.Outcome = ReplayFailed
			}
		}
		r.count(res)
	}
	return nil
}

// one replays job in a transaction of its own, and returns the id of the
// job that runs again.
func (r *jobReplay[TTx]) one(ctx context.Context, job *rivertype.JobRow) (int64, error) {
	driver := r.d.client.Driver()
	exec, err := driver.GetExecutor().Begin(ctx)
	if err != nil {
		return 0, errors.New("riverretry: Replay: " + err.Error())
	}
	defer exec.Rollback(context.WithoutCancel(ctx)) // after a commit, it does nothing
	tx := driver.UnwrapTx(exec)
	id := job.ID
	if r.o.ResetAttempts {
		res, err := r.d.client.InsertTx(ctx, tx, rawArgs{kind: job.Kind, args: job.EncodedArgs}, &river.InsertOpts{
			Queue: job.Queue, Priority: job.Priority, Tags: job.Tags, MaxAttempts: job.MaxAttempts, Metadata: withoutRecord(job.Metadata)})
		if err == nil {
			id = res.Job.ID
			_, err = r.d.client.JobDeleteTx(ctx, tx, job.ID)
		}
		if err != nil {
			return 0, errors.New("riverretry: Replay: job " + strconv.FormatInt(job.ID, 10) + ": " + err.Error())
		}
	} else if _, err := r.d.client.JobRetryTx(ctx, tx, job.ID); err != nil {
		return 0, errors.New("riverretry: Replay: job " + strconv.FormatInt(job.ID, 10) + ": " + err.Error())
	}
	if r.d.beforeCommit != nil {
		r.d.beforeCommit()
	}
	if err := exec.Commit(ctx); err != nil {
		return 0, errors.New("riverretry: Replay: job " + strconv.FormatInt(job.ID, 10) + ": " + err.Error())
	}
	return id, nil
}

// rawArgs are a job's args as River stored them, under its kind: a dead
// job's, inserted anew.
type rawArgs struct {
	kind string
	args []byte
}

// Kind returns the job's kind.
func (a rawArgs) Kind() string { return a.kind }

// MarshalJSON returns the args as they were stored.
func (a rawArgs) MarshalJSON() ([]byte, error) { return a.args, nil }

// withoutRecord is metadata without the policy's record (MetadataKey); the
// rest, a job's own strategy included, as it was.
func withoutRecord(metadata []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(metadata, &m) != nil {
		return nil
	}
	delete(m, MetadataKey)
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return b
}

// count adds res to the report, tells Each, and Progress once a second.
func (r *jobReplay[TTx]) count(res ReplayResult) {
	switch res.Outcome {
	case ReplayReplayed:
		r.report.Replayed++
	case ReplayFailed:
		r.report.Failed++
	case ReplayWould:
		r.report.Would++
	}
	if r.o.Each != nil {
		r.o.Each(res)
	}
	r.progress(false)
}

// progress tells Progress how the replay goes, at most once a second
// unless final.
func (r *jobReplay[TTx]) progress(final bool) {
	if r.o.Progress == nil {
		return
	}
	now := r.pace.Clock()
	if !final && now.Sub(r.told) < time.Second {
		return
	}
	r.told = now
	p := ReplayProgress{Replayed: r.report.Replayed, Failed: r.report.Failed, Elapsed: now.Sub(r.began)}
	if final && r.said && p.Replayed == r.last.Replayed && p.Failed == r.last.Failed {
		return // the last line said it all
	}
	p.Rate = r.pace.SentRate(now)
	r.last, r.said = p, true
	r.o.Progress(p)
}
