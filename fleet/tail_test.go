package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHedgesCutTheTail pins the tail what-if's controls at its defaults,
// over seeds 1 to 10: hedging at the fixed delay (the service time's 95th
// percentile) and at the following one cuts the 99th percentile of the
// latency at least 5 times against one attempt (about 7.6 times: a call
// slow by 200 ms is answered by its hedge, 17.5 ms later plus a fast
// service) for at most 10% extra load (about 5% and 7%); every policy sees
// the same arrivals, and the median is one attempt's. At 500 calls a
// second the budget refuses (next to) nothing: hedge-unbudgeted is hedge.
// About 1 s in all, 10 s under the race detector.
func TestHedgesCutTheTail(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		c := DefaultTail()
		c.Seed = seed
		rs, err := c.Run(context.Background())
		require.NoError(t, err)
		none := rs[TailNone]
		require.Equal(t, TailNone, none.Policy)
		assert.Greater(t, none.P99, 200*time.Millisecond, "seed %d: one attempt's p99 is a slow call's", seed)
		for _, p := range []TailPolicy{TailHedge, TailHedgeFollowing} {
			r := rs[p]
			require.Equal(t, p, r.Policy)
			assert.False(t, r.Truncated)
			assert.Equal(t, none.Calls, r.Calls, "seed %d: the same arrivals", seed)
			assert.Equal(t, r.Calls, r.Answered)
			assert.LessOrEqual(t, 5*r.P99, none.P99, "seed %d, %s: p99 %v against %v", seed, p, r.P99, none.P99)
			assert.LessOrEqual(t, r.ExtraLoad, 0.10, "seed %d, %s", seed, p)
			assert.Greater(t, r.ExtraLoad, 0.02, "seed %d, %s: it hedges", seed, p)
			assert.InDelta(t, none.P50, r.P50, float64(time.Millisecond/10), "seed %d, %s", seed, p)
		}
		assert.Equal(t, rs[TailHedge].P99, rs[TailHedgeUnbudgeted].P99, "seed %d", seed)
	}
}

// TestAHedgeIsPaidForFromTheBudget: a server slower than the delay for
// every call (100 ms against 10 ms) hedges every call when nothing bounds
// it, and under the default budget a client sends at most its burst plus
// a tenth of the calls that ended well (each deposits once, whichever
// attempt won); the rest are refused, and no call sends more than its
// Attempts.
func TestAHedgeIsPaidForFromTheBudget(t *testing.T) {
	c := DefaultTail()
	c.Median, c.Sigma, c.SlowShare, c.Delay, c.Attempts = 100*time.Millisecond, 0, 0, 10*time.Millisecond, 3
	c.Rate, c.Duration = 100, 10*time.Second
	rs, err := c.Run(context.Background())
	require.NoError(t, err)
	unbudgeted, hedged := rs[TailHedgeUnbudgeted], rs[TailHedge]
	assert.Equal(t, 2*unbudgeted.Calls, unbudgeted.Hedges, "every call sends its 3 attempts")
	assert.Equal(t, 3*unbudgeted.Calls, unbudgeted.Attempts)
	assert.LessOrEqual(t, hedged.Hedges, 10*c.Clients+hedged.Answered/10, "burst + ratio x calls that ended well")
	assert.Greater(t, hedged.Hedges, hedged.Answered/20, "it hedges what the budget grants")
	assert.Positive(t, hedged.Refused)
	assert.LessOrEqual(t, hedged.Attempts, 3*hedged.Calls)
}

// TestLosersAreCancelled: a hedge sent 1 ms after its call's first
// attempt (10 ms, every time) waits in the queue of a server of one
// worker, and is dropped at the head once the first has answered: each
// call costs the worker 10 ms. With two workers, the hedge is in service
// when the first answers, and keeps its worker to its end: 20 ms a call.
// Either way the call's answer comes 10 ms after its arrival.
func TestLosersAreCancelled(t *testing.T) {
	c := DefaultTail()
	c.Median, c.Sigma, c.SlowShare, c.Delay = 10*time.Millisecond, 0, 0, time.Millisecond
	c.Rate, c.Duration, c.Clients = 1, 20*time.Second, 1
	for workers, work := range map[int]time.Duration{1: 10 * time.Millisecond, 2: 20 * time.Millisecond} {
		c.Workers = workers
		rs, err := c.Run(context.Background())
		require.NoError(t, err)
		r := rs[TailHedgeUnbudgeted]
		require.Positive(t, r.Calls)
		assert.Equal(t, r.Calls, r.Hedges, "%d workers: every call hedges", workers)
		assert.Equal(t, work, r.WorkPerCall, "%d workers", workers)
		assert.Equal(t, 10*time.Millisecond, r.P99, "%d workers", workers)
	}
}

