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

	"github.com/retrypolicy/retrypolicy/retry"
)

// giveUp marks m's history dead, then moves m to the dead-letter subject.
func (m *delivery) giveUp(ctx context.Context) {
	m.hist.dead, m.hist.due = true, 0
	if !m.save(ctx) {
		m.nak(ctx, StoreRetry)
		return
	}
	m.kept = true // it has a history now, removed with its dead letter
	m.deadLetter(ctx)
}

// deadLetter publishes m's copy to the dead-letter subject, then
// terminates m and removes its history. A copy published twice (after a
// crash before the Term) is dropped by the stream as a duplicate of the
// first, by its message id, which its work message's identity makes. A
// copy too large for the server or the dead-letter stream sheds the
// headers the policy adds (shed), so that it is never refused for its
// size. The limit is read again, and the copy made again, before a copy
// sheds a header when it was read deadLimitAge ago or more (the stream's
// limit may have been raised since); at once before a copy that would not
// fit even bare (the work stream took a message larger than the limit
// read: the limits were raised); and at once when a publish is refused
// for its size (lowered). A copy that fits reads nothing, and keeps every
// header: no stream info request is made per dead letter.
func (m *delivery) deadLetter(ctx context.Context) {
	p := m.p
	out, opts, whole := m.deadCopy()
	if !whole && (opts == nil || p.deadLimitStale()) && p.readDeadLimit(ctx) == nil {
		out, opts, _ = m.deadCopy()
	}
	ack, err := p.js.PublishMsg(ctx, out, opts...)
	if errors.Is(err, jetstream.ErrStreamMessageExceedsMaximum) || errors.Is(err, nats.ErrMaxPayload) {
		if p.readDeadLimit(ctx) == nil {
			out, opts, _ = m.deadCopy()
			ack, err = p.js.PublishMsg(ctx, out, opts...)
		}
	}
	if err != nil {
		p.logger.ErrorContext(ctx, "natsretry: cannot publish the message to the dead-letter subject; it is retried", m.ids(err)...)
		m.nak(ctx, StoreRetry)
		return
	}
	if !ack.Duplicate && p.hooks.DeadLettered != nil {
		p.hook(ctx, "DeadLettered", func() { p.hooks.DeadLettered(ctx, m.msg.Subject(), m.hist.reason) })
	}
	if err := m.msg.TermWithReason(m.hist.reason.String()); err != nil {
		p.logger.ErrorContext(ctx, "natsretry: cannot terminate the dead-lettered message", m.ids(err)...)
		return // redelivered, it finds the mark and its copy already made
	}
	m.removeAll(ctx)
}

// deadCopy is m's dead letter, within the limit, its publish options, and
// whether it keeps every header.
func (m *delivery) deadCopy() (out *nats.Msg, opts []jetstream.PublishOpt, whole bool) {
	hist := &m.hist
	out = nats.NewMsg(m.p.deadLetterSubject)
	out.Data = m.msg.Data()
	for name, values := range m.msg.Headers() {
		if !strings.HasPrefix(name, "Nats-") { // JetStream's own: an expected sequence would refuse the copy
			out.Header[name] = slices.Clone(values)
		}
	}
	out.Header.Set(HeaderReason, hist.reason.String())
	if hist.reason == retry.RetryAfterTooLong {
		out.Header.Set(HeaderWaitAsked, strconv.FormatFloat(hist.waitFor().Seconds(), 'f', -1, 64))
	}
	out.Header.Set(HeaderFailures, strconv.Itoa(len(hist.failures)))
	out.Header.Set(HeaderError, hist.lastError)
	out.Header.Set(HeaderSubject, m.msg.Subject())
	out.Header.Set(HeaderStream, m.md.Stream)
	out.Header.Set(HeaderSequence, strconv.FormatUint(m.md.Sequence.Stream, 10))
	id := "retrypolicy." + m.workKey()
	kept, whole := shed(out, id, m.p.deadLimit.Load())
	if kept {
		return out, []jetstream.PublishOpt{jetstream.WithMsgID(id)}, whole
	}
	return out, nil, false
}

// deadLimitAge is how long a dead letter's limit read is trusted for a
// copy that would shed a header: the stream's limit raised is seen within
// it, at the cost of one stream info request.
const deadLimitAge = 30 * time.Second

// deadLimitStale reports whether the dead letter's limit was read
// deadLimitAge ago or more by the policy's clock, or after now (the clock
// stepped back).
func (p *Policy) deadLimitStale() bool {
	age := p.now().Sub(time.Unix(0, p.deadLimitRead.Load()))
	return age >= deadLimitAge || age < 0
}

// readDeadLimit reads the most bytes a dead letter may take, headers and
// payload: the smaller of the server's maximum payload and the dead-letter
// stream's MaxMsgSize. New reads it; a copy that would shed a header reads
// it again when it is stale (deadLimitStale), and a copy refused for its
// size at once: no stream's information is read for each dead letter.
func (p *Policy) readDeadLimit(ctx context.Context) error {
	limit := p.js.Conn().MaxPayload()
	s, err := p.js.Stream(ctx, p.deadStream)
	if err != nil {
		return errors.New("natsretry: Config.DeadLetter: its stream: " + err.Error())
	}
	if n := int64(s.CachedInfo().Config.MaxMsgSize); n > 0 {
		limit = min(limit, n)
	}
	p.deadLimit.Store(limit)
	p.deadLimitRead.Store(p.now().UnixNano())
	return nil
}

// shedOrder are the headers the policy adds to a dead-letter copy, in the
// order it drops them when the copy is too large: the error text first;
// where the message came from last.
var shedOrder = [...]string{HeaderError, HeaderWaitAsked, HeaderFailures, HeaderSequence, HeaderReason, HeaderStream, HeaderSubject}

// shed drops the headers of shedOrder from out, one after another, until
// out with the message id id fits in limit bytes, and reports whether it
// then keeps the id (dropped last, when the copy would not fit with it),
// and whether it keeps every header.
func shed(out *nats.Msg, id string, limit int64) (kept, whole bool) {
	idSize := int64(len(jetstream.MsgIDHeader) + len(": \r\n") + len(id))
	for i, name := range shedOrder {
		if wireSize(out)+idSize <= limit {
			return true, i == 0
		}
		out.Header.Del(name)
	}
	return wireSize(out)+idSize <= limit, false
}

// wireSize is the bytes a message takes against the server's and a
// stream's limits: its headers as sent, and its payload.
func wireSize(m *nats.Msg) int64 {
	n := int64(len(m.Data))
	if len(m.Header) == 0 {
		return n
	}
	n += int64(len("NATS/1.0\r\n") + len("\r\n"))
	for name, values := range m.Header {
		for _, v := range values {
			n += int64(len(name) + len(": \r\n") + len(v))
		}
	}
	return n
}
