package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy"
)

// controlRuns holds the runs of the collapse's controls, by trigger, seed
// and policy, so that the tests that judge them share each run: a run of
// the defaults takes tens of milliseconds, a hundred of them seconds under
// the race detector.
var controlRuns = map[controlKey]CollapseResult{}

// controlKey names one run of the controls.
type controlKey struct {
	trigger string // "spike" or "drop"
	seed    uint64
	policy  CollapsePolicy
}

// controlRun returns the run of policy at the collapse's defaults with
// seed, the trigger a 3x spike or a 50% capacity drop, each for 10 s at
// 60 s.
func controlRun(t *testing.T, trigger string, seed uint64, policy CollapsePolicy) CollapseResult {
	t.Helper()
	key := controlKey{trigger, seed, policy}
	if r, ok := controlRuns[key]; ok {
		return r
	}
	c := DefaultCollapse()
	c.Seed = seed
	if trigger == "drop" {
		c.Spike, c.Drop = 0, 0.5
	}
	c, err := c.check()
	require.NoError(t, err)
	compiled, err := retrypolicy.Compile(c.Strategy)
	require.NoError(t, err)
	r, err := c.runPolicy(context.Background(), policy, compiled)
	require.NoError(t, err)
	require.False(t, r.Truncated)
	if policy != CollapseHedgeUnbudgeted { // which collapses before the trigger (TestHedgingOnTheBudgetDoesNotCollapse)
		require.True(t, r.Judged, "%s, seed %d, %s", trigger, seed, policy)
	}
	controlRuns[key] = r
	return r
}

// TestAThrottleShedsWhatTheServerCannotServe pins the throttle's
// controls at the collapse's defaults (K = 2, a 1 s window, 10 clients of
// 8 calls a second), over seeds 1 to 10, during a 3x spike and a 50%
// capacity drop, each for 10 s: one attempt a call under a throttle
// wastes less of the server during the trigger (attempts served after
// their client gave up) than one attempt alone, in at least 9 seeds of
// 10, and recovers no later in at least 9 (it sheds the calls the server
// could only serve in vain, so its queue drains sooner); the strategy
// under a throttle recovers every time, where the strategy alone
// collapses at least 9 times in 10 during the spike (and at seed 1 during
// the drop, TestACapacityDropCollapsesToo: its run costs seconds under the
// race detector, and it collapsed at each of seeds 1-10 when measured);
// and before the trigger the throttle costs at most 0.5% of the goodput
// (the server accepts every call: nothing is rejected). The spike's runs
// of none and the strategy are shared with the collapse's own controls.
func TestAThrottleShedsWhatTheServerCannotServe(t *testing.T) {
	at, end := 60, 70 // the trigger's seconds
	for _, trigger := range []string{"spike", "drop"} {
		lessWasted, noLater, throttledRecovered, collapsed := 0, 0, 0, 0
		for seed := uint64(1); seed <= 10; seed++ {
			none, throttle := controlRun(t, trigger, seed, CollapseNone), controlRun(t, trigger, seed, CollapseThrottle)
			if sum(throttle.Wasted[at:end]) < sum(none.Wasted[at:end]) {
				lessWasted++
			}
			if throttle.Recovered && none.Recovered && throttle.RecoverySecs <= none.RecoverySecs {
				noLater++
			}
			before, beforeNone := sum(throttle.Goodput[:at]), sum(none.Goodput[:at])
			assert.GreaterOrEqual(t, float64(before), 0.995*float64(beforeNone), "%s, seed %d: the throttle before the trigger", trigger, seed)
			if controlRun(t, trigger, seed, CollapseThrottleStrategy).Recovered {
				throttledRecovered++
			}
			if trigger == "spike" && !controlRun(t, trigger, seed, CollapseStrategy).Recovered {
				collapsed++
			}
		}
		assert.GreaterOrEqual(t, lessWasted, 9, "%s: the throttle wastes less than one attempt alone", trigger)
		assert.GreaterOrEqual(t, noLater, 9, "%s: the throttle recovers no later than one attempt alone", trigger)
		assert.Equal(t, 10, throttledRecovered, "%s: the strategy under a throttle", trigger)
		if trigger == "spike" {
			assert.GreaterOrEqual(t, collapsed, 9, "the strategy alone")
		}
	}
}

