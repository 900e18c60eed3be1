// Command first is otelretry's first program: an operation that fails twice.
//
// It is retried under its strategy while OpenTelemetry's SDK records the
// retries.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/otelretry"
	"github.com/retrypolicy/retrypolicy/retry"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "first:", err)
		os.Exit(1)
	}
}

// run retries an operation that fails twice and prints what was counted.
func run(ctx context.Context, out io.Writer) error {
	// The SDK, read by hand here; a service exports with a periodic reader.
	reader := metric.NewManualReader()
	in, err := otelretry.New(otelretry.WithMeterProvider(metric.NewMeterProvider(metric.WithReader(reader))))
	if err != nil {
		return err
	}
	strategy := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 10 * time.Millisecond}}
	calls := 0
	report, err := retry.Do(ctx, strategy, func(ctx context.Context) (string, error) {
		if err := ctx.Err(); err != nil { // the caller gave up: no render
			return "", err
		}
		calls++
		if calls < 3 {
			return "", errors.New("renderer busy")
		}
		return "report", nil
	}, in.Options("retry", "render-report")...)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s after %d calls\n", report, calls)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		return err
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, p := range sum.DataPoints {
					fmt.Fprintf(out, "%s: %d\n", m.Name, p.Value)
				}
			}
		}
	}
	return nil
}
