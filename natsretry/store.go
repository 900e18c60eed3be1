package natsretry

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// markerTTL is how long the marker a removed record leaves in the bucket
// lives: the bucket drops it then (its LimitMarkerTTL lets a message carry
// a TTL of its own).
const markerTTL = time.Minute

// load reads m's history into m.hist (its failures into room): none when
// it has none, a new one (logged) when it cannot be read, and false when
// the bucket cannot be reached. A parked message's is in its record, read
// already.
func (m *delivery) load(ctx context.Context, room []int64) bool {
	p := m.p
	e, err := p.kv.Get(ctx, m.key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return true
	}
	if err != nil {
		p.logger.ErrorContext(ctx, "natsretry: cannot read the message's history; it is retried", m.ids(err)...)
		return false
	}
	hist, err := readHistory(e.Value(), room)
	if err != nil {
		p.logger.WarnContext(ctx, "natsretry: the message's history is unreadable; it starts anew", m.ids(err)...)
		m.repaired(ctx)
		return true
	}
	m.hist = hist
	return true
}

// save writes m's history, reporting whether it could: a work message's
// under its key, a parked message's in its record.
func (m *delivery) save(ctx context.Context) bool {
	var room [256]byte
	value := appendHistory(room[:0], m.hist)
	if m.rec != nil {
		rec := *m.rec
		rec.state = m.hist
		value = appendParked(room[:0], rec)
	}
	return m.put(ctx, m.key, value)
}

// put writes value under key, of m's message, reporting whether it could.
func (m *delivery) put(ctx context.Context, key string, value []byte) bool {
	if _, err := m.p.kv.Put(ctx, key, value); err != nil {
		m.p.logger.ErrorContext(ctx, "natsretry: cannot record the message's history", m.ids(err)...)
		return false
	}
	return true
}

// remove removes the records of m under keys, every revision: a key-value
// purge, whose marker expires after markerTTL. An empty key is none.
func (m *delivery) remove(ctx context.Context, keys ...string) {
	for _, key := range keys {
		if key == "" {
			continue
		}
		if err := m.p.kv.Purge(ctx, key, jetstream.PurgeTTL(markerTTL)); err != nil {
			m.p.logger.ErrorContext(ctx, "natsretry: cannot remove the message's history", m.ids(err)...)
		}
	}
}

// nak asks JetStream to redeliver m after delay, at once when it is not
// positive.
func (m *delivery) nak(ctx context.Context, delay time.Duration) {
	var err error
	if delay > 0 {
		err = m.msg.NakWithDelay(delay)
	} else {
		err = m.msg.Nak()
	}
	if err != nil {
		m.p.logger.ErrorContext(ctx, "natsretry: cannot nak the message; it is redelivered after the consumer's AckWait", m.ids(err)...)
	}
}
