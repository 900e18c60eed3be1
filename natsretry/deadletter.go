package natsretry

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/retrypolicy/retrypolicy/queuekit"
	"github.com/retrypolicy/retrypolicy/retry"
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
// first, by its message id. A copy too large for the server or the
// dead-letter stream sheds the headers the policy adds (shed), so that it
// is never refused for its size.
func (p *Policy) deadLetter(ctx context.Context, m delivery, hist history) {
	out := nats.NewMsg(p.deadLetterSubject)
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
	id := "retrypolicy." + m.key
	var opts []jetstream.PublishOpt
	if shed(out, id, p.deadLimit(ctx)) {
		opts = append(opts, jetstream.WithMsgID(id))
	}
	ack, err := p.js.PublishMsg(ctx, out, opts...)
	if err != nil {
		p.logger.ErrorContext(ctx, "natsretry: cannot publish the message to the dead-letter subject; it is retried", p.ids(m, err)...)
		p.nak(ctx, m, StoreRetry)
		return
	}
	if !ack.Duplicate && p.hooks.DeadLettered != nil {
		p.hook(ctx, "DeadLettered", func() { p.hooks.DeadLettered(ctx, m.msg.Subject(), hist.reason) })
	}
	if err := m.msg.TermWithReason(hist.reason.String()); err != nil {
		p.logger.ErrorContext(ctx, "natsretry: cannot terminate the dead-lettered message", p.ids(m, err)...)
		return // redelivered, it finds the mark and its copy already made
	}
	p.purge(ctx, m)
}

// deadLimit is the most bytes a dead-letter copy may take, headers and
// payload: the smaller of the server's maximum payload and the dead-letter
// stream's MaxMsgSize.
func (p *Policy) deadLimit(ctx context.Context) int64 {
	limit := p.js.Conn().MaxPayload()
	if s, err := p.js.Stream(ctx, p.deadStream); err == nil {
		if n := int64(s.CachedInfo().Config.MaxMsgSize); n > 0 {
			limit = min(limit, n)
		}
	}
	return limit
}

// shedOrder are the headers the policy adds to a dead-letter copy, in the
// order it drops them when the copy is too large: the error text first;
// where the message came from last.
var shedOrder = [...]string{HeaderError, HeaderWaitAsked, HeaderFailures, HeaderSequence, HeaderReason, HeaderStream, HeaderSubject}

// shed drops the headers of shedOrder from out, one after another, until
// out with the message id id fits in limit bytes, and reports whether it
// then keeps the id: dropped last, when the copy would not fit with it.
func shed(out *nats.Msg, id string, limit int64) bool {
	idSize := int64(len(jetstream.MsgIDHeader) + len(": \r\n") + len(id))
	for _, name := range shedOrder {
		if wireSize(out)+idSize <= limit {
			return true
		}
		out.Header.Del(name)
	}
	return wireSize(out)+idSize <= limit
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

// Replay publishes a dead-letter message back to the subject it was
// given up on (HeaderSubject), with its payload and headers but the
// dead-letter ones, so that it starts anew: no failure of its earlier
// life counts. Read the message from the dead-letter stream
// (Stream.GetMsg), replay it, then delete it there (Stream.DeleteMsg).
//
// The operator names stream, the stream the message came from: a
// dead-letter stream takes what anyone may publish, so its headers are
// not trusted to say where to publish. Replay returns an error, and
// publishes nothing, for a message that is not a dead letter of this
// package, whose HeaderStream is not stream, whose subject stream does not
// capture (read from its configuration), or whose subject starts with $
// (the system's and JetStream's API) or _INBOX. (replies); and the server
// refuses the publication if the subject lands in another stream.
func Replay(ctx context.Context, js jetstream.JetStream, dead *jetstream.RawStreamMsg, stream string) (*jetstream.PubAck, error) {
	if dead == nil {
		return nil, errors.New("natsretry: Replay: no message")
	}
	subject := dead.Header.Get(HeaderSubject)
	if err := replayable(ctx, js, subject, dead.Header.Get(HeaderStream), stream); err != nil {
		return nil, errors.New("natsretry: Replay: " + err.Error())
	}
	out := nats.NewMsg(subject)
	out.Data = dead.Data
	for name, values := range dead.Header {
		if !strings.HasPrefix(name, "Retrypolicy-") && !strings.HasPrefix(name, "Nats-") {
			out.Header[name] = slices.Clone(values)
		}
	}
	return js.PublishMsg(ctx, out, jetstream.WithExpectStream(stream))
}

// replayable returns why a dead letter of subject, from the stream its
// header names (from), may not be replayed into stream.
func replayable(ctx context.Context, js jetstream.JetStream, subject, from, stream string) error {
	switch {
	case subject == "":
		return errors.New("the message has no " + HeaderSubject + " header: not a dead letter")
	case !publishable(subject):
		return errors.New("its subject " + queuekit.Quote(subject) + " is not one a message is published to")
	case strings.HasPrefix(subject, "$") || strings.HasPrefix(subject, "_INBOX."):
		return errors.New("its subject " + queuekit.Quote(subject) + " is a system, API or reply subject")
	case from != stream:
		return errors.New("it came from stream " + queuekit.Quote(from) + " (" + HeaderStream + "), not " + queuekit.Quote(stream))
	}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return errors.New("stream " + queuekit.Quote(stream) + ": " + err.Error())
	}
	if !slices.ContainsFunc(s.CachedInfo().Config.Subjects, func(pattern string) bool { return subjectMatches(pattern, subject) }) {
		return errors.New("stream " + queuekit.Quote(stream) + " does not capture its subject " + queuekit.Quote(subject))
	}
	return nil
}

// publishable reports whether subject is one a message is published to:
// tokens that are not empty, without wildcards or white space.
func publishable(subject string) bool {
	for token := range strings.SplitSeq(subject, ".") {
		if token == "" || token == "*" || token == ">" || strings.ContainsAny(token, " \t\r\n") {
			return false
		}
	}
	return true
}

// subjectMatches reports whether pattern, a subject with wildcards (* one
// token, > one or more at the end), matches subject.
func subjectMatches(pattern, subject string) bool {
	p, s := strings.Split(pattern, "."), strings.Split(subject, ".")
	for i, token := range p {
		switch {
		case token == ">":
			return i == len(p)-1 && len(s) > i
		case i >= len(s):
			return false
		case token != "*" && token != s[i]:
			return false
		}
	}
	return len(p) == len(s)
}