// TestAnAbandonedAttemptIsNeverAnAccept: a server that answers every
// attempt a second after its client gave up (a service of 2 s, a timeout
// of 1 s, workers to spare) accepts nothing its clients see, so the
// throttle's requests outnumber twice its accepts (none) as soon as its
// window holds 5 of them, and it rejects nearly every call after: were a
// served attempt counted as an accept whether its client waited or not,
// it would reject none.
func TestAnAbandonedAttemptIsNeverAnAccept(t *testing.T) {
	c := DefaultCollapse()
	c.Workers, c.Service, c.Rate, c.Spike = 1000, 2*time.Second, 80, 1
	c.TriggerAt, c.TriggerFor, c.Duration = 0, time.Second, 30*time.Second
	c, err := c.check()
	require.NoError(t, err)
	compiled, err := retrypolicy.Compile(c.Strategy)
	require.NoError(t, err)
	r, err := c.runPolicy(context.Background(), CollapseThrottle, compiled)
	require.NoError(t, err)
	arrived, rejected := sum(r.Arrivals), sum(r.Throttled)
	require.Positive(t, arrived)
	assert.Zero(t, sum(r.Goodput))
	assert.Greater(t, float64(rejected)/float64(arrived), 0.8, "%d of %d calls rejected", rejected, arrived)
	assert.Equal(t, arrived, rejected+sum(r.Attempts), "a call rejected is not sent; one sent is one attempt")
}

// TestHedgingOnTheBudgetDoesNotCollapse pins the hedging policies'
// controls at the collapse's defaults (hedging in place of retrying, a
// second attempt 150 ms after the first), over seeds 1 to 10 through the
// spike: on the default budget hedging recovers every time, at about 1.01
// attempts a call (a hedge is a token, and a call that ends badly
// deposits none); with no budget it recovers at most once, every call
// sending its two attempts. It does not even wait for the spike: at 0.8 of
// the capacity, the queue's waits past 50 ms now and then send hedges,
// whose work the server does as well, which lengthens the waits; within
// 5 to 20 s the queue is full, so its run is not judged (it collapsed with
// no trigger). About 0.2 s, 3 s under the race detector; the runs of none
// are shared.
func TestHedgingOnTheBudgetDoesNotCollapse(t *testing.T) {
	hedgeRecovered, unbudgetedRecovered := 0, 0
	for seed := uint64(1); seed <= 10; seed++ {
		hedge, unbudgeted := controlRun(t, "spike", seed, CollapseHedge), controlRun(t, "spike", seed, CollapseHedgeUnbudgeted)
		if hedge.Recovered {
			hedgeRecovered++
		}
		if unbudgeted.Recovered {
			unbudgetedRecovered++
		}
		assert.Less(t, hedge.Amplification, 1.1, "seed %d", seed)
		assert.GreaterOrEqual(t, unbudgeted.Amplification, 1.9, "seed %d", seed)
		assert.Equal(t, controlRun(t, "spike", seed, CollapseNone).Arrivals, hedge.Arrivals, "seed %d: the same arrivals", seed)
	}
	assert.Equal(t, 10, hedgeRecovered, "hedging on the default budget")
	assert.LessOrEqual(t, unbudgetedRecovered, 1, "hedging with no budget")
}

// TestAFailedAttemptSendsTheNextHedgeAtOnce: a server of one worker and no
// queue refuses most calls at once; a hedging call refused sends its
// second attempt at once (refused again, mostly), not after the delay, so
// that with no budget nearly every call makes both its attempts; on the
// default budget the hedges are at most the clients' bursts plus a tenth
// of the calls that succeeded (each deposits once, whichever attempt won).
func TestAFailedAttemptSendsTheNextHedgeAtOnce(t *testing.T) {
	c := DefaultCollapse()
	c.Workers, c.Queue, c.Duration = 1, 0, 90*time.Second
	c, err := c.check()
	require.NoError(t, err)
	compiled, err := retrypolicy.Compile(c.Strategy)
	require.NoError(t, err)
	unbudgeted, err := c.runPolicy(context.Background(), CollapseHedgeUnbudgeted, compiled)
	require.NoError(t, err)
	assert.Greater(t, float64(sum(unbudgeted.Attempts)), 1.8*float64(sum(unbudgeted.Arrivals)))
	hedge, err := c.runPolicy(context.Background(), CollapseHedge, compiled)
	require.NoError(t, err)
	assert.LessOrEqual(t, sum(hedge.Retries), 10*c.Clients+sum(hedge.Goodput)/10, "burst + ratio x calls that ended well")
	assert.Equal(t, sum(hedge.Attempts), sum(hedge.Arrivals)+sum(hedge.Retries), "an attempt is a call's first, or a hedge")
}
