package natsretry

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/queuekit"
)

// A delivery, read top to bottom: open it (this file), load its history
// (store.go), admit it or not and run it (decide.go, run.go), decide on how
// it ended (decide.go), then one act: ack it (ack.go), make it wait in its
// consumer (wait.go), park it (park.go) or dead-letter it (deadletter.go).
// A parked copy (parking.go) opens as the message it stands for and goes
// the same way.

// maxStale is the most deliveries a copy of a message may lag behind the
// last one the policy saw end and still be taken for a copy that waited in
// the client's buffer (and left alone): each later delivery came an
// AckWait or a nak after the one before, far fewer than this while a copy
// waits. A history claiming more was not written by this delivery's
// policy: it is repaired, not obeyed.
const maxStale = 16

// delivery is a message being handled, with what the policy derives from
// it once.
type delivery struct {
	msg  jetstream.Msg
	md   *jetstream.MsgMetadata
	key  string // its history's: a work message's, or its parked record's
	pol  *retrypolicy.Policy
	own  bool // pol is the message's own strategy, from its header
	seed uint64
	// kept: the message may have a history under key (not a first
	// delivery of a work message).
	kept bool
	// park is where a long wait moves the message; nil when it cannot be
	// moved (waits stay in place, or the message is parked already).
	park *parking
	// rec is, for a parked message, its record (it is saved in it), and
	// parkedIn the parking it runs from.
	rec      *parkedRecord
	parkedIn *parking
	// h runs the message, as a consumer of ackWait's.
	h       Handler
	ackWait time.Duration
}

// workKey is the history key of the work message m is or stands for: a
// dead letter's identity.
func (m *delivery) workKey() string {
	if m.rec != nil {
		return m.rec.origin
	}
	return m.key
}

// span is when a run of a delivery started and ended.
type span struct{ start, end time.Time }

// handle runs h on one delivery of msg, a work consumer's, under the
// policy: it opens the delivery, loads its history, and finishes a move
// to the parking stream that a crash cut short, or delivers it.
func (p *Policy) handle(runCtx context.Context, msg jetstream.Msg, h Handler, ackWait time.Duration, park *parking) {
	ctx := context.WithoutCancel(runCtx) // the policy's own round trips end as they would, the consumer stopping
	md, err := msg.Metadata()
	if err != nil {
		p.logger.ErrorContext(ctx, "natsretry: not a JetStream delivery; left to its redelivery", slog.String("error", err.Error()))
		return
	}
	m := delivery{msg: msg, md: md, key: historyKey(md.Stream, md.Consumer, md.Sequence.Stream, md.Timestamp),
		seed: queuekit.Seed(int64(md.Sequence.Stream)), kept: md.NumDelivered > 1, park: park, h: h, ackWait: ackWait}
	m.pol, m.own = p.policyOf(ctx, m)
	var room [16]int64
	var hist history
	if m.kept { // a first delivery has no history yet
		var ok bool
		if hist, ok = p.load(ctx, m, room[:]); !ok {
			p.nak(ctx, m, StoreRetry)
			return
		}
	}
	if hist.parkedID != "" && park != nil {
		p.finishMove(ctx, m, hist)
		return
	}
	p.deliver(runCtx, ctx, m, hist)
}

// deliver admits m, whose history is hist, runs it, decides on how the
// run ended, and acts: the path every delivery takes, a work message's or
// a parked copy's.
func (p *Policy) deliver(runCtx, ctx context.Context, m delivery, hist history) {
	next, hist := p.admit(ctx, m, hist, p.now())
	if next.act == runIt {
		start := p.now()
		o := p.run(runCtx, m)
		if o.abandoned {
			return // JetStream's redelivery, after AckWait, is the run that counts
		}
		next, hist = p.decide(ctx, m, hist, o, span{start, p.now()})
	}
	p.act(ctx, m, hist, next)
}

// act does what next says with m, whose history is hist.
func (p *Policy) act(ctx context.Context, m delivery, hist history, next step) {
	switch next.act {
	case ack:
		p.done(ctx, m)
	case redeliver:
		p.save(ctx, m, hist)
		p.nak(ctx, m, 0)
	case wait:
		p.wait(ctx, m, hist, next.due, next.now)
	case giveUp:
		p.giveUp(ctx, m, hist)
	case deadLetter:
		p.deadLetter(ctx, m, hist)
	}
}

// policyOf returns the policy of a delivery's message: its own strategy
// (HeaderStrategy), and true, else its subject's; an invalid own strategy
// is logged at its first delivery and its subject's applies.
func (p *Policy) policyOf(ctx context.Context, m delivery) (*retrypolicy.Policy, bool) {
	raw := m.msg.Headers().Get(HeaderStrategy)
	if raw == "" {
		return p.policies.Kind(m.msg.Subject()), false
	}
	pol, err := p.policies.Own([]byte(raw))
	if err != nil {
		if m.md.NumDelivered == 1 {
			p.logger.WarnContext(ctx, "natsretry: the message's strategy is invalid; its subject's strategy applies",
				slog.String("subject", m.msg.Subject()), slog.Uint64("sequence", m.md.Sequence.Stream), slog.String("error", err.Error()))
		}
		return p.policies.Kind(m.msg.Subject()), false
	}
	return pol, true
}

// ids are the log attributes of m and err.
func (p *Policy) ids(m delivery, err error) []any {
	return []any{slog.String("subject", m.msg.Subject()), slog.String("stream", m.md.Stream),
		slog.Uint64("sequence", m.md.Sequence.Stream), slog.String("error", err.Error())}
}

// repairedText says why a history was started anew.
func repairedText(m delivery, hist history) error {
	return fmt.Errorf("delivery %d, history's last seen %d", m.md.NumDelivered, hist.seen)
}
