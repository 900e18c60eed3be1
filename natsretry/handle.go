package natsretry

import (
	"context"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/retrypolicy/retrypolicy/queuekit"
)

// A delivery, read top to bottom: open it (this file; what a delivery is
// and what it derives, delivery.go), load its history (store.go), admit it
// or not and run it (decide.go, run.go), decide on how it ended
// (decide.go), then one act: ack it (ack.go), make it wait in its consumer
// (wait.go), park it (park.go) or dead-letter it (deadletter.go). A parked
// copy (parked.go) opens as the message it stands for and goes the same
// way.

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
