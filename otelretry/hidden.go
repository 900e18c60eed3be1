package otelretry

import (
	"go.opentelemetry.io/otel/metric"

	"github.com/retrypolicy/retrypolicy/retry"
)

// newHidden makes the counter of hidden resends.
func (in *Instruments) newHidden() error {
	var err error
	in.hidden, err = in.meter.Int64Counter("retrypolicy.hidden_resends", metric.WithUnit("{resend}"),
		metric.WithDescription("Sends of an attempt that its transport made on its own, out of the loop's sight (net/http's replays and HTTP/2 resends, grpc-go's transparent retries): not retries, and not attempts."))
	return err
}

// hiddenResend counts a hidden resend (an Event whose Hidden is true),
// by the call's attributes: never a retry.
func (o *operations) hiddenResend(e retry.Event) {
	c, _ := o.recorder(e.Context)
	o.in.hidden.Add(e.Context, 1, c.sets.add...)
}
