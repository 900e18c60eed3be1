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

// admit returns what m comes to before it runs, at now, its history
// brought up to date: an old copy is skipped, a message given up before is
// dead-lettered, an early redelivery waits for its due time, and
// deliveries that ended unseen count as one failure; else it runs. A
// history that claims a delivery far beyond this one is repaired, not
// obeyed.
func (m *delivery) admit(ctx context.Context, now time.Time) step {
	md := m.md
	if m.hist.seen > md.NumDelivered+maxStale {
		// No copy lags so far behind: a history written by a stranger.
		m.p.logger.WarnContext(ctx, "natsretry: the message's history claims a delivery far beyond this one; it starts anew", m.ids(m.repairedText())...)
		m.repaired(ctx)
		m.hist = history{}
	}
	switch due := m.hist.dueTime(); {
	case m.hist.seen >= md.NumDelivered && md.NumDelivered > 1:
		return step{act: skip} // an earlier delivery's copy, held in the client's buffer while JetStream redelivered it
	case m.hist.dead:
		return step{act: deadLetter} // given up before, its copy perhaps made
	case due.After(now) && due.Sub(now) <= m.hist.waitFor()+m.ackWait:
		// Redelivered early: back to its time. A due time farther away
		// than the wait decided (the clock stepped back, a replica's is
		// skewed) is not trusted: the message runs.
		m.hist.seen = md.NumDelivered
		return step{act: wait, due: due, now: now}
	case m.hist.seen+1 < md.NumDelivered:
		return m.unseen(ctx, now)
	}
	return step{act: runIt}
}

// unseen counts the deliveries of m before this one that ended unseen (a
// consumer died mid-run, or the history could not be written) as one
// failure now, with no uptime credit: a gap of several is one run that
// failed and deliveries that never ran, the history unreadable. It returns
// what m comes to: given up, a wait, or a run, its history written first
// so that a crash in this run is a gap of its own.
func (m *delivery) unseen(ctx context.Context, now time.Time) step {
	v := m.judge(ctx, nil, span{now, now})
	switch {
	case v.Action == retrypolicy.Fatal:
		m.hist.lastError = "a delivery ended without an ack or a nak (its consumer stopped mid-run)"
		return step{act: giveUp}
	case v.Due.After(now):
		return step{act: wait, due: v.Due, now: now}
	}
	m.hist.seen--
	m.save(ctx)
	return step{act: runIt}
}

// decide returns what m comes to after a run over ran that ended as o
// says: done, redelivered at once (interrupted by its consumer stopping:
// no failure), or judged.
func (m *delivery) decide(ctx context.Context, o outcome, ran span) step {
	switch {
	case !o.failed:
		return step{act: ack}
	case o.stopped:
		m.hist.seen = m.md.NumDelivered
		return step{act: redeliver}
	}
	v := m.judge(ctx, &o.failure, ran)
	if v.Action == retrypolicy.Fatal {
		return step{act: giveUp}
	}
	return step{act: wait, due: v.Due, now: ran.end}
}

// judge returns the verdict on the failure of m, which ran over ran and
// failed as f says (nil for a delivery that ended unseen), and brings m's
// history up to date with it: queuekit.Settle's verdict, a strategy from
// the message's header waiting no longer than Config.MaxHeaderDelay.
func (m *delivery) judge(ctx context.Context, f *failure, ran span) queuekit.Verdict {
	p, hist := m.p, &m.hist
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
	m.decided(ctx, s)
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
	return v
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
