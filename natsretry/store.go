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

// load reads m's history: none when it has none, a new one (logged) when
// it cannot be read, and false when the bucket cannot be reached. A
// parked message's is in its record, read already.
func (p *Policy) load(ctx context.Context, m delivery, room []int64) (history, bool) {
	e, err := p.kv.Get(ctx, m.key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return history{}, true
	}
	if err != nil {
		p.logger.ErrorContext(ctx, "natsretry: cannot read the message's history; it is retried", p.ids(m, err)...)
		return history{}, false
	}
	hist, err := readHistory(e.Value(), room)
	if err != nil {
		p.logger.WarnContext(ctx, "natsretry: the message's history is unreadable; it starts anew", p.ids(m, err)...)
		p.repaired(ctx, m)
		return history{}, true
	}
	return hist, true
}

// save writes m's history, reporting whether it could: a work message's
// under its key, a parked message's in its record.
func (p *Policy) save(ctx context.Context, m delivery, hist history) bool {
	var room [256]byte
	value := appendHistory(room[:0], hist)
	if m.rec != nil {
		rec := *m.rec
		rec.state = hist
		value = appendParked(room[:0], rec)
	}
	return p.put(ctx, m, m.key, value)
}

// put writes value under key, of m's message, reporting whether it could.
func (p *Policy) put(ctx context.Context, m delivery, key string, value []byte) bool {
	if _, err := p.kv.Put(ctx, key, value); err != nil {
		p.logger.ErrorContext(ctx, "natsretry: cannot record the message's history", p.ids(m, err)...)
		return false
	}
	return true
}

// remove removes the records under keys, every revision: a key-value
// purge, whose marker expires after markerTTL. An empty key is none.
func (p *Policy) remove(ctx context.Context, m delivery, keys ...string) {
	for _, key := range keys {
		if key == "" {
			continue
		}
		if err := p.kv.Purge(ctx, key, jetstream.PurgeTTL(markerTTL)); err != nil {
			p.logger.ErrorContext(ctx, "natsretry: cannot remove the message's history", p.ids(m, err)...)
		}
	}
}

// nak asks JetStream to redeliver m after delay, at once when it is not
// positive.
func (p *Policy) nak(ctx context.Context, m delivery, delay time.Duration) {
	var err error
	if delay > 0 {
		err = m.msg.NakWithDelay(delay)
	} else {
		err = m.msg.Nak()
	}
	if err != nil {
		p.logger.ErrorContext(ctx, "natsretry: cannot nak the message; it is redelivered after the consumer's AckWait", p.ids(m, err)...)
	}
}
