package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy"
)

// TestACollapseOutlivesItsTrigger pins the collapse what-if's controls at
// its defaults, over seeds 1 to 10: one attempt recovers every time (the
// negative control: the queue drains at capacity less the load); the
// strategy with no budget collapses at least 9 times in 10 (the positive
// control: retries of calls the server still serves keep its queue full
// after the spike); the token budget and the default recover every time,
// their retries a few percent of the calls. Those that recover settle at
// once (their attempts within 1.1x the arrivals); the strategy never does.
// With the server checking deadlines, the strategy's goodput recovers at
// once, but it goes on retrying hard (about 1.7 attempts a call) for 20 s
// and more: it settles only then.
func TestACollapseOutlivesItsTrigger(t *testing.T) {
	recovered, settledAtOnce := map[CollapsePolicy]int{}, map[CollapsePolicy]int{}
	amplification := map[CollapsePolicy]float64{}
	deadlines := 0
	for seed := uint64(1); seed <= 10; seed++ {
		// The policies the test asks of (the windowed budget, the slowest
		// but for the strategy, is shown in the docs, not pinned here), each
		// on the same arrivals.
		var first []int
		for _, name := range []CollapsePolicy{CollapseNone, CollapseStrategy, CollapseToken, CollapseDefault} {
			r := controlRun(t, "spike", seed, name)
			if first == nil {
				first = r.Arrivals
			}
			assert.Equal(t, first, r.Arrivals, "seed %d: %s sees the same arrivals", seed, name)
			if r.Recovered {
				recovered[name]++
			}
			amplification[name] = max(amplification[name], r.Amplification)
			if r.Settled && r.SettledSecs == 0 {
				settledAtOnce[name]++
			}
			if name == CollapseStrategy {
				assert.False(t, r.Settled, "seed %d: the strategy alone never settles", seed)
			}
		}
		// The server checking deadlines, the strategy.
		c := DefaultCollapse()
		c.Seed, c.CheckDeadlines = seed, true
		c, err := c.check()
		require.NoError(t, err)
		policy, err := retrypolicy.Compile(c.Strategy)
		require.NoError(t, err)
		r, err := c.runPolicy(context.Background(), CollapseStrategy, policy)
		require.NoError(t, err)
		if r.Recovered {
			deadlines++
		}
		assert.True(t, r.Settled, "seed %d: checking deadlines, the strategy settles", seed)
		assert.GreaterOrEqual(t, r.SettledSecs, 20, "seed %d: but not while it still retries hard", seed)
		assert.Greater(t, r.Amplification, 1.5, "seed %d", seed)
	}
	assert.Equal(t, 10, recovered[CollapseNone], "one attempt")
	assert.LessOrEqual(t, recovered[CollapseStrategy], 1, "the strategy with no budget")
	assert.Equal(t, 10, recovered[CollapseToken], "a token budget")
	assert.Equal(t, 10, recovered[CollapseDefault], "the default")
	assert.Less(t, amplification[CollapseToken], 1.1)
	assert.Greater(t, amplification[CollapseStrategy], 3.5, "nearly every call spends its 4 attempts")
	assert.Equal(t, 10, deadlines, "the strategy, the server checking deadlines")
	assert.Equal(t, map[CollapsePolicy]int{CollapseNone: 10, CollapseToken: 10, CollapseDefault: 10}, settledAtOnce)
}

// TestTheRecoveryRule pins the rule on a goodput made by hand: 80 a
// second before the trigger (from 30 s, 10 s long), none during it and for
// 5 s after (to 45 s), then 80: the trailing 5 s mean is 16, 32, 48 and 64
// at 45 to 48 s, and first reaches 72 (90%) at 49 s, the first of 10 good
// seconds, 9 s after the trigger's end; attempts twice the arrivals until
// then.
func TestTheRecoveryRule(t *testing.T) {
	c := Collapse{TriggerAt: 30 * time.Second, TriggerFor: 10 * time.Second}
	r := CollapseResult{Goodput: make([]int, 120), Arrivals: make([]int, 120), Attempts: make([]int, 120)}
	for s := range r.Goodput {
		if s < 30 || s >= 45 {
			r.Goodput[s] = 80
		}
		r.Arrivals[s], r.Attempts[s] = 80, 160
	}
	c.judge(&r)
	assert.True(t, r.Recovered)
	assert.Equal(t, 9, r.RecoverySecs)
	assert.Equal(t, 2.0, r.Amplification)

	r.Goodput = r.Goodput[:58] // ends before 10 good seconds in a row
	r.Recovered, r.RecoverySecs = false, 0
	c.judge(&r)
	assert.False(t, r.Recovered)
	assert.Equal(t, -1, r.RecoverySecs)
}