// TestTheDefaultDelayIsTheServiceTimes95thPercentile: 98% of service
// times lognormal about 10 ms (sigma 0.3) and 2% 200 ms longer put the
// 95th percentile where the fast ones' reaches 0.95/0.98 of them,
// 10 ms x exp(0.3 x 1.8724) = 17.53 ms; with no slow ones it is the
// lognormal's own, 10 ms x exp(0.3 x 1.6449) = 16.38 ms.
func TestTheDefaultDelayIsTheServiceTimes95thPercentile(t *testing.T) {
	c := DefaultTail()
	assert.InDelta(t, 17.53, float64(c.ServiceQuantile(0.95))/1e6, 0.01)
	c.SlowShare = 0
	assert.InDelta(t, 16.38, float64(c.ServiceQuantile(0.95))/1e6, 0.01)
	c.Sigma = 0
	assert.Equal(t, 10*time.Millisecond, c.ServiceQuantile(0.95))
}

// TestHedgesDoNotHelpWhenAttemptsAreSlowTogether: when a slow call is slow
// on every attempt, a hedge is slow too: the 99th percentile stays one
// attempt's, for the extra load.
func TestHedgesDoNotHelpWhenAttemptsAreSlowTogether(t *testing.T) {
	c := DefaultTail()
	c.SlowTogether, c.Duration = true, 20*time.Second
	rs, err := c.Run(context.Background())
	require.NoError(t, err)
	assert.Greater(t, rs[TailHedge].P99, 200*time.Millisecond)
	assert.Greater(t, rs[TailHedge].ExtraLoad, 0.04)
}

// TestTailRefusesBadSettings: each setting out of range is an error
// naming it.
func TestTailRefusesBadSettings(t *testing.T) {
	for _, c := range []struct {
		change func(*Tail)
		want   string
	}{
		{func(c *Tail) { c.Workers = 0 }, "Workers must be between 1 and 10000, got 0"},
		{func(c *Tail) { c.Median = 0 }, "Median must be between 1ns and 1m, got 0s"},
		{func(c *Tail) { c.Sigma = -1 }, "Sigma must be between 0 and 3, got -1"},
		{func(c *Tail) { c.SlowShare = 1 }, "SlowShare must be at least 0 and below 1, got 1"},
		{func(c *Tail) { c.Rate = 0 }, "Rate must be above 0 and at most 100000, got 0"},
		{func(c *Tail) { c.Attempts = 6 }, "Attempts must be between 2 and 5, got 6"},
		{func(c *Tail) { c.Quantile = 1 }, "Quantile must be above 0 and below 1, got 1"},
		{func(c *Tail) { c.Delay = -1 }, "Delay must be between 0 (the service time's 95th percentile) and 1h, got -1ns"},
	} {
		tail := DefaultTail()
		c.change(&tail)
		_, err := tail.Run(context.Background())
		assert.ErrorContains(t, err, "fleet: Tail: "+c.want)
	}
}

// TestATailRunIsBounded: a server far past its capacity queues without
// end; the run stops at MaxCalls and says so.
func TestATailRunIsBounded(t *testing.T) {
	c := DefaultTail()
	c.Workers, c.MaxCalls, c.Duration = 1, 5000, 10*time.Minute
	rs, err := c.Run(context.Background())
	require.NoError(t, err)
	for _, r := range rs {
		assert.True(t, r.Truncated, "%s", r.Policy)
		assert.Equal(t, BoundMaxCalls, r.TruncatedBy)
		assert.LessOrEqual(t, r.Calls, 5000)
	}
}

// BenchmarkTail: the tail what-if at its defaults, its four policies on a
// minute of 500 calls a second (about 30,000 calls).
func BenchmarkTail(b *testing.B) {
	c := DefaultTail()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
