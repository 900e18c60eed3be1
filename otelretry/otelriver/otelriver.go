// Package otelriver records what riverretry's policy does, through
// otelretry's instruments.
//
// Its hooks go in a River client's riverretry policy:
//
//	in, err := otelretry.New()
//	hooks, err := otelriver.Hooks(in)
//	policy, err := riverretry.New(riverretry.Config{Kinds: kinds, Hooks: hooks})
//
// Each decision on a failed job is a retrypolicy.decisions (by action,
// and reason when fatal) and a retry with its wait, or a give-up by
// reason; each record repaired and each insert refused is counted; all by
// the job's kind. It is a module of its own
// (github.com/retrypolicy/retrypolicy/otelretry/otelriver), so that
// otelretry's users without River fetch no River; River's own instruments
// are made here, in otelretry's scope.
package otelriver

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/otelretry"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/riverretry"
)

// JobKind is the attribute of a River job's kind.
const JobKind = attribute.Key("retrypolicy.job.kind")

// Hooks returns riverretry hooks that record through in, with River's two
// counters of its own: the records repaired and the inserts refused. Its
// error is the meter's, for a counter it could not make. Call it once a
// policy: it makes the counters anew.
func Hooks(in *otelretry.Instruments) (riverretry.Hooks, error) {
	m := in.Meter()
	repaired, err := m.Int64Counter("retrypolicy.river.records.repaired", metric.WithUnit("{record}"),
		metric.WithDescription("River job records the policy did not trust and read from River's errors instead."))
	if err != nil {
		return riverretry.Hooks{}, err
	}
	refused, err := m.Int64Counter("retrypolicy.river.inserts.refused", metric.WithUnit("{job}"),
		metric.WithDescription("River job inserts refused for their metadata or strategy."))
	if err != nil {
		return riverretry.Hooks{}, err
	}
	return riverretry.Hooks{
		Decided: func(ctx context.Context, kind string, d retrypolicy.Decision, gaveUp retry.Reason) {
			in.DecidedBy(ctx, "river", d, gaveUp, JobKind.String(kind))
		},
		Repaired: func(ctx context.Context, kind string) {
			repaired.Add(ctx, 1, metric.WithAttributes(JobKind.String(kind)))
		},
		Refused: func(ctx context.Context, kind string) {
			refused.Add(ctx, 1, metric.WithAttributes(JobKind.String(kind)))
		},
	}, nil
}
