package natsretry

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/retrypolicy/retrypolicy/queuekit"
)

// askServer bounds each request of a read: a server that does not answer
// within it ends the read with an error.
const askServer = 5 * time.Second

// Page reads the next page of dead letters after c.After (queuekit.Driver),
// up to the last one stored when the read began, with a consumer of its
// own that it deletes once the page is read (the server ends it a minute
// after it is left).
func (d *DeadLetters) Page(ctx context.Context, c *queuekit.Cursor) ([]queuekit.Letter, error) {
	if c.Last == 0 {
		info, err := d.stream.Info(ctx)
		if err != nil {
			return nil, errors.New("natsretry: reading dead letters: " + err.Error())
		}
		if info.State.Msgs == 0 {
			c.Done, c.Left = true, 0
			return nil, nil
		}
		c.Last = info.State.LastSeq
	}
	cfg := jetstream.ConsumerConfig{AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
		OptStartSeq: c.After + 1, HeadersOnly: c.HeadersOnly, InactiveThreshold: time.Minute, MemoryStorage: true}
	cons, err := d.stream.CreateConsumer(ctx, cfg)
	if err != nil {
		return nil, errors.New("natsretry: reading dead letters: " + err.Error())
	}
	defer func() { _ = d.stream.DeleteConsumer(context.WithoutCancel(ctx), cons.CachedInfo().Name) }()
	pending := cons.CachedInfo().NumPending
	if pending == 0 {
		c.Done, c.Left = true, 0
		return nil, nil
	}
	return d.fetch(cons, c, int(min(pending, uint64(min(max(c.Size, 1), queuekit.MaxPage)))))
}

// fetch reads n letters of cons, those up to c.Last, and moves c on.
func (d *DeadLetters) fetch(cons jetstream.Consumer, c *queuekit.Cursor, n int) ([]queuekit.Letter, error) {
	batch, err := cons.Fetch(n, jetstream.FetchMaxWait(askServer))
	if err != nil {
		return nil, errors.New("natsretry: reading dead letters: " + err.Error())
	}
	page := make([]queuekit.Letter, 0, n)
	read := 0
	for m := range batch.Messages() {
		read++
		md, err := m.Metadata()
		if err != nil {
			return nil, errors.New("natsretry: reading dead letters: " + err.Error())
		}
		if md.Sequence.Stream > c.Last {
			c.Done = true // stored after the read began
			continue
		}
		data := m.Data()
		if c.HeadersOnly {
			data = nil
		}
		page = append(page, letterOf(&jetstream.RawStreamMsg{Sequence: md.Sequence.Stream, Time: md.Timestamp, Header: m.Headers(), Data: data}))
		c.After, c.Left = md.Sequence.Stream, int64(md.NumPending)
		if md.Sequence.Stream == c.Last || md.NumPending == 0 {
			c.Done = true
		}
	}
	if err := batch.Error(); err != nil {
		return nil, errors.New("natsretry: reading dead letters: " + err.Error())
	}
	if read == 0 {
		c.Done = true // none came within askServer: deleted since the consumer counted them
	}
	return page, nil
}
