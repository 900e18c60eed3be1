package natsretry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/queuekit"
)

// parking is where a work consumer's long waits go: the subject of its
// parked copies, and the wait past which a message is moved there.
type parking struct {
	subject string
	after   time.Duration
	limit   int64 // the most bytes a copy may take: the server's payload, the stream's MaxMsgSize
}

// wait makes m wait until due, from now: a nak with that delay, after
// hist is stored; or, for a wait longer than the parking threshold, a
// move of m to the parking stream, so that it holds no slot of its
// consumer while it waits.
func (p *Policy) wait(ctx context.Context, m delivery, hist history, due, now time.Time) {
	delay := due.Sub(now)
	if m.park == nil || delay <= m.park.after {
		p.store(ctx, m, hist)
		p.nak(ctx, m, delay)
		return
	}
	p.park(ctx, m, hist, delay)
}

// park moves m to the parking stream: its history, identity and strategy
// are written under a new random id first, then m's own history is marked
// with that id, then the copy, carrying only the id, is published and m
// acked. A crash between any two steps finishes the move at m's
// redelivery (finishMove). When the bucket cannot be written, m waits as
// a nak instead.
func (p *Policy) park(ctx context.Context, m delivery, hist history, delay time.Duration) {
	id := newParkedID()
	if wireSize(parkedCopy(m, id)) > m.park.limit {
		p.logger.WarnContext(ctx, "natsretry: the message is too large to park (its copy adds a header); it waits in its consumer",
			p.ids(m, fmt.Errorf("the copy's limit is %d bytes", m.park.limit))...)
		p.store(ctx, m, hist)
		p.nak(ctx, m, delay)
		return
	}
	rec := hist
	rec.seen, rec.parkedID = 0, ""
	rec.parked = &identity{subject: m.msg.Subject(), stream: m.md.Stream, seq: m.md.Sequence.Stream, stamp: m.md.Timestamp.UnixNano(), origin: m.key}
	if m.own {
		if b, err := m.pol.Strategy().MarshalJSON(); err == nil {
			rec.parked.strategy = string(b)
		}
	}
	hist.parkedID = id
	if !p.storeAt(ctx, m, parkedKey(id), rec) || !p.store(ctx, m, hist) {
		p.nak(ctx, m, delay) // it holds its slot: better than losing its place
		return
	}
	p.move(ctx, m, id)
}

// finishMove finishes moving m to the parking stream under id, for a
// delivery of m after the move began (a crash, a lost ack, a copy from the
// client's buffer): its copy is published again, which the parking stream
// refuses while the copy is there (move), unless the parked message has
// run to its end already, its record gone: then m is acked.
func (p *Policy) finishMove(ctx context.Context, m delivery, id string) {
	_, err := p.kv.Get(ctx, parkedKey(id))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		m.kept = true
		p.done(ctx, m) // its parked copy ran to its end
	case err != nil:
		p.logger.ErrorContext(ctx, "natsretry: cannot read a parked message's record; it is retried", p.ids(m, err)...)
		p.nak(ctx, m, StoreRetry)
	default:
		p.move(ctx, m, id)
	}
}

// move publishes m's copy to the parking subject of id, then acks m and
// removes its history. The copy goes only to a subject that holds no
// message yet, so that a move finished after a crash never makes a second
// copy of one still parked (the stream's duplicate window forgets a copy
// once it is run and removed, or across a restart); a refusal for that
// means the copy is there.
func (p *Policy) move(ctx context.Context, m delivery, id string) {
	_, err := p.js.PublishMsg(ctx, parkedCopy(m, id), jetstream.WithMsgID("park."+id), jetstream.WithExpectLastSequencePerSubject(0))
	if err != nil && !parkedAlready(err) {
		p.logger.ErrorContext(ctx, "natsretry: cannot park the message; it is retried", p.ids(m, err)...)
		p.nak(ctx, m, StoreRetry)
		return
	}
	// Its history, which names the parked copy, stays until the copy ends:
	// a copy of the message that waited in the client's buffer, or a
	// redelivery after an ack that was lost, finds it and finishes the move
	// rather than run beside the copy.
	if err := m.msg.DoubleAck(ctx); err != nil {
		p.logger.ErrorContext(ctx, "natsretry: the ack of a parked message is not confirmed; it may be redelivered, and then finds its copy", p.ids(m, err)...)
	}
}

