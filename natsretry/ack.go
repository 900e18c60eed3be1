package natsretry

import "context"

// done acks m, then removes its history (a parked message's record, and
// its work message's history that named it), even when the ack is not
// confirmed: a redelivery counts as a failure either way, and a history
// kept for an ack that did land would stay for ever.
func (p *Policy) done(ctx context.Context, m delivery) {
	if err := m.msg.DoubleAck(ctx); err != nil {
		p.logger.ErrorContext(ctx, "natsretry: the ack is not confirmed; the message may be redelivered", p.ids(m, err)...)
	}
	switch {
	case m.rec != nil:
		p.remove(ctx, m, m.key, m.rec.origin)
		m.parkedIn.forget(m.key)
	case m.kept:
		p.remove(ctx, m, m.key)
	}
}
