package natsretry

import (
	"context"
	"errors"
	"iter"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// idleRead is how long a read of the dead-letter stream waits for its next
// message before it asks the server whether any is left.
const idleRead = 2 * time.Second

// askServer bounds that question: a server that does not answer within it
// ends the read with an error.
const askServer = 5 * time.Second

// read yields the dead letters of the stream, oldest first, from f.Since
// when given, as the stream held them when it began: it stops after the
// message that was last then, or once none is left (deleted since). It
// reads them with an ordered consumer of its own, pulling a page at a
// time; headersOnly leaves their payloads on the server. Its consumer is
// deleted when it ends, and ends on the server a minute after it is left.
func (d *DeadLetters) read(ctx context.Context, f Filter, headersOnly bool) iter.Seq2[read, error] {
	return func(yield func(read, error) bool) {
		info, err := d.stream.Info(ctx)
		if err != nil {
			yield(read{}, errors.New("natsretry: reading dead letters: "+err.Error()))
			return
		}
		last := info.State.LastSeq
		if info.State.Msgs == 0 {
			return
		}
		cfg := jetstream.OrderedConsumerConfig{HeadersOnly: headersOnly, InactiveThreshold: time.Minute, MaxResetAttempts: 3}
		if !f.Since.IsZero() {
			since := f.Since
			cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &since
		}
		c, err := d.stream.OrderedConsumer(ctx, cfg)
		if err != nil {
			yield(read{}, errors.New("natsretry: reading dead letters: "+err.Error()))
			return
		}
		msgs, err := c.Messages(jetstream.PullMaxMessages(d.page))
		if err != nil {
			yield(read{}, errors.New("natsretry: reading dead letters: "+err.Error()))
			return
		}
		defer func() {
			msgs.Stop()
			if ci := c.CachedInfo(); ci != nil {
				_ = d.js.DeleteConsumer(context.WithoutCancel(ctx), ci.Stream, ci.Name)
			}
		}()
		pulling{c: c, msgs: msgs, last: last, headersOnly: headersOnly}.pull(ctx, yield)
	}
}

// pulling is a read of the dead-letter stream under way: its consumer,
// the messages it pulls, the last sequence the read takes, and whether
// it leaves the payloads on the server.
type pulling struct {
	c           jetstream.Consumer
	msgs        jetstream.MessagesContext
	last        uint64
	headersOnly bool
}

// pull yields the messages of msgs until the one at last, one with none
// pending after it, or none left when the consumer asks the server.
func (p pulling) pull(ctx context.Context, yield func(read, error) bool) {
	c, msgs, last, headersOnly := p.c, p.msgs, p.last, p.headersOnly
	for {
		if err := ctx.Err(); err != nil {
			yield(read{}, err)
			return
		}
		m, err := msgs.Next(jetstream.NextMaxWait(idleRead))
		if errors.Is(err, nats.ErrTimeout) {
			ictx, cancel := context.WithTimeout(ctx, askServer)
			info, err := c.Info(ictx)
			cancel()
			switch {
			case err != nil: // the server does not answer: no waiting on it for ever
				yield(read{}, errors.New("natsretry: reading dead letters: "+err.Error()))
				return
			case info.NumPending == 0:
				return // nothing left: the rest deleted since it began
			}
			continue
		}
		if err != nil {
			yield(read{}, errors.New("natsretry: reading dead letters: "+err.Error()))
			return
		}
		md, err := m.Metadata()
		if err != nil {
			yield(read{}, errors.New("natsretry: reading dead letters: "+err.Error()))
			return
		}
		if md.Sequence.Stream > last {
			return // stored after the read began
		}
		data := m.Data()
		if headersOnly {
			data = nil
		}
		if !yield(read{DeadLetter: deadLetterOf(md.Sequence.Stream, md.Timestamp, m.Headers(), data), left: md.NumPending}, nil) {
			return
		}
		if md.Sequence.Stream == last || md.NumPending == 0 {
			return
		}
	}
}

// deadLetterOf reads a dead letter from a message of the dead-letter
// stream at seq, stored at stamp.
func deadLetterOf(seq uint64, stamp time.Time, h nats.Header, data []byte) DeadLetter {
	d := DeadLetter{Sequence: seq, Time: stamp, Header: h, Data: data,
		Reason: h.Get(HeaderReason), Subject: h.Get(HeaderSubject), Stream: h.Get(HeaderStream), Error: h.Get(HeaderError)}
	d.OriginSequence, _ = strconv.ParseUint(h.Get(HeaderSequence), 10, 64)
	d.Failures, _ = strconv.Atoi(h.Get(HeaderFailures))
	if secs, err := strconv.ParseFloat(h.Get(HeaderWaitAsked), 64); err == nil && secs >= 0 && secs < 1e10 {
		d.WaitAsked = time.Duration(secs * float64(time.Second))
	}
	return d
}