// parkedCopy is m's copy for the parking stream under id: its payload, its
// own headers (not JetStream's), and the id.
func parkedCopy(m delivery, id string) *nats.Msg {
	out := nats.NewMsg(m.park.subject + "." + id)
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

// parkedKey is the history key of the parked message id.
func parkedKey(id string) string { return "parked." + string(escapeKey(nil, id)) }

// newParkedID returns a random id for a parked message: 128 bits, in hex.
func newParkedID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// maxParkedID is the longest id a parked copy may carry: a longer one is
// none of this package's, and the copy runs as a message of its own.
const maxParkedID = 64

// startParking makes the parking consumer of work consumer info (on the
// stream that captures its parking subject, which must not be the work
// stream) and runs h on its messages until ctx is done.
func (p *Policy) startParking(ctx context.Context, info *jetstream.ConsumerInfo, h Handler) (*parking, error) {
	subject := p.parkPrefix + "." + info.Stream + "." + info.Name
	stream, err := p.js.StreamNameBySubject(ctx, subject+".id")
	if err != nil {
		return nil, fmt.Errorf("Config.Park: no stream captures %s: %w", queuekit.Quote(subject+".>"), err)
	}
	if stream == info.Stream {
		return nil, fmt.Errorf("Config.Park: its stream %s is the work stream: a parked message would come back to it", queuekit.Quote(stream))
	}
	ps, err := p.js.Stream(ctx, stream)
	if err != nil {
		return nil, fmt.Errorf("Config.Park: its stream %s: %w", queuekit.Quote(stream), err)
	}
	if r := ps.CachedInfo().Config.Retention; r != jetstream.WorkQueuePolicy {
		return nil, fmt.Errorf("Config.Park: its stream %s has %s retention: make it WorkQueuePolicy, so that a parked copy is removed once run and read by this consumer alone", queuekit.Quote(stream), r)
	}
	c, err := p.js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{
		Durable: info.Stream + "_" + info.Name + "_parked", FilterSubject: subject + ".>",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: info.Config.AckWait, MaxDeliver: -1, MaxAckPending: -1,
		Description: "retrypolicy: the parked messages of consumer " + info.Name + " of stream " + info.Stream,
	})
	if err != nil {
		return nil, fmt.Errorf("Config.Park: the parking consumer on %s: %w", queuekit.Quote(stream), err)
	}
	ackWait := info.Config.AckWait
	cc, err := c.Consume(func(msg jetstream.Msg) { p.handleParked(ctx, msg, h, ackWait) })
	if err != nil {
		return nil, fmt.Errorf("Config.Park: consuming the parked messages: %w", err)
	}
	go func() {
		<-ctx.Done()
		cc.Stop()
	}()
	limit := p.js.Conn().MaxPayload()
	if n := int64(ps.CachedInfo().Config.MaxMsgSize); n > 0 {
		limit = min(limit, n)
	}
	return &parking{subject: subject, after: p.parkAfter, limit: limit}, nil
}

// handleParked runs h on one delivery of a parked copy: the message as it
// was, its history, identity and strategy read from the record under the
// copy's id. A copy whose id has no record claims nothing: it runs as a
// message of its own, with no failures. A parked message's waits are naks
// on the parking consumer, which holds any number.
func (p *Policy) handleParked(ctx context.Context, msg jetstream.Msg, h Handler, ackWait time.Duration) {
	md, err := msg.Metadata()
	if err != nil {
		p.logger.ErrorContext(ctx, "natsretry: not a JetStream delivery; left to its redelivery", slog.String("error", err.Error()))
		return
	}
	runCtx := ctx
	ctx = context.WithoutCancel(ctx)
	id := msg.Headers().Get(HeaderParked)
	key := parkedKey(id)
	if id == "" || len(id) > maxParkedID {
		key = historyKey(md.Stream, md.Consumer, md.Sequence.Stream, md.Timestamp)
	}
	m := delivery{msg: msg, md: md, key: key, kept: true}
	var room [16]int64
	hist, ok := p.load(ctx, m, room[:])
	if !ok {
		p.nak(ctx, m, StoreRetry)
		return
	}
	if hist.parked == nil { // an unknown id: the copy is a message of its own
		hist = history{seen: hist.seen, failures: hist.failures, due: hist.due, wait: hist.wait, dead: hist.dead,
			reason: hist.reason, lastError: hist.lastError,
			parked: &identity{subject: msg.Subject(), stream: md.Stream, seq: md.Sequence.Stream, stamp: md.Timestamp.UnixNano()}}
	}
	id0 := hist.parked
	header := nats.Header{}
	for name, values := range msg.Headers() {
		if !strings.HasPrefix(name, "Nats-") && name != HeaderParked {
			header[name] = values
		}
	}
	pmd := *md
	pmd.Stream, pmd.Sequence.Stream, pmd.Timestamp = id0.stream, id0.seq, time.Unix(0, id0.stamp)
	m.msg, m.md = &parkedMsg{Msg: msg, subject: id0.subject, header: header}, &pmd
	m.seed, m.origin = queuekit.Seed(int64(id0.seq)), id0.origin
	m.pol, m.own = p.parkedPolicy(ctx, m, id0)
	m.h, m.ackWait = h, ackWait
	p.deliver(runCtx, ctx, m, hist)
}

// parkedPolicy is a parked message's policy: the strategy its record
// keeps, else its subject's; a copy of its own reads its header.
func (p *Policy) parkedPolicy(ctx context.Context, m delivery, id *identity) (*retrypolicy.Policy, bool) {
	if id.strategy == "" {
		return p.policyOf(ctx, m)
	}
	if pol, err := p.policies.Own([]byte(id.strategy)); err == nil {
		return pol, true
	}
	return p.policies.Kind(id.subject), false
}

// parkedMsg is a parked copy as its handler sees it: the subject the
// message was published to, and its own headers.
type parkedMsg struct {
	jetstream.Msg
	subject string
	header  nats.Header
}

// Subject returns the subject the message was published to.
func (m *parkedMsg) Subject() string { return m.subject }

// Headers returns the message's own headers.
func (m *parkedMsg) Headers() nats.Header { return m.header }
