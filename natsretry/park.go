package natsretry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// park moves m to the parking stream to wait delay: its parked record
// (where it came from, its strategy, its history) is written under a new
// random id first, then m's own history names that id, then the copy,
// carrying only the id, is published (move). A crash between any two
// steps finishes the move at m's redelivery (finishMove). When the bucket
// cannot be written, or the copy would not fit, m waits in its consumer
// instead.
func (m *delivery) park(ctx context.Context, delay time.Duration) {
	id := newParkedID()
	if wireSize(m.parkedCopy(id)) > m.parking.limit {
		m.p.logger.WarnContext(ctx, "natsretry: the message is too large to park (its copy adds a header); it waits in its consumer",
			m.ids(fmt.Errorf("the copy's limit is %d bytes", m.parking.limit))...)
		m.save(ctx)
		m.nak(ctx, delay)
		return
	}
	rec := parkedRecord{origin: m.key, subject: m.msg.Subject(), stream: m.md.Stream, seq: m.md.Sequence.Stream,
		stamp: m.md.Timestamp.UnixNano(), state: m.hist}
	rec.state.seen, rec.state.parkedID = 0, ""
	if m.own {
		if b, err := m.pol.Strategy().MarshalJSON(); err == nil {
			rec.strategy = string(b)
		}
	}
	m.hist.parkedID = id
	var room [512]byte
	if !m.put(ctx, parkedKey(m.parking.subject, id), appendParked(room[:0], rec)) || !m.save(ctx) {
		m.nak(ctx, delay) // it holds its slot: better than losing its place
		return
	}
	m.move(ctx, id, time.UnixMilli(m.hist.due))
}

// finishMove finishes moving m, whose history names its parked record,
// for a delivery of m after the move began (a crash, a lost ack, a copy
// from the client's buffer): a record gone means its parked copy ran to
// its end, and m is acked; a record whose copy is bound means only m's
// ack was lost; else the copy is published again (move).
func (m *delivery) finishMove(ctx context.Context) {
	key := parkedKey(m.parking.subject, m.hist.parkedID)
	e, err := m.p.kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		m.kept = true
		m.done(ctx) // its parked copy ran to its end
		return
	case err != nil:
		m.p.logger.ErrorContext(ctx, "natsretry: cannot read a parked message's record; it is retried", m.ids(err)...)
		m.nak(ctx, StoreRetry)
		return
	}
	if rec, err := readParked(e.Value(), nil); err == nil && rec.copySeq != 0 {
		m.ackMoved(ctx)
		return
	}
	m.move(ctx, m.hist.parkedID, time.UnixMilli(m.hist.due))
}

// move publishes m's copy to the parking subject of id, binds its parked
// record to the copy's sequence, then acks m. The copy goes only to a
// subject that holds no message yet, so that a move finished after a crash
// never makes a second copy of one still parked; a refusal for that means
// the copy is there, and its sequence is read from the stream. m's
// history, which names the record, stays until the copy ends: a copy of m
// that waited in the client's buffer, or a redelivery after an ack that
// was lost, finds it and finishes the move rather than run beside the copy.
func (m *delivery) move(ctx context.Context, id string, due time.Time) {
	out := m.parkedCopy(id)
	var seq uint64
	ack, err := m.p.js.PublishMsg(ctx, out, jetstream.WithMsgID("park."+id), jetstream.WithExpectLastSequencePerSubject(0))
	switch {
	case err == nil:
		seq = ack.Sequence
	case parkedAlready(err):
		seq, err = m.parking.copySeq(ctx, out.Subject)
	}
	if err == nil {
		err = m.p.bind(ctx, parkedKey(m.parking.subject, id), seq)
	}
	if err != nil {
		m.p.logger.ErrorContext(ctx, "natsretry: cannot park the message; it is retried", m.ids(err)...)
		m.nak(ctx, StoreRetry)
		return
	}
	m.parking.watch(parkedKey(m.parking.subject, id), due)
	m.ackMoved(ctx)
}

// bind writes seq into the parked record under key as its copy's: the one
// copy that claims it.
func (p *Policy) bind(ctx context.Context, key string, seq uint64) error {
	e, err := p.kv.Get(ctx, key)
	if err != nil {
		return err
	}
	rec, err := readParked(e.Value(), nil)
	if err != nil {
		return err
	}
	rec.copySeq = seq
	_, err = p.kv.Update(ctx, key, appendParked(nil, rec), e.Revision())
	return err
}

// ackMoved acks m, whose copy is parked.
func (m *delivery) ackMoved(ctx context.Context) {
	if err := m.msg.DoubleAck(ctx); err != nil {
		m.p.logger.ErrorContext(ctx, "natsretry: the ack of a parked message is not confirmed; it may be redelivered, and then finds its copy", m.ids(err)...)
	}
}

// parkedCopy is m's copy for the parking stream under id: its payload, its
// own headers (not JetStream's), and the id.
func (m *delivery) parkedCopy(id string) *nats.Msg {
	out := nats.NewMsg(m.parking.subject + "." + id)
	out.Data = m.msg.Data()
	for name, values := range m.msg.Headers() {
		if !strings.HasPrefix(name, "Nats-") && name != HeaderParked {
			out.Header[name] = slices.Clone(values)
		}
	}
	out.Header.Set(HeaderParked, id)
	return out
}

// parkedAlready reports whether err refuses a copy because its subject
// holds one already.
func parkedAlready(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) &&
		(api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// newParkedID returns a random id for a parked message: 128 bits, in hex.
func newParkedID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// maxParkedID is the longest id a parked copy may carry: a longer one is
// none of this package's, and the copy runs as a message of its own.
const maxParkedID = 64
