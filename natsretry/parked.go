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
// before its record holds one (the move binds it just after its publish)
// waits for the bind a moment (awaitBind), and is looked at again shortly
// when it does not come (a crash in between), never judged. A copy whose id
// has no record, or whose sequence is not the record's, claims nothing: it
// runs as a message of its own, with no failures.
func (p *Policy) handleParked(runCtx context.Context, msg jetstream.Msg, pk *parking) {
	ctx := context.WithoutCancel(runCtx)
	md, err := msg.Metadata()
	if err != nil {
		p.logger.ErrorContext(ctx, "natsretry: not a JetStream delivery; left to its redelivery", slog.String("error", err.Error()))
		return
	}
	own := p.open(msg, md, consumer{h: pk.h, ackWait: pk.ackWait})
	id := msg.Headers().Get(HeaderParked)
	if id == "" || len(id) > maxParkedID {
		own.deliverOwn(runCtx, ctx)
		return
	}
	key := parkedKey(pk.subject, id)
	var room [16]int64
	e, err := p.kv.Get(ctx, key)
	var rec parkedRecord
	if err == nil {
		rec, err = readParked(e.Value(), room[:])
	}
	if err == nil && rec.copySeq == 0 {
		rec, err = p.awaitBind(ctx, key, room[:], pk.ackWait/2)
	}
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, errParked), err == nil && rec.copySeq != 0 && rec.copySeq != md.Sequence.Stream:
		own.deliverOwn(runCtx, ctx) // claims nothing
		return
	case err != nil:
		p.logger.ErrorContext(ctx, "natsretry: cannot read a parked message's record; it is retried", own.ids(err)...)
		own.nak(ctx, StoreRetry)
		return
	case rec.copySeq == 0:
		own.nak(ctx, StoreRetry) // not yet bound to its copy: looked at again shortly
		return
	}
	own.parkedIn = pk
	m := own.parked(ctx, key, &rec)
	m.deliver(runCtx, ctx)
}

// bindPoll is how often awaitBind reads a parked record again.
const bindPoll = 10 * time.Millisecond

// awaitBind reads the parked record under key (its failures into room)
// until it is bound to its copy, or for at most within (at most a
// second): a copy delivered between its publish and its bind waits for it
// here, in its delivery, rather than come back as a delivery the policy
// never saw end. It returns the record as last read.
func (p *Policy) awaitBind(ctx context.Context, key string, room []int64, within time.Duration) (parkedRecord, error) {
	deadline := time.Now().Add(min(within, time.Second))
	for {
		timer := time.NewTimer(bindPoll)
		select {
		case <-ctx.Done():
			timer.Stop()
			return parkedRecord{}, ctx.Err()
		case <-timer.C:
		}
		e, err := p.kv.Get(ctx, key)
		if err != nil {
			return parkedRecord{}, err
		}
		rec, err := readParked(e.Value(), room)
		if err != nil || rec.copySeq != 0 || !time.Now().Before(deadline) {
			return rec, err
		}
	}
}

// parked is the delivery that m, a parked copy, stands for, whose record
// rec is under key in the parking m runs from: the message as it was
// published, with the history its record keeps.
func (m *delivery) parked(ctx context.Context, key string, rec *parkedRecord) delivery {
	header := nats.Header{}
	for name, values := range m.msg.Headers() {
		if !strings.HasPrefix(name, "Nats-") && name != HeaderParked {
			header[name] = values
		}
	}
	pmd := *m.md
	pmd.Stream, pmd.Sequence.Stream, pmd.Timestamp = rec.stream, rec.seq, time.Unix(0, rec.stamp)
	out := delivery{p: m.p, consumer: m.consumer, msg: &parkedMsg{Msg: m.msg, subject: rec.subject, header: header},
		md: &pmd, key: key, kept: true, seed: queuekit.Seed(int64(rec.seq)), rec: rec, parkedIn: m.parkedIn, hist: rec.state}
	out.pol, out.own = out.parkedPolicy(ctx)
	return out
}

// deliverOwn delivers m, a copy on the parking subject that claims no
// parked record, as a message of its own.
func (m *delivery) deliverOwn(runCtx, ctx context.Context) {
	m.pol, m.own = m.policyOf(ctx)
	var room [16]int64
	if m.kept && !m.load(ctx, room[:]) {
		m.nak(ctx, StoreRetry)
		return
	}
	m.deliver(runCtx, ctx)
}

// parkedPolicy is a parked message's policy: the strategy its record
// keeps, else its subject's.
func (m *delivery) parkedPolicy(ctx context.Context) (*retrypolicy.Policy, bool) {
	if m.rec.strategy == "" {
		return m.policyOf(ctx)
	}
	if pol, err := m.p.policies.Own([]byte(m.rec.strategy)); err == nil {
		return pol, true
	}
	return m.p.policies.Kind(m.rec.subject), false
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
