package queuekit

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// ReplayOptions say how DeadLetters.Replay sends dead letters back.
type ReplayOptions struct {
	// Route is where they go back to.
	Route Route
	// Rate is how many dead letters a second are sent, in [MinReplayRate,
	// MaxReplayRate]: the n-th (from 0) n/Rate seconds after the first,
	// plus its jitter (Pacing). Required.
	Rate float64
	// Jitter, when positive, delays each send by a random part of it, so
	// that replays started together do not send together.
	Jitter time.Duration
	// Limit, when positive, is the most dead letters sent; the rest are
	// left for another replay.
	Limit int
	// DryRun sends and removes nothing: each dead letter that would be
	// sent is reported as ReplayWould (at once, not paced).
	DryRun bool
	// Each, when set, is told what became of each dead letter the filter
	// selects, in order.
	Each func(ReplayResult)
	// Progress, when set, is told how the replay goes at most once a
	// second, and once at its end.
	Progress func(ReplayProgress)
	// Between, when set, is called at each step of a letter's replay, on
	// the replay's goroutine: tests drive interleavings by it (another
	// replay run to its end, a context cancelled as if the process died).
	Between func(Step, Letter)
}

// Check returns why o cannot replay, naming the field (prefix, its
// owner's name, opens the message: "queuekit: ReplayOptions.").
func (o ReplayOptions) Check(prefix string) error {
	if o.Limit < 0 {
		return errors.New(prefix + "Limit: must not be negative, got " + strconv.Itoa(o.Limit))
	}
	return (&Pacing{Rate: o.Rate, Jitter: o.Jitter}).Check(prefix)
}

// Step is a step of a letter's replay, told to ReplayOptions.Between.
type Step int

// The steps of a letter's replay.
const (
	// StepSend: the letter is about to be sent (paced already).
	StepSend Step = iota + 1
	// StepSent: the letter was sent, and is about to be removed.
	StepSent
)

// ReplayOutcome is what became of a dead letter in a replay.
type ReplayOutcome string

// A dead letter's outcomes in a replay.
const (
	// ReplayReplayed: sent back, and removed.
	ReplayReplayed ReplayOutcome = "replayed"
	// ReplayDuplicate: its queue had it already (a replay interrupted
	// between the send and the removal): not sent twice; removed.
	ReplayDuplicate ReplayOutcome = "duplicate"
	// ReplaySkipped: no longer there when its turn came (another replay
	// or a purge took it): nothing sent.
	ReplaySkipped ReplayOutcome = "skipped"
	// ReplayRefused: not a dead letter that may go back where it claims
	// to come from: left in place.
	ReplayRefused ReplayOutcome = "refused"
	// ReplayFailed: its send or its removal failed: left in place, to be
	// replayed again (a removal failed after a send is a duplicate then).
	ReplayFailed ReplayOutcome = "failed"
	// ReplayWould: a dry run's, a dead letter that would be sent.
	ReplayWould ReplayOutcome = "would replay"
)

// ReplayResult is what became of one dead letter.
type ReplayResult struct {
	Letter  Letter
	Outcome ReplayOutcome
	// Sent is what its send did (replayed or duplicate).
	Sent Sent
	// Err says why it was refused or failed.
	Err error
}

// ReplayProgress is how a replay goes.
type ReplayProgress struct {
	// Replayed counts the dead letters sent (duplicates included), Skipped
	// those already gone, Refused and Failed those left in place.
	Replayed, Skipped, Refused, Failed int
	// Left counts the dead letters not yet looked at, -1 when not known.
	Left int64
	// Rate is the sends a second so far (Pacing.SentRate).
	Rate float64
	// Elapsed is the time since the replay began.
	Elapsed time.Duration
}

// ReplayReport is what a replay did.
type ReplayReport struct {
	// Matched counts the dead letters the filter selected and the replay
	// looked at (up to Limit sent); the rest count their outcomes.
	Matched, Replayed, Duplicates, Skipped, Refused, Failed, Would int
	// Elapsed is how long it took.
	Elapsed time.Duration
}

