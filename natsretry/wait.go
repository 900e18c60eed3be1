package natsretry

import (
	"context"
	"time"
)

// wait makes m wait until due, from now: a nak with that delay, after its
// history is saved; or, for a wait longer than the parking threshold, a
// move of m to the parking stream (park), so that it holds no slot of its
// consumer while it waits. A parked message waits as a nak on the parking
// consumer, which holds any number.
func (m *delivery) wait(ctx context.Context, due, now time.Time) {
	delay := due.Sub(now)
	if m.parking == nil || delay <= m.parking.after {
		m.save(ctx) // when it fails, the redelivery counts this failure as unseen
		m.nak(ctx, delay)
		if m.rec != nil {
			m.parkedIn.watch(m.key, due)
		}
		return
	}
	m.park(ctx, delay)
}
