package natsretry

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/retrypolicy/retrypolicy/queuekit"
)

// ReplayOptions say how DeadLetters.Replay sends dead letters back.
type ReplayOptions struct {
	// Stream is the stream the dead letters came from, and go back to: the
	// operator names it, since a dead letter's own headers are not trusted
	// to say where to publish. Required.
	Stream string
	// Rate is how many dead letters a second are sent, in (0,
	// queuekit.MaxReplayRate]: the n-th (from 0) is sent n/Rate seconds
	// after the first, plus its jitter (queuekit.Pacing). Required.
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
}

// check returns why o cannot replay.
func (o ReplayOptions) check() error {
	switch {
	case o.Stream == "":
		return errors.New("natsretry: ReplayOptions.Stream: the stream the dead letters came from is required")
	case o.Limit < 0:
		return errors.New("natsretry: ReplayOptions.Limit: must not be negative, got " + strconv.Itoa(o.Limit))
	}
	return (&queuekit.Pacing{Rate: o.Rate, Jitter: o.Jitter}).Check("natsretry: ReplayOptions.")
}

// ReplayOutcome is what became of a dead letter in a replay.
type ReplayOutcome string

// A dead letter's outcomes in a replay.
const (
	// ReplayReplayed: published to its stream, and removed.
	ReplayReplayed ReplayOutcome = "replayed"
	// ReplayDuplicate: its stream had it already (a replay interrupted
	// between the publish and the removal): not sent twice; removed.
	ReplayDuplicate ReplayOutcome = "duplicate"
	// ReplayRefused: not a dead letter that may go to the stream named
	// (its subject is not one the stream captures, it came from another,
	// or it is no dead letter of this package): left in place.
	ReplayRefused ReplayOutcome = "refused"
	// ReplayFailed: its publish or its removal failed: left in place, to
	// be replayed again (a removal failed after a publish is a duplicate
	// then).
	ReplayFailed ReplayOutcome = "failed"
	// ReplayWould: a dry run's, a dead letter that would be sent.
	ReplayWould ReplayOutcome = "would replay"
)

// ReplayResult is what became of one dead letter.
type ReplayResult struct {
	DeadLetter DeadLetter
	Outcome    ReplayOutcome
	// Sequence is its sequence in the stream it went back to (replayed or
	// duplicate).
	Sequence uint64
	// Err says why it was refused or failed.
	Err error
}

// ReplayProgress is how a replay goes.
type ReplayProgress struct {
	// Replayed counts the dead letters sent (duplicates included),
	// Refused and Failed those left in place.
	Replayed, Refused, Failed int
	// Left counts the dead letters of the stream not yet looked at.
	Left uint64
	// Rate is the sends a second so far (queuekit.Pacing.SentRate).
	Rate float64
	// Elapsed is the time since the replay began.
	Elapsed time.Duration
}

// ReplayReport is what a replay did.
type ReplayReport struct {
	// Matched counts the dead letters the filter selected and the replay
	// looked at (up to Limit sent); the rest count their outcomes.
	Matched, Replayed, Duplicates, Refused, Failed, Would int
	// Elapsed is how long it took.
	Elapsed time.Duration
	// DuplicateWindow is the stream's: a replay interrupted sends nothing
	// twice when run again within it.
	DuplicateWindow time.Duration
}

// Replay sends the dead letters f selects back to the stream they came
// from (o.Stream), at o.Rate a second, each as Replay sends one: to the
// subject it was given up on, with its payload and its own headers, so
// that it starts anew. Each is removed from the dead-letter stream only
// after the stream acknowledged it. Each is published with a message id
// made of the dead letter's own identity (the dead-letter stream and its
// sequence there), so that a replay interrupted between a publish and its
// removal, run again within the stream's duplicate window
// (ReplayReport.DuplicateWindow; 2 minutes by default), sends nothing
// twice and loses nothing. A dead letter refused (Replay's rules) or whose
// publish fails is left in place and reported; the replay goes on. It
// returns when every selected dead letter was looked at, Limit were sent,
// or ctx ends (its error then).
func (d *DeadLetters) Replay(ctx context.Context, f Filter, o ReplayOptions) (ReplayReport, error) {
	if err := o.check(); err != nil {
		return ReplayReport{}, err
	}
	if err := f.Check(); err != nil {
		return ReplayReport{}, err
	}
	s, err := d.js.Stream(ctx, o.Stream)
	if err != nil {
		return ReplayReport{}, errors.New("natsretry: Replay: stream " + queuekit.Quote(o.Stream) + ": " + err.Error())
	}
	cfg := s.CachedInfo().Config
	r := replay{d: d, o: o, subjects: cfg.Subjects, deadName: d.stream.CachedInfo().Config.Name,
		pace: queuekit.Pacing{Rate: o.Rate, Jitter: o.Jitter, Now: d.clock.now, Sleep: d.clock.sleep}}
	r.report.DuplicateWindow = cfg.Duplicates
	if r.report.DuplicateWindow == 0 {
		r.report.DuplicateWindow = 2 * time.Minute // the server's default
	}
	r.began = r.pace.Clock()
	err = r.run(ctx, f)
	r.report.Elapsed = r.pace.Clock().Sub(r.began)
	r.progress(r.left, true)
	return r.report, err
}

