package otelretry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/otelretry"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// TestGiveUpsByTheLayersReasons: a loop that gives up because its attempt
// was retried below, and one whose wait a durable layer took over, are
// counted by their reasons, retried_below and deferred.
func TestGiveUpsByTheLayersReasons(t *testing.T) {
	reader := metric.NewManualReader()
	in, err := otelretry.New(otelretry.WithMeterProvider(metric.NewMeterProvider(metric.WithReader(reader))))
	require.NoError(t, err)
	three := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Microsecond}}
	down := errors.New("down")
	_, err = retryOp(context.Background(), in, "outer", three, func(ctx context.Context) (int, error) {
		return retry.Do(ctx, three, func(context.Context) (int, error) { return 0, down })
	})
	require.Error(t, err)
	_, err = retryOp(retry.DeferAfter(context.Background(), time.Second), in, "deferred", three,
		func(context.Context) (int, error) { return 0, retry.After(down, time.Minute) })
	require.Error(t, err)

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	reasons := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "retrypolicy.give_ups" {
				for _, dp := range sum.DataPoints {
					r, _ := dp.Attributes.Value(attribute.Key("retrypolicy.reason"))
					reasons[r.AsString()] += dp.Value
				}
			}
		}
	}
	assert.Equal(t, map[string]int64{"retried_below": 1, "deferred": 1}, reasons)
}
