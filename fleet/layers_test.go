package fleet

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/retrypolicy/retrypolicy"
)

// attemptsStrategy makes up to k attempts a call, 1 ms apart.
func attemptsStrategy(k int) retrypolicy.Strategy {
	if k <= 1 {
		return retrypolicy.Strategy{Kind: retrypolicy.None}
	}
	return retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: k, Window: time.Hour,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}
}

// chain is L layers making ks[i] attempts each.
func chain(ks ...int) []Layer {
	out := make([]Layer, len(ks))
	for i, k := range ks {
		out[i] = Layer{Name: "layer", Strategy: attemptsStrategy(k), Latency: time.Millisecond}
	}
	return out
}

// alwaysDown is a run whose bottom never comes back.
func alwaysDown(layers []Layer, requests int) Layers {
	return Layers{Layers: layers, Rate: 10, Duration: time.Duration(requests) * 100 * time.Millisecond, Down: 48 * time.Hour, Horizon: time.Minute}
}

// TestAmplificationClosedForms: with the bottom always down, every layer
// making k attempts and no budget, the bottom sees exactly k^L calls a
// request, 81 for the chain of 4 layers of 3; with one layer
// retrying, k.
func TestAmplificationClosedForms(t *testing.T) {
	for _, c := range []struct {
		name string
		ks   []int
		want int
	}{
		{"every layer 3 attempts, 4 layers", []int{3, 3, 3, 3}, 81},
		{"only the client retrying", []int{3, 1, 1, 1}, 3},
		{"only the driver retrying", []int{1, 1, 1, 3}, 3},
		{"2, 3, 4 attempts", []int{2, 3, 4}, 24},
		{"no retries", []int{1, 1, 1, 1}, 1},
	} {
		r, err := alwaysDown(chain(c.ks...), 50).Run(context.Background())
		require.NoError(t, err, c.name)
		assert.Equal(t, 50*c.want, r.BottomCalls, c.name)

		// Every layer retrying only what the layer below reports as
		// retryable: the lowest layer that retries is the only one.
		only := chain(c.ks...)
		for i := range only {
			only[i].OnlyRetryable = true
		}
		r, err = alwaysDown(only, 50).Run(context.Background())
		require.NoError(t, err, c.name)
		lowest := 1
		for _, k := range c.ks {
			if k > 1 {
				lowest = k
			}
		}
		assert.Equal(t, 50*lowest, r.BottomCalls, "%s, only retryable", c.name)

		r, err = alwaysDown(chain(c.ks...), 50).Run(context.Background())
		require.NoError(t, err, c.name)
		assert.Equal(t, 50, r.Requests, c.name)
		assert.Equal(t, 50, r.Failed, c.name)
		assert.Equal(t, 50*c.want, r.BottomCalls, c.name)
		assert.Equal(t, float64(c.want), r.Amplification, c.name)
		assert.False(t, r.Truncated)
	}
}

// TestBudgetsBoundAmplification: with a budget of ratio r and burst b on
// every layer, each layer's attempts are at most its calls times (1 + r)
// plus b, so the bottom sees at most (1+r)^L calls a request plus what
// the bursts allow, over a long run.
func TestBudgetsBoundAmplification(t *testing.T) {
	layers := chain(3, 3, 3, 3)
	const ratio, burst, requests = 0.1, 10, 2000
	for i := range layers {
		layers[i].BudgetRatio, layers[i].BudgetBurst = ratio, burst
	}
	r, err := alwaysDown(layers, requests).Run(context.Background())
	require.NoError(t, err)
	calls := float64(requests)
	for i, attempts := range r.Attempts {
		assert.LessOrEqual(t, float64(attempts), calls*(1+ratio)+burst, "layer %d", i+1)
		calls = float64(attempts)
	}
	bound := math.Pow(1+ratio, 4) + 4*burst*math.Pow(1+ratio, 3)/requests
	assert.LessOrEqual(t, r.Amplification, bound)
	assert.Greater(t, r.Amplification, 1.0)
}

// TestIndependentFailures: with no outage and the bottom failing each call
// with probability p, the mean calls a request is within 2% of the product
// over the layers of (1 - p_i^k)/(1 - p_i), p_i the layer's failure seen
// from above: p at the bottom, p^k a layer up, and so on; over 20,000
// requests.
func TestIndependentFailures(t *testing.T) {
	const p, k, requests = 0.3, 3, 20_000
	l := Layers{Layers: chain(k, k, k), Rate: 1000, Duration: requests * time.Millisecond, FailRate: p, Seed: 11}
	r, err := l.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, requests, r.Requests)
	want, pi := 1.0, p
	for range 3 {
		want *= (1 - math.Pow(pi, k)) / (1 - pi)
		pi = math.Pow(pi, k)
	}
	assert.InEpsilon(t, want, r.Amplification, 0.02, "want %.4f", want)
}

