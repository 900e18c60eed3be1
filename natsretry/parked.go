package natsretry

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/queuekit"
)

// A parked copy arrives (this file): it is matched to its record, opened
// as the message it stands for, and delivered as any message is
// (handle.go). The parking part's bookkeeping is in parking.go.

// handleParked runs one delivery of a parked copy, as its record says: the
// message as it was published, its history, identity and strategy. Only
// the copy whose sequence the record holds claims it; a copy that arrives
// before its record holds one (its publish not yet acknowledged, or a crash
// in between) is looked at again shortly, never judged. A copy whose id
// has no record, or whose sequence is not the record's, claims nothing: it
// runs as a message of its own, with no failures.
func (p *Policy) handleParked(runCtx context.Context, msg jetstream.Msg, pk *parking) {
	ctx := context.WithoutCancel(runCtx)
	md, err := msg.Metadata()
	if err != nil {
		p.logger.ErrorContext(ctx, "natsretry: not a JetStream delivery; left to its redelivery", slog.String("error", err.Error()))
		return
	}
	own := delivery{msg: msg, md: md, key: historyKey(md.Stream, md.Consumer, md.Sequence.Stream, md.Timestamp),
		seed: queuekit.Seed(int64(md.Sequence.Stream)), kept: md.NumDelivered > 1, h: pk.h, ackWait: pk.ackWait}
	id := msg.Headers().Get(HeaderParked)
	if id == "" || len(id) > maxParkedID {
		p.deliverOwn(runCtx, ctx, own)
		return
	}
	key := parkedKey(pk.subject, id)
	var room [16]int64
	e, err := p.kv.Get(ctx, key)
	var rec parkedRecord
	if err == nil {
		rec, err = readParked(e.Value(), room[:])
	}
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, errParked), err == nil && rec.copySeq != 0 && rec.copySeq != md.Sequence.Stream:
		p.deliverOwn(runCtx, ctx, own) // claims nothing
		return
	case err != nil:
		p.logger.ErrorContext(ctx, "natsretry: cannot read a parked message's record; it is retried", p.ids(own, err)...)
		p.nak(ctx, own, StoreRetry)
		return
	case rec.copySeq == 0:
		p.nak(ctx, own, StoreRetry) // not yet bound to its copy: looked at again shortly
		return
	}
	p.deliver(runCtx, ctx, p.parkedDelivery(ctx, own, key, &rec, pk), rec.state)
}

// parkedDelivery is the delivery of the parked copy whose own delivery is
// arrived, and whose record rec is under key: the message as it was published.
func (p *Policy) parkedDelivery(ctx context.Context, arrived delivery, key string, rec *parkedRecord, pk *parking) delivery {
	header := nats.Header{}
	for name, values := range arrived.msg.Headers() {
		if !strings.HasPrefix(name, "Nats-") && name != HeaderParked {
			header[name] = values
		}
	}
	pmd := *arrived.md
	pmd.Stream, pmd.Sequence.Stream, pmd.Timestamp = rec.stream, rec.seq, time.Unix(0, rec.stamp)
	m := delivery{msg: &parkedMsg{Msg: arrived.msg, subject: rec.subject, header: header}, md: &pmd, key: key, kept: true,
		seed: queuekit.Seed(int64(rec.seq)), rec: rec, parkedIn: pk, h: pk.h, ackWait: pk.ackWait}
	m.pol, m.own = p.parkedPolicy(ctx, m, rec)
	return m
}

// deliverOwn delivers m, a copy on the parking subject that claims no
// parked record, as a message of its own.
func (p *Policy) deliverOwn(runCtx, ctx context.Context, m delivery) {
	m.pol, m.own = p.policyOf(ctx, m)
	var room [16]int64
	var hist history
	if m.kept {
		var ok bool
		if hist, ok = p.load(ctx, m, room[:]); !ok {
			p.nak(ctx, m, StoreRetry)
			return
		}
	}
	p.deliver(runCtx, ctx, m, hist)
}

// parkedPolicy is a parked message's policy: the strategy its record
// keeps, else its subject's.
func (p *Policy) parkedPolicy(ctx context.Context, m delivery, rec *parkedRecord) (*retrypolicy.Policy, bool) {
	if rec.strategy == "" {
		return p.policyOf(ctx, m)
	}
	if pol, err := p.policies.Own([]byte(rec.strategy)); err == nil {
		return pol, true
	}
	return p.policies.Kind(rec.subject), false
}

// parkedMsg is a parked copy as its handler sees it: the subject the
// message was published to and its own headers, not the copy's.
type parkedMsg struct {
	jetstream.Msg
	subject string
	header  nats.Header
}

// Subject returns the subject the message was published to.
func (m *parkedMsg) Subject() string { return m.subject }

// Headers returns the message's own headers.
func (m *parkedMsg) Headers() nats.Header { return m.header }