// Replay sends the dead letters f selects back where they came from
// (o.Route), at o.Rate a second, and removes each after it went. Each is
// sent only if it is still there, under an identity of its own (Driver),
// so that two replays at once, or one interrupted (the process killed,
// ctx ended) and run again, send each letter once and lose none. A letter
// gone meanwhile is skipped; one refused, or whose send fails, is left in
// place and reported; the replay goes on. It returns when every selected
// letter was looked at, Limit were sent, or ctx ends (its error then).
func (d DeadLetters) Replay(ctx context.Context, f Selector, o ReplayOptions) (ReplayReport, error) {
	if err := o.Check("queuekit: ReplayOptions."); err != nil {
		return ReplayReport{}, err
	}
	if err := d.check(f); err != nil {
		return ReplayReport{}, err
	}
	r := replay{d: d, o: o, pace: Pacing{Rate: o.Rate, Jitter: o.Jitter, Now: d.now, Sleep: d.Sleep}, left: -1}
	r.began = d.now()
	err := r.run(ctx, f)
	r.report.Elapsed = d.now().Sub(r.began)
	r.progress(true)
	return r.report, err
}

// replay is one run of Replay.
type replay struct {
	d      DeadLetters
	o      ReplayOptions
	pace   Pacing
	report ReplayReport
	began  time.Time
	told   time.Time // the last progress
	left   int64     // letters not yet looked at, after the last
	last   ReplayProgress
	said   bool // a progress was told
}

// run replays the dead letters f selects.
func (r *replay) run(ctx context.Context, f Selector) error {
	for l, err := range r.d.read(ctx, f, false) {
		if err != nil {
			return err
		}
		if r.o.Limit > 0 && r.report.Replayed+r.report.Duplicates+r.report.Would >= r.o.Limit {
			return nil
		}
		r.report.Matched++
		res, err := r.one(ctx, l.Letter)
		if err != nil {
			return err
		}
		r.count(res)
		r.left = l.left
		r.progress(false)
	}
	return nil
}

// one replays l: paced, sent, removed; or, a dry run, reported.
func (r *replay) one(ctx context.Context, l Letter) (ReplayResult, error) {
	res := ReplayResult{Letter: l, Outcome: ReplayWould}
	if r.o.DryRun {
		return res, nil
	}
	if err := r.pace.Wait(ctx); err != nil {
		return res, err
	}
	r.between(StepSend, l)
	var err error
	res.Sent, err = r.d.Driver.Send(ctx, l, r.o.Route)
	if err == nil {
		r.between(StepSent, l)
		if !res.Sent.Removed {
			err = r.d.Driver.Remove(ctx, l)
		}
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	res.Outcome, res.Err = outcome(res.Sent, err)
	return res, nil
}

// between tells Between the step s of l's replay.
func (r *replay) between(s Step, l Letter) {
	if r.o.Between != nil {
		r.o.Between(s, l)
	}
}

// outcome is what became of a letter whose send did sent, then err.
func outcome(sent Sent, err error) (ReplayOutcome, error) {
	switch {
	case err == nil && sent.Duplicate:
		return ReplayDuplicate, nil
	case err == nil:
		return ReplayReplayed, nil
	case sent.ID != 0 && errors.Is(err, ErrGone):
		return ReplayReplayed, nil // sent, and removed meanwhile by another
	case errors.Is(err, ErrGone):
		return ReplaySkipped, nil
	case errors.Is(err, ErrRefused):
		return ReplayRefused, err
	case sent.ID != 0:
		return ReplayFailed, errors.New("queuekit: Replay: sent, but not removed (a replay again sends it as a duplicate): " + err.Error())
	}
	return ReplayFailed, err
}

// count adds res to the report, and tells Each.
func (r *replay) count(res ReplayResult) {
	switch res.Outcome {
	case ReplayReplayed:
		r.report.Replayed++
	case ReplayDuplicate:
		r.report.Duplicates++
	case ReplaySkipped:
		r.report.Skipped++
	case ReplayRefused:
		r.report.Refused++
	case ReplayFailed:
		r.report.Failed++
	case ReplayWould:
		r.report.Would++
	}
	if r.o.Each != nil {
		r.o.Each(res)
	}
}

// progress tells Progress how the replay goes, at most once a second
// unless final, and never the same twice.
func (r *replay) progress(final bool) {
	if r.o.Progress == nil {
		return
	}
	now := r.d.now()
	if !final && now.Sub(r.told) < time.Second {
		return
	}
	r.told = now
	p := ReplayProgress{Replayed: r.report.Replayed + r.report.Duplicates, Skipped: r.report.Skipped,
		Refused: r.report.Refused, Failed: r.report.Failed, Left: r.left, Elapsed: now.Sub(r.began)}
	if final && r.said && p.Replayed == r.last.Replayed && p.Skipped == r.last.Skipped &&
		p.Refused == r.last.Refused && p.Failed == r.last.Failed && p.Left == r.last.Left {
		return // the last line said it all
	}
	p.Rate = r.pace.SentRate(now)
	r.last, r.said = p, true
	r.o.Progress(p)
}