// replay is one run of Replay.
type replay struct {
	d        *DeadLetters
	o        ReplayOptions
	subjects []string // the stream's
	deadName string
	pace     queuekit.Pacing
	report   ReplayReport
	began    time.Time
	told     time.Time // the last progress
	left     uint64    // dead letters not yet looked at, after the last
	last     ReplayProgress
	said     bool // a progress was told
}

// run replays the dead letters f selects.
func (r *replay) run(ctx context.Context, f Filter) error {
	for dl, err := range r.d.read(ctx, f, false) {
		if err != nil {
			return err
		}
		if !f.Match(dl.DeadLetter) {
			continue
		}
		if r.o.Limit > 0 && r.report.Replayed+r.report.Duplicates+r.report.Would >= r.o.Limit {
			return nil
		}
		r.report.Matched++
		res, err := r.one(ctx, dl.DeadLetter)
		if err != nil {
			return err
		}
		r.count(res)
		r.left = dl.left
		r.progress(r.left, false)
	}
	return nil
}

// one replays dl: refused, paced then sent, or (a dry run) reported.
func (r *replay) one(ctx context.Context, dl DeadLetter) (ReplayResult, error) {
	res := ReplayResult{DeadLetter: dl}
	if err := replayableInto(dl.Subject, dl.Stream, r.o.Stream, r.subjects); err != nil {
		res.Outcome, res.Err = ReplayRefused, errors.New("natsretry: Replay: "+err.Error())
		return res, nil
	}
	if r.o.DryRun {
		res.Outcome = ReplayWould
		return res, nil
	}
	if err := r.pace.Wait(ctx); err != nil {
		return res, err
	}
	id := "retrypolicy.replay." + r.deadName + "." + strconv.FormatUint(dl.Sequence, 10)
	ack, err := r.d.js.PublishMsg(ctx, replayCopy(dl.Subject, dl.Header, dl.Data), jetstream.WithExpectStream(r.o.Stream), jetstream.WithMsgID(id))
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		res.Outcome, res.Err = ReplayFailed, errors.New("natsretry: Replay: publish: "+err.Error())
		return res, nil
	}
	res.Sequence, res.Outcome = ack.Sequence, ReplayReplayed
	if ack.Duplicate {
		res.Outcome = ReplayDuplicate
	}
	if r.d.afterPublish != nil {
		r.d.afterPublish()
	}
	if err := r.d.stream.DeleteMsg(ctx, dl.Sequence); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		res.Outcome, res.Err = ReplayFailed, errors.New("natsretry: Replay: sent, but not removed (a replay again sends it as a duplicate): "+err.Error())
	}
	return res, nil
}

// count adds res to the report, and tells Each.
func (r *replay) count(res ReplayResult) {
	switch res.Outcome {
	case ReplayReplayed:
		r.report.Replayed++
	case ReplayDuplicate:
		r.report.Duplicates++
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
// unless final.
func (r *replay) progress(left uint64, final bool) {
	if r.o.Progress == nil {
		return
	}
	now := r.pace.Clock()
	if !final && now.Sub(r.told) < time.Second {
		return
	}
	r.told = now
	p := ReplayProgress{Replayed: r.report.Replayed + r.report.Duplicates, Refused: r.report.Refused, Failed: r.report.Failed,
		Left: left, Elapsed: now.Sub(r.began)}
	if final && r.said && p.Replayed == r.last.Replayed && p.Refused == r.last.Refused && p.Failed == r.last.Failed && p.Left == r.last.Left {
		return // the last line said it all
	}
	p.Rate = r.pace.SentRate(now)
	r.last, r.said = p, true
	r.o.Progress(p)
}

// replayCopy is the message a dead letter of subject, with header and
// data, is sent back as: its own headers, not the dead-letter ones nor
// JetStream's.
func replayCopy(subject string, header nats.Header, data []byte) *nats.Msg {
	out := nats.NewMsg(subject)
	out.Data = data
	for name, values := range header {
		if !strings.HasPrefix(name, "Retrypolicy-") && !strings.HasPrefix(name, "Nats-") {
			out.Header[name] = slices.Clone(values)
		}
	}
	return out
}

// pacingClock is the clock a replay is paced by: nil functions are the
// machine's (queuekit.Pacing); a test's moves forward as it sleeps.
type pacingClock struct {
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
}
