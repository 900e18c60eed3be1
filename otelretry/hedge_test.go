package otelretry_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/retrypolicy/retrypolicy/otelretry"
	"github.com/retrypolicy/retrypolicy/retry"
)

// TestHedgesAreCountedByOutcomeNotAsRetries: a hedged call whose first
// attempt hangs sends two hedges, the first after its delay, which fails,
// the second at once on that failure (an event of one failure), which
// wins: one hedge won, one lost, three attempts, and no retry nor wait
// recorded.
func TestHedgesAreCountedByOutcomeNotAsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSDK(t)
		var n atomic.Int32
		_, err := retry.Hedge(context.Background(), oneSecond, func(ctx context.Context) (int, error) {
			switch n.Add(1) {
			case 1:
				<-ctx.Done()
				return 0, ctx.Err()
			case 2:
				return 0, errors.New("unavailable")
			}
			return 1, nil
		}, append(s.in.Options("retry", "lookup"), retry.WithHedging(retry.Hedging{Attempts: 3, Delay: 10 * time.Millisecond}))...)
		require.NoError(t, err)
		op := []attribute.KeyValue{otelretry.Source.String("retry"), otelretry.Operation.String("lookup")}
		m := s.metrics(t)
		assert.Equal(t, map[attribute.Distinct]int64{
			set(append(op, otelretry.Outcome.String("won"))...):  1,
			set(append(op, otelretry.Outcome.String("lost"))...): 1,
		}, counts(t, m["retrypolicy.hedges"], "{hedge}"))
		assert.NotContains(t, m, "retrypolicy.retries", "a hedge is no retry")
		assert.NotContains(t, m, "retrypolicy.wait.duration")
		assert.Equal(t, map[attribute.Distinct]hist{set(append(op, otelretry.Outcome.String("success"))...): {1, 3}},
			histograms[int64](t, m["retrypolicy.operation.attempts"], "{attempt}"))
	})
}
