package natsretry

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/queuekit"
)

// maxStale is the most deliveries a copy of a message may lag behind the
// last one the policy saw end and still be taken for a copy that waited in
// the client's buffer (and left alone): each later delivery came an
// AckWait or a nak after the one before, far fewer than this while a copy
// waits. A history claiming more was not written by this delivery's
// policy: it is repaired, not obeyed.
const maxStale = 16

// consumer is what a consumer's deliveries are handled with: its handler,
// its AckWait, and where its long waits go.
type consumer struct {
	h       Handler
	ackWait time.Duration
	// parking is where a long wait moves a message; nil when it cannot
	// be moved (waits stay in place, or the message is parked already).
	parking *parking
}

// delivery is a message being handled, with what the policy derives from
// it once and what it carries: its history. The functions that act on a
// delivery are its methods, and change its history in place.
type delivery struct {
	p *Policy
	consumer
	msg  jetstream.Msg
	md   *jetstream.MsgMetadata
	key  string // its history's: a work message's, or its parked record's
	pol  *retrypolicy.Policy
	own  bool // pol is the message's own strategy, from its header
	seed uint64
	// kept: the message may have a history under key (not a first
	// delivery of a work message).
	kept bool
	// rec is, for a parked message, its record (it is saved in it), and
	// parkedIn the parking it runs from.
	rec      *parkedRecord
	parkedIn *parking
	// hist is its history: what the policy knows of its earlier runs.
	hist history
}

// open is the delivery of msg, whose metadata is md, handled as c says:
// under its own history key and jitter seed.
func (p *Policy) open(msg jetstream.Msg, md *jetstream.MsgMetadata, c consumer) delivery {
	return delivery{p: p, consumer: c, msg: msg, md: md, key: historyKey(md),
		seed: queuekit.Seed(int64(md.Sequence.Stream)), kept: md.NumDelivered > 1}
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

// policyOf returns the policy of m's message: its own strategy
// (HeaderStrategy), and true, else its subject's; an invalid own strategy
// is logged at its first delivery and its subject's applies.
func (m *delivery) policyOf(ctx context.Context) (*retrypolicy.Policy, bool) {
	p := m.p
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
func (m *delivery) ids(err error) []any {
	return []any{slog.String("subject", m.msg.Subject()), slog.String("stream", m.md.Stream),
		slog.Uint64("sequence", m.md.Sequence.Stream), slog.String("error", err.Error())}
}

// repairedText says why m's history was started anew.
func (m *delivery) repairedText() error {
	return fmt.Errorf("delivery %d, history's last seen %d", m.md.NumDelivered, m.hist.seen)
}
