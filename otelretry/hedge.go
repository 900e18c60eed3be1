package otelretry

import (
	"go.opentelemetry.io/otel/metric"

	"github.com/retrypolicy/retrypolicy/retry"
)

// newHedges makes the hedges counter.
func (in *Instruments) newHedges() error {
	var err error
	in.hedges, err = in.meter.Int64Counter("retrypolicy.hedges", metric.WithUnit("{hedge}"),
		metric.WithDescription("Hedges sent: attempts a hedged call sent while an earlier one was outstanding, by outcome: won (its answer ended the call) or lost."))
	return err
}

// hedged counts the hedges a call sent, at its end: the one that won, if
// one did, and the others lost. Hedges are not retries: the retries
// counter and the wait histogram leave them out.
func (r *call) hedged(e retry.End) {
	if e.Hedges <= 0 {
		return
	}
	won := 0
	if e.HedgeWon {
		won = 1
		r.in.hedges.Add(e.Context, 1, metric.WithAttributeSet(r.with(Outcome.String("won"))))
	}
	if lost := e.Hedges - won; lost > 0 {
		r.in.hedges.Add(e.Context, int64(lost), metric.WithAttributeSet(r.with(Outcome.String("lost"))))
	}
}
