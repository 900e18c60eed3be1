package natsretry

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/retrypolicy/retrypolicy"
)

// maxStale is the most deliveries a copy of a message may lag behind the
// last one the policy saw end and still be taken for a copy that waited in
// the client's buffer (and left alone): each later delivery came an
// AckWait or a nak after the one before, far fewer than this while a copy
// waits. A history claiming more was not written by this delivery's
// policy: it is repaired, not obeyed.
const maxStale = 16

// delivery is a message being handled, with what the policy derives from
// it once.
type delivery struct {
	msg  jetstream.Msg
	md   *jetstream.MsgMetadata
	key  string // its history's: a work message's, or its parked record's
	pol  *retrypolicy.Policy
	own  bool // pol is the message's own strategy, from its header
	seed uint64
	// kept: the message may have a history under key (not a first
	// delivery of a work message).
	kept bool
	// park is where a long wait moves the message; nil when it cannot be
	// moved (waits stay in place, or the message is parked already).
	park *parking
	// rec is, for a parked message, its record (it is saved in it), and
	// parkedIn the parking it runs from.
	rec      *parkedRecord
	parkedIn *parking
	// h runs the message, as a consumer of ackWait's.
	h       Handler
	ackWait time.Duration
}

// workKey is the history key of the work message m is or stands for: a
// dead letter's identity.
func (m *delivery) workKey() string {
	if m.rec != nil {
		return m.rec.origin
	}
	return m.key
}

// span is when a run of a delivery started and ended.
type span struct{ start, end time.Time }

// policyOf returns the policy of a delivery's message: its own strategy
// (HeaderStrategy), and true, else its subject's; an invalid own strategy
// is logged at its first delivery and its subject's applies.
func (p *Policy) policyOf(ctx context.Context, m delivery) (*retrypolicy.Policy, bool) {
	raw := m.msg.Headers().Get(HeaderStrategy)
	if raw == "" {
		return p.policies.Kind(m.msg.Subject()), false
	}
	pol, err := p.policies.Own([]byte(raw))
	if err != nil {
		if m.md.NumDelivered == 1 {
			p.logger.WarnContext(ctx, "natsretry: the message's strategy is invalid; its subject's strategy applies",
				slog.String("subject", m.msg.Subject()), slog.Uint64("sequence", m.md.Sequence.Stream), slog.String("error", err.Error()))
		}
		return p.policies.Kind(m.msg.Subject()), false
	}
	return pol, true
}

// ids are the log attributes of m and err.
func (p *Policy) ids(m delivery, err error) []any {
	return []any{slog.String("subject", m.msg.Subject()), slog.String("stream", m.md.Stream),
		slog.Uint64("sequence", m.md.Sequence.Stream), slog.String("error", err.Error())}
}

// repairedText says why a history was started anew.
func repairedText(m delivery, hist history) error {
	return fmt.Errorf("delivery %d, history's last seen %d", m.md.NumDelivered, hist.seen)
}
