package natsretry

import (
	"context"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/queuekit"
	"github.com/retrypolicy/retrypolicy/retry"
)

// action is what a delivery comes to.
type action uint8

const (
	skip       action = iota // an earlier delivery's copy: left alone
	runIt                    // run the handler
	ack                      // done: ack it, remove its history
	redeliver                // interrupted by its consumer stopping: at once, counting nothing
	wait                     // wait until due, in its consumer or parked
	giveUp                   // given up now: mark it dead, then dead-letter it
	deadLetter               // given up before: finish its dead letter
)

// step is what a delivery comes to, and for a wait, until when, from now.
type step struct {
	act      action
	due, now time.Time
}

// admit returns what m, whose history is hist, comes to before it runs,
// at now, and its history: an old copy is skipped, a message given up
// before is dead-lettered, an early redelivery waits for its due time, and
// deliveries that ended unseen count as one failure; else it runs. A
// history that claims a delivery far beyond this one is repaired, not
// obeyed.
func (p *Policy) admit(ctx context.Context, m delivery, hist history, now time.Time) (step, history) {
	md := m.md
	if hist.seen > md.NumDelivered+maxStale {
		// No copy lags so far behind: a history written by a stranger.
		p.logger.WarnContext(ctx, "natsretry: the message's history claims a delivery far beyond this one; it starts anew", p.ids(m, repairedText(m, hist))...)
		p.repaired(ctx, m)
		hist = history{}
	}
	switch due := hist.dueTime(); {
	case hist.seen >= md.NumDelivered && md.NumDelivered > 1:
		return step{act: skip}, hist // an earlier delivery's copy, held in the client's buffer while JetStream redelivered it
	case hist.dead:
		return step{act: deadLetter}, hist // given up before, its copy perhaps made
	case due.After(now) && due.Sub(now) <= hist.waitFor()+m.ackWait:
		// Redelivered early: back to its time. A due time farther away
		// than the wait decided (the clock stepped back, a replica's is
		// skewed) is not trusted: the message runs.
		hist.seen = md.NumDelivered
		return step{act: wait, due: due, now: now}, hist
	case hist.seen+1 < md.NumDelivered:
		return p.unseen(ctx, m, hist, now)
	}
	return step{act: runIt}, hist
}

// unseen counts the deliveries of m before this one that ended unseen (a
// consumer died mid-run, or the history could not be written) as one
// failure now, with no uptime credit: a gap of several is one run that
// failed and deliveries that never ran, the history unreadable. It returns
// what m comes to: given up, a wait, or a run, its history written first
// so that a crash in this run is a gap of its own.
func (p *Policy) unseen(ctx context.Context, m delivery, hist history, now time.Time) (step, history) {
	hist, v := p.judge(ctx, m, hist, nil, span{now, now})
	switch {
	case v.Action == retrypolicy.Fatal:
		hist.lastError = "a delivery ended without an ack or a nak (its consumer stopped mid-run)"
		return step{act: giveUp}, hist
	case v.Due.After(now):
		return step{act: wait, due: v.Due, now: now}, hist
	}
	hist.seen--
	p.save(ctx, m, hist)
	return step{act: runIt}, hist
}

// decide returns what m, whose history is hist, comes to after a run over
// ran that ended as o says, and its history: done, redelivered at once
// (interrupted by its consumer stopping: no failure), or judged.
func (p *Policy) decide(ctx context.Context, m delivery, hist history, o outcome, ran span) (step, history) {
	switch {
	case !o.failed:
		return step{act: ack}, hist
	case o.stopped:
		hist.seen = m.md.NumDelivered
		return step{act: redeliver}, hist
	}
	hist, v := p.judge(ctx, m, hist, &o.failure, ran)
	if v.Action == retrypolicy.Fatal {
		return step{act: giveUp}, hist
	}
	return step{act: wait, due: v.Due, now: ran.end}, hist
}

// judge returns the verdict on the failure of m's delivery, which ran
// over ran and failed as f says (nil for a delivery that ended unseen),
// and m's history after it: queuekit.Settle's, a strategy from the
// message's header waiting no longer than Config.MaxHeaderDelay.
func (p *Policy) judge(ctx context.Context, m delivery, hist history, f *failure, ran span) (history, queuekit.Verdict) {
	in := queuekit.Failure{Policy: m.pol, Failures: hist.failures, Ended: ran.end, Uptime: ran.end.Sub(ran.start),
		Seed: m.seed, Limit: p.policies.WaitLimit(m.msg.Subject())}
	if m.own {
		in.MaxDelay = p.headerDelay(m.msg.Subject()) // a publisher chooses a strategy, not to park the consumer
	}
	if f != nil {
		in.Marks = f.marks
	}
	s := queuekit.Settle(in)
	v := s.Verdict
	p.decided(ctx, m, s.Decided, in.Uptime, v)
	hist.failures = s.Kept
	hist.seen, hist.due, hist.wait = m.md.NumDelivered, 0, 0
	switch v.Action {
	case retrypolicy.Fatal:
		hist.reason = v.GaveUp
		if f != nil {
			hist.lastError = f.text
		}
		if v.GaveUp == retry.RetryAfterTooLong {
			hist.wait = ceilMillis(v.Asked) // the wait asked, for the dead letter
		}
	case retrypolicy.Wait:
		hist.due = v.Due.UnixMilli()
		hist.wait = v.Due.Sub(s.At).Milliseconds()
	}
	return hist, v
}

// headerDelay is the longest a message's own strategy may make it wait:
// Config.MaxHeaderDelay, else its subject's strategy's MaxDelay, else an
// hour.
func (p *Policy) headerDelay(subject string) time.Duration {
	if p.maxHeaderDelay > 0 {
		return p.maxHeaderDelay
	}
	if d := p.policies.Kind(subject).Strategy().Backoff.MaxDelay; d > 0 {
		return d
	}
	return time.Hour
}

// ceilMillis is d in whole milliseconds, rounded up.
func ceilMillis(d time.Duration) int64 {
	ms := d.Milliseconds()
	if d%time.Millisecond > 0 {
		ms++
	}
	return ms
}
