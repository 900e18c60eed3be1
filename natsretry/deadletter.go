package natsretry

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// giveUp marks hist dead, then moves m to the dead-letter subject.
func (p *Policy) giveUp(ctx context.Context, m delivery, hist history) {
	hist.dead, hist.due = true, 0
	if !p.store(ctx, m, hist) {
		p.nak(ctx, m, StoreRetry)
		return
	}
	p.deadLetter(ctx, m, hist)
}

// deadLetter publishes m's copy to the dead-letter subject, then
// terminates m and removes its history. A copy published twice (after a
// crash before the Term) is dropped by the stream as a duplicate of the
// first, by its message id.
func (p *Policy) deadLetter(ctx context.Context, m delivery, hist history) {
	out := nats.NewMsg(p.deadLetterSubject)
	out.Data = m.msg.Data()
	for name, values := range m.msg.Headers() {
		if !strings.HasPrefix(name, "Nats-") { // JetStream's own: an expected sequence would refuse the copy
			out.Header[name] = slices.Clone(values)
		}
	}
	out.Header.Set(HeaderReason, hist.reason.String())
	out.Header.Set(HeaderFailures, strconv.Itoa(len(hist.failures)))
	out.Header.Set(HeaderError, hist.lastError)
	out.Header.Set(HeaderSubject, m.msg.Subject())
	out.Header.Set(HeaderStream, m.md.Stream)
	out.Header.Set(HeaderSequence, strconv.FormatUint(m.md.Sequence.Stream, 10))
	ack, err := p.js.PublishMsg(ctx, out, jetstream.WithMsgID("retrypolicy."+m.key))
	if err != nil {
		p.logger.ErrorContext(ctx, "natsretry: cannot publish the message to the dead-letter subject; it is retried", p.ids(m, err)...)
		p.nak(ctx, m, StoreRetry)
		return
	}
	if !ack.Duplicate && p.hooks.DeadLettered != nil {
		p.hooks.DeadLettered(ctx, m.msg.Subject(), hist.reason)
	}
	if err := m.msg.TermWithReason(hist.reason.String()); err != nil {
		p.logger.ErrorContext(ctx, "natsretry: cannot terminate the dead-lettered message", p.ids(m, err)...)
		return // redelivered, it finds the mark and its copy already made
	}
	p.purge(ctx, m)
}

// Replay publishes a dead-letter message back to the subject it was
// given up on (HeaderSubject), with its payload and headers but the
// dead-letter ones, so that it starts anew: no failure of its earlier
// life counts. Read the message from the dead-letter stream
// (Stream.GetMsg), replay it, then delete it there (Stream.DeleteMsg).
// It returns an error, and publishes nothing, for a message that is not a
// dead letter of this package.
func Replay(ctx context.Context, js jetstream.JetStream, dead *jetstream.RawStreamMsg) (*jetstream.PubAck, error) {
	subject := dead.Header.Get(HeaderSubject)
	if subject == "" {
		return nil, errors.New("natsretry: Replay: the message has no " + HeaderSubject + " header: not a dead letter")
	}
	out := nats.NewMsg(subject)
	out.Data = dead.Data
	for name, values := range dead.Header {
		if !strings.HasPrefix(name, "Retrypolicy-") && !strings.HasPrefix(name, "Nats-") {
			out.Header[name] = slices.Clone(values)
		}
	}
	return js.PublishMsg(ctx, out)
}
