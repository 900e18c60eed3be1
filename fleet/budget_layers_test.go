package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLayersOutageStartsAtDownAt: before DownAt the bottom serves every
// call, so the chain makes no retry and the bottom sees one call a request
// a second; the outage's failures start at DownAt, and its recovery counts
// from its end.
func TestLayersOutageStartsAtDownAt(t *testing.T) {
	l := Layers{Layers: DefaultLayers(3), Rate: 100, Duration: 2 * time.Minute, DownAt: time.Minute, Down: 30 * time.Second, Horizon: time.Minute}
	r, err := l.Run(context.Background())
	require.NoError(t, err)
	for s := 1; s < 59; s++ { // the first second's last requests reach the bottom in the next
		assert.Equal(t, 100, r.Load[s], "second %d: healthy, one call a request", s)
	}
	for s := range 59 {
		if s < len(r.Retries) {
			assert.Zero(t, r.Retries[s], "second %d: no retry while healthy", s)
		}
	}
	assert.Greater(t, r.Load[60], 100, "the outage's first second: retries")
	assert.False(t, r.Metastable)
	assert.Less(t, r.Recovery, 5*time.Second, "from the outage's end, not from t = 0")
}

// TestLayersWindowBudget: a windowed budget of 0% with no minimum grants
// no retry at any layer, so every layer makes one attempt a call; one of
// 0% with a minimum of 5 retries over 10 s lets each layer retry at most
// 5 times in any window, however long the outage; a layer with both kinds
// of budget is an error naming them.
func TestLayersWindowBudget(t *testing.T) {
	run := func(percent float64, least int) LayersResult {
		chain := DefaultLayers(3)
		for i := range chain {
			chain[i].BudgetPercent, chain[i].BudgetInterval, chain[i].BudgetMinRetries = percent, 10*time.Second, least
		}
		r, err := Layers{Layers: chain, Rate: 100, Duration: time.Minute, Down: 40 * time.Second, Horizon: time.Minute}.Run(context.Background())
		require.NoError(t, err)
		return r
	}
	none := run(0, 0)
	assert.Equal(t, none.Requests, none.Attempts[0], "no retry at the top")
	assert.Equal(t, none.Requests, none.BottomCalls, "one call a request at the bottom")
	for s, n := range none.Retries {
		assert.Zero(t, n, "second %d", s)
	}
	five := run(0, 5)
	retries := 0
	for _, n := range five.Retries {
		retries += n
	}
	// Four layers, 5 retries each in a window, over at most 12 windows
	// (the run's two minutes, a retry's due time a few ms after its grant).
	assert.Positive(t, retries)
	assert.LessOrEqual(t, retries, 4*5*13)
	chain := DefaultLayers(3)
	chain[1].BudgetBurst, chain[1].BudgetInterval = 10, time.Second
	_, err := Layers{Layers: chain}.Run(context.Background())
	assert.ErrorContains(t, err, "layer 2 (gateway): a token budget (BudgetBurst) and a windowed one (BudgetInterval): choose one")
	chain[1].BudgetBurst = 0
	chain[1].BudgetPercent = 200
	_, err = Layers{Layers: chain}.Run(context.Background())
	assert.ErrorContains(t, err, "layer 2 (gateway): BudgetPercent, BudgetInterval and BudgetMinRetries: percent must be between 0 and 100, got 200")
}