// TestTheSettledRuleAndWhatIsNotJudged pins the settled rule on counts
// made by hand (80 arrivals a second, the trigger from 30 s for 10 s): twice
// as many attempts until 50 s, then as many as the arrivals; the trailing
// 5 s sum of attempts first falls within 1.1x the arrivals' at 54 s (400
// against 440; 480 at 53 s), 14 s after the trigger's end, goodput having
// recovered at once. The same run cut short, or one whose goodput before
// the trigger was below half its arrivals (30 of 80), is judged neither.
func TestTheSettledRuleAndWhatIsNotJudged(t *testing.T) {
	c := Collapse{TriggerAt: 30 * time.Second, TriggerFor: 10 * time.Second}
	made := func(goodput int) CollapseResult {
		r := CollapseResult{Goodput: make([]int, 120), Arrivals: make([]int, 120), Attempts: make([]int, 120)}
		for s := range r.Goodput {
			r.Goodput[s], r.Arrivals[s], r.Attempts[s] = goodput, 80, 80
			if s < 50 {
				r.Attempts[s] = 160
			}
		}
		return r
	}
	r := made(80)
	c.judge(&r)
	assert.True(t, r.Judged)
	assert.True(t, r.Recovered)
	assert.Zero(t, r.RecoverySecs)
	assert.True(t, r.Settled)
	assert.Equal(t, 14, r.SettledSecs)

	r = made(80)
	r.Truncated, r.TruncatedBy = true, BoundMaxCalls
	c.judge(&r)
	assert.False(t, r.Judged, "cut short")
	assert.False(t, r.Recovered)
	assert.False(t, r.Settled)
	assert.Equal(t, -1, r.RecoverySecs)
	assert.Equal(t, -1, r.SettledSecs)

	r = made(39)
	c.judge(&r)
	assert.False(t, r.Judged, "collapsed before the trigger")
	assert.False(t, r.Recovered)
	r = made(40)
	c.judge(&r)
	assert.True(t, r.Judged, "half the arrivals: judged")
}

// TestCollapseRefusesBadSettings: each setting out of range is an error
// naming it.
func TestCollapseRefusesBadSettings(t *testing.T) {
	for _, c := range []struct {
		change func(*Collapse)
		want   string
	}{
		{func(c *Collapse) { c.Workers = 0 }, "Workers must be between 1 and 10000, got 0"},
		{func(c *Collapse) { c.Queue = -1 }, "Queue must be between 0 and 1000000, got -1"},
		{func(c *Collapse) { c.Rate = 0 }, "Rate must be above 0 and at most 100000, got 0"},
		{func(c *Collapse) { c.Timeout = 0 }, "Timeout must be between 1ns and 1h, got 0s"},
		{func(c *Collapse) { c.Drop = 0.5 }, "Spike must be set, or Drop, or FailShare: one trigger, not two or none"},
		{func(c *Collapse) { c.Spike = 0 }, "Spike must be set, or Drop, or FailShare: one trigger, not two or none"},
		{func(c *Collapse) { c.Spike, c.FailShare = 0, 1 }, "FailShare must be above 0 and below 1, got 1"},
		{func(c *Collapse) { c.TriggerAt = time.Hour }, "TriggerAt must not be negative, nor TriggerFor, and the trigger must end within Duration (5m0s), got 1h0m0s for 10s"},
		{func(c *Collapse) { c.BudgetBurst = -1 }, "BudgetRatio and BudgetBurst: burst must be between 1 and 1000000000, got -1"},
		{func(c *Collapse) { c.ThrottleK = 0.5 }, "ThrottleK must be between 1 and 10, got 0.5"},
		{func(c *Collapse) { c.ThrottleWindow = time.Hour }, "ThrottleWindow must be between 100ms and 10m, got 1h0m0s"},
	} {
		col := DefaultCollapse()
		c.change(&col)
		_, err := col.Run(context.Background())
		assert.ErrorContains(t, err, "fleet: Collapse: "+c.want)
	}
}

// TestACapacityDropCollapsesToo: half the workers lost for 10 s, at the
// default load, is a trigger as a spike is: the strategy with no budget
// does not recover; one attempt and the token budget do.
func TestACapacityDropCollapsesToo(t *testing.T) {
	assert.True(t, controlRun(t, "drop", 1, CollapseNone).Recovered, "none")
	assert.False(t, controlRun(t, "drop", 1, CollapseStrategy).Recovered, "strategy")
	assert.True(t, controlRun(t, "drop", 1, CollapseToken).Recovered, "token")
}

// BenchmarkCollapse: the collapse what-if at its defaults, its ten
// policies on five minutes of 80 calls a second (about 24,000 calls, 3.9
// attempts each under the strategy alone).
func BenchmarkCollapse(b *testing.B) {
	c := DefaultCollapse()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRandomFailuresShowTheBudgetsCost: half the attempts served failing
// for 20 s, at a quarter of the default load (the server never
// overloaded, whatever the policy): one attempt saves half the calls of
// the span, the strategy alone nearly all (1 - 0.5^4 of them, less the
// retries that fall past the span's end, which succeed), and a token
// budget, spent within seconds and refilled only by calls that ended
// well, fewer than the strategy: the cost of a budget where failures do
// not come from load. Every policy recovers and settles.
func TestRandomFailuresShowTheBudgetsCost(t *testing.T) {
	c := DefaultCollapse()
	c.Rate, c.Spike, c.FailShare = 20, 0, 0.5
	c.TriggerAt, c.TriggerFor, c.Duration = 30*time.Second, 20*time.Second, 90*time.Second
	rs, err := c.Run(context.Background())
	require.NoError(t, err)
	share := map[CollapsePolicy]float64{}
	for _, r := range rs {
		require.Positive(t, r.TriggerArrivals)
		share[r.Policy] = float64(r.TriggerSucceeded) / float64(r.TriggerArrivals)
		assert.True(t, r.Judged && r.Recovered && r.Settled, "%v", r.Policy)
	}
	assert.InDelta(t, 0.5, share[CollapseNone], 0.08, "one attempt")
	assert.Greater(t, share[CollapseStrategy], 0.9, "the strategy alone")
	assert.Less(t, share[CollapseToken], share[CollapseStrategy]-0.1, "a token budget costs successful calls")
	assert.Equal(t, share[CollapseToken], share[CollapseDefault], "the default is the token budget at its defaults")
}