// TestLayersProperties: with budgets, amplification never exceeds the
// same chain's without, for the same seed; no layer makes more attempts
// than its strategy allows its calls.
func TestLayersProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 4).Draw(t, "layers")
		ks := rapid.SliceOfN(rapid.IntRange(1, 4), n, n).Draw(t, "attempts")
		l := Layers{Layers: chain(ks...), Rate: float64(rapid.IntRange(1, 200).Draw(t, "rate")), Duration: 5 * time.Second,
			Down: time.Duration(rapid.IntRange(0, 6).Draw(t, "down secs")) * time.Second, Capacity: rapid.IntRange(0, 300).Draw(t, "capacity"),
			FailRate: rapid.Float64Range(0, 0.5).Draw(t, "fail rate"), Seed: rapid.Uint64().Draw(t, "seed"), Horizon: 10 * time.Second}
		free, err := l.Run(context.Background())
		require.NoError(t, err)
		calls := free.Requests
		for i, a := range free.Attempts {
			require.LessOrEqual(t, a, calls*ks[i], "layer %d makes at most %d attempts a call", i+1, ks[i])
			calls = a
		}
		budgeted := l
		budgeted.Layers = chain(ks...)
		for i := range budgeted.Layers {
			budgeted.Layers[i].BudgetRatio, budgeted.Layers[i].BudgetBurst = 0.1, 5
		}
		capped, err := budgeted.Run(context.Background())
		require.NoError(t, err)
		require.LessOrEqual(t, capped.Amplification, free.Amplification+1e-9)
	})
}

// TestTimeoutsAndBreakers: an attempt that hears nothing within its
// timeout fails while the call below goes on (its load unchanged); an open
// breaker fails attempts without calling below, and the call gives up.
func TestTimeoutsAndBreakers(t *testing.T) {
	slow := chain(3, 1)
	slow[0].Timeout = 10 * time.Millisecond
	slow[1].Latency = 50 * time.Millisecond // the driver takes longer than the client waits
	r, err := Layers{Layers: slow, Rate: 1, Duration: time.Second}.Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, r.Requests)
	assert.Equal(t, 1, r.Failed, "every attempt timed out")
	assert.Equal(t, 3, r.BottomCalls, "each abandoned call still reached the bottom")

	guarded := chain(3, 1)
	guarded[0].BreakerFailures, guarded[0].BreakerOpen = 5, time.Hour
	r, err = alwaysDown(guarded, 50).Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 5, r.BottomCalls, "3 calls for the first request, 2 for the second, then the breaker is open")
	assert.Equal(t, 50, r.Failed)
	assert.Equal(t, 3+3+48, r.Attempts[0], "3 for the first request, 3 for the second (its third refused by the breaker, which opened at the fifth failure), then one a request")
}

// TestLayersRecoveryAndBounds: recovery is measured from the outage's end;
// a run stops at MaxCalls or its context and says so; bad input is an
// error.
func TestLayersRecoveryAndBounds(t *testing.T) {
	r, err := Layers{Layers: chain(3, 3), Rate: 50, Duration: time.Minute, Down: 10 * time.Second, Capacity: 100}.Run(context.Background())
	require.NoError(t, err)
	assert.False(t, r.Metastable)
	assert.Equal(t, time.Duration(0), r.Recovery, "short retries end with the outage")
	assert.Equal(t, 4.5, r.PeakLoad, "while down, 9 calls a request at 50 a second: 450 over a capacity of 100")

	r, err = Layers{Layers: chain(3, 3, 3, 3), Rate: 1000, Duration: time.Hour, Down: 2 * time.Hour, MaxCalls: 10_000}.Run(context.Background())
	require.NoError(t, err)
	assert.True(t, r.Truncated)
	assert.LessOrEqual(t, r.BottomCalls, 10_000)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err = Layers{}.Run(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	assert.True(t, r.Truncated)

	for _, bad := range []Layers{{Rate: -1}, {FailRate: 1}, {Duration: 25 * time.Hour}, {Layers: []Layer{}},
		{Layers: []Layer{{Strategy: retrypolicy.Strategy{Kind: retrypolicy.Bounded}}}}, {Layers: []Layer{{BudgetSettings: BudgetSettings{BudgetBurst: -1}}}}} {
		_, err := bad.Run(context.Background())
		assert.Error(t, err, "%+v", bad)
	}
}

// TestLayersMemoryIsBounded: whatever MaxCalls allows, a run stops when
// its calls in flight reach their bound (here lowered to 1,000), and keeps
// at most a bound of latencies (here 100), a sample of them past it.
func TestLayersMemoryIsBounded(t *testing.T) {
	live, kept := maxLiveCalls, maxLatencies
	defer func() { maxLiveCalls, maxLatencies = live, kept }()
	maxLiveCalls, maxLatencies = 1_000, 100
	slow := []Layer{{Strategy: retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Hour}}}}
	r, err := Layers{Layers: slow, Rate: 1000, Duration: time.Hour, Down: 2 * time.Hour}.Run(context.Background())
	require.NoError(t, err)
	assert.True(t, r.Truncated, "a thousand requests wait an hour each")
	assert.LessOrEqual(t, r.Requests, 1_001)

	run, err := newLayersRun(&Layers{Layers: chain(1), Rate: 500, Duration: time.Second})
	require.NoError(t, err)
	require.NoError(t, run.run(context.Background()))
	res := run.result()
	assert.Equal(t, 500, res.Succeeded)
	assert.Len(t, run.latencies.kept, 100, "a sample of the 500")
	assert.Equal(t, time.Millisecond, res.Latency.P50, "every request takes its 1 ms hop")
}
