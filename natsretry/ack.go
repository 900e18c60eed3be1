package natsretry

import "context"

// done acks m, then removes its history (a parked message's record, and
// its work message's history that named it), even when the ack is not
// confirmed: a redelivery counts as a failure either way, and a history
// kept for an ack that did land would stay for ever.
func (m *delivery) done(ctx context.Context) {
	if err := m.msg.DoubleAck(ctx); err != nil {
		m.p.logger.ErrorContext(ctx, "natsretry: the ack is not confirmed; the message may be redelivered", m.ids(err)...)
	}
	m.removeAll(ctx)
}

// removeAll removes m's history once m is done with: a parked message's
// record and its work message's history, which named it, or a work
// message's own.
func (m *delivery) removeAll(ctx context.Context) {
	switch {
	case m.rec != nil:
		m.remove(ctx, m.key, m.rec.origin)
		m.parkedIn.forget(m.key)
	case m.kept:
		m.remove(ctx, m.key)
	}
}
