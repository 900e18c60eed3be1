package natsretry

import (
	"context"
	"time"
)

// wait makes m wait until due, from now: a nak with that delay, after
// hist is saved; or, for a wait longer than the parking threshold, a move
// of m to the parking stream (park), so that it holds no slot of its
// consumer while it waits. A parked message waits as a nak on the parking
// consumer, which holds any number.
func (p *Policy) wait(ctx context.Context, m delivery, hist history, due, now time.Time) {
	delay := due.Sub(now)
	if m.park == nil || delay <= m.park.after {
		p.save(ctx, m, hist) // when it fails, the redelivery counts this failure as unseen
		p.nak(ctx, m, delay)
		if m.rec != nil {
			m.parkedIn.watch(m.key, due)
		}
		return
	}
	p.park(ctx, m, hist, delay)
}
