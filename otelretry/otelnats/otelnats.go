// Package otelnats records what natsretry's policy does, through otelretry's instruments.
//
// Its hooks go in a JetStream consumer's natsretry policy:
//
//	in, err := otelretry.New()
//	hooks, err := otelnats.Hooks(in, nil)
//	policy, err := natsretry.New(ctx, js, natsretry.Config{History: kv, DeadLetter: "dead.orders", Park: "park", Hooks: hooks})
//
// Each decision on a failed delivery is a retrypolicy.decisions (by
// action, and reason when fatal) and a retry with its wait, or a give-up
// by reason; each message dead-lettered and each history started anew is
// counted; all by the message's subject, or the name a function gives it.
// It is a module of its own
// (github.com/retrypolicy/retrypolicy/otelretry/otelnats), so that
// otelretry's users without NATS fetch no NATS.
package otelnats

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/natsretry"
	"github.com/retrypolicy/retrypolicy/otelretry"
	"github.com/retrypolicy/retrypolicy/retry"
)

// Subject is the attribute of a message's subject, or of the name given
// to it.
const Subject = attribute.Key("retrypolicy.nats.subject")

// Hooks returns natsretry hooks that record through in, with two counters
// of JetStream's own: the messages dead-lettered and the histories started
// anew. name maps a subject to the attribute's value; nil keeps the
// subject. Give one when subjects carry ids (orders.1234), so that each
// is not a series of its own. Its error is the meter's, for a counter it
// could not make. Call it once a policy: it makes the counters anew.
func Hooks(in *otelretry.Instruments, name func(subject string) string) (natsretry.Hooks, error) {
	m := in.Meter()
	dead, err := m.Int64Counter("retrypolicy.nats.dead_letters", metric.WithUnit("{message}"),
		metric.WithDescription("JetStream messages given up and published to the dead-letter subject."))
	if err != nil {
		return natsretry.Hooks{}, err
	}
	repaired, err := m.Int64Counter("retrypolicy.nats.histories.repaired", metric.WithUnit("{history}"),
		metric.WithDescription("JetStream message histories the policy could not read and started anew."))
	if err != nil {
		return natsretry.Hooks{}, err
	}
	if name == nil {
		name = func(subject string) string { return subject }
	}
	return natsretry.Hooks{
		Decided: func(ctx context.Context, subject string, d retrypolicy.Decision, gaveUp retry.Reason) {
			in.DecidedBy(ctx, "nats", d, gaveUp, Subject.String(name(subject)))
		},
		DeadLettered: func(ctx context.Context, subject string, reason retry.Reason) {
			dead.Add(ctx, 1, metric.WithAttributes(Subject.String(name(subject)), otelretry.Reason.String(reason.String())))
		},
		Repaired: func(ctx context.Context, subject string) {
			repaired.Add(ctx, 1, metric.WithAttributes(Subject.String(name(subject))))
		},
	}, nil
}
