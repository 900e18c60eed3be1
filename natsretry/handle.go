package natsretry

import (
	"context"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"
)

// A delivery, read top to bottom: open it (this file; what a delivery is
// and what it derives, delivery.go), load its history (store.go), admit it
// or not and run it (decide.go, run.go), decide on how it ended
// (decide.go), then one act: ack it (ack.go), make it wait in its consumer
// (wait.go), park it (park.go) or dead-letter it (deadletter.go). A parked
// copy (parked.go) opens as the message it stands for and goes the same
// way.

// handle runs c's handler on one delivery of msg, a work consumer's, under
// the policy: it opens the delivery, loads its history, and finishes a
// move to the parking stream that a crash cut short, or delivers it.
func (p *Policy) handle(runCtx context.Context, msg jetstream.Msg, c consumer) {
	ctx := context.WithoutCancel(runCtx) // the policy's own round trips end as they would, the consumer stopping
	md, err := msg.Metadata()
	if err != nil {
		p.logger.ErrorContext(ctx, "natsretry: not a JetStream delivery; left to its redelivery", slog.String("error", err.Error()))
		return
	}
	m := p.open(msg, md, c)
	m.pol, m.own = m.policyOf(ctx)
	var room [16]int64
	if m.kept && !m.load(ctx, room[:]) { // a first delivery has no history yet
		m.nak(ctx, StoreRetry)
		return
	}
	if m.hist.parkedID != "" && m.parking != nil {
		m.finishMove(ctx)
		return
	}
	m.deliver(runCtx, ctx)
}

// deliver admits m, runs it, decides on how the run ended, and acts: the
// path every delivery takes, a work message's or a parked copy's.
func (m *delivery) deliver(runCtx, ctx context.Context) {
	next := m.admit(ctx, m.p.now())
	if next.act == runIt {
		start := m.p.now()
		o := m.run(runCtx)
		if o.abandoned {
			return // JetStream's redelivery, after AckWait, is the run that counts
		}
		next = m.decide(ctx, o, span{start, m.p.now()})
	}
	m.act(ctx, next)
}

// act does what next says with m.
func (m *delivery) act(ctx context.Context, next step) {
	switch next.act {
	case ack:
		m.done(ctx)
	case redeliver:
		m.save(ctx)
		m.nak(ctx, 0)
	case wait:
		m.wait(ctx, next.due, next.now)
	case giveUp:
		m.giveUp(ctx)
	case deadLetter:
		m.deadLetter(ctx)
	}
}
