package fleet

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/rapidgen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestEveryRetryIsDecideDue pins the outage to the library: each failure's
// decision is the plain Decide's on the job's failures so far, with its
// run's uptime and the job's seed, and the job's next run starts at that
// Due, or under a tick at the first tick at or after it that comes after
// the failure. Every run either fails and is decided, or succeeds.
func TestEveryRetryIsDecideDue(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapidgen.LoopStrategy(t)
		o := Outage{
			Jobs:      rapid.IntRange(1, 40).Draw(t, "jobs"),
			Down:      time.Duration(rapid.Int64Range(1, 7200).Draw(t, "down_secs")) * time.Second,
			FailAfter: time.Duration(rapid.Int64Range(0, 30_000).Draw(t, "fail_after_ms")) * time.Millisecond,
			Spread:    time.Duration(rapid.Int64Range(0, 600).Draw(t, "spread_secs")) * time.Second,
			Capacity:  rapid.IntRange(0, 5).Draw(t, "capacity"),
			Tick:      rapid.SampledFrom([]time.Duration{0, 7 * time.Second, time.Minute}).Draw(t, "tick"),
			Horizon:   6 * time.Hour,
			Seed:      rapid.Uint64().Draw(t, "seed"),
		}
		failures := map[int][]time.Time{}
		nextStart := map[int]time.Time{}
		o.onDecide = func(job int, start, failure time.Time, uptime time.Duration, d retrypolicy.Decision) {
			if want, ok := nextStart[job]; ok && !start.Equal(want) {
				t.Fatalf("job %d: run at %v, its retry was due to start at %v", job, start, want)
			}
			require.True(t, failure.Equal(start.Add(uptime)))
			failures[job] = append(failures[job], failure)
			want, err := retrypolicy.Decide(s, failures[job], uptime, jobSeed(o.Seed, job), failure)
			require.NoError(t, err)
			require.Equal(t, want, d)
			delete(nextStart, job)
			if d.Action != retrypolicy.Fatal {
				at := d.Due
				if o.Tick > 0 {
					at = simStart.Add(d.Due.Sub(simStart).Truncate(o.Tick))
					for at.Before(d.Due) || !at.After(failure) {
						at = at.Add(o.Tick)
					}
				}
				nextStart[job] = at
			}
		}
		r, err := o.Run(context.Background(), s)
		require.NoError(t, err)
		assert.False(t, r.Truncated, "no bound is near")
		assert.Equal(t, r.Runs, r.Decisions+r.Succeeded, "a run fails or succeeds")
		assert.Equal(t, o.Jobs, r.Succeeded+r.Fatal+r.Unfinished)
		total := 0
		for _, n := range r.Load {
			total += n
		}
		assert.Equal(t, r.Runs, total)
	})
}

// TestOneJobThroughAnOutage: a single job with a fixed backoff retries as
// often as the arithmetic says.
func TestOneJobThroughAnOutage(t *testing.T) {
	fixed := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Minute}}
	for _, tc := range []struct {
		name     string
		o        Outage
		runs     int
		recovery time.Duration
	}{
		// Runs at 0, 60 … 1740 s fail; the one at 1800 s finds it up.
		{"every minute", Outage{Jobs: 1}, 31, 0},
		// A run lasts 10 s and its retry is a minute later: runs at 70k s;
		// the 26 up to 1750 s fail, the one at 1820 s succeeds.
		{"runs of 10 s", Outage{Jobs: 1, FailAfter: 10 * time.Second}, 27, 20 * time.Second},
		// Due a minute after each failure, started at the next 45 s tick:
		// runs at 90k s, 20 fail, the one at 1800 s succeeds.
		{"a 45 s tick", Outage{Jobs: 1, Tick: 45 * time.Second}, 21, 0},
		// Due on a tick: the retry starts at that tick, not the next.
		{"a minute's tick", Outage{Jobs: 1, Tick: time.Minute}, 31, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tc.o.Run(context.Background(), fixed)
			require.NoError(t, err)
			assert.Equal(t, tc.runs, r.Runs)
			assert.Equal(t, tc.runs-1, r.Decisions)
			assert.Equal(t, 1, r.Succeeded)
			assert.Equal(t, Percentiles{tc.recovery, tc.recovery, tc.recovery}, r.Recovery)
		})
	}
}

// TestCapacityTurnsRunsAway: 100 jobs retrying every second meet a
// provider that serves 10 runs a second once it is back: 10 succeed in
// each second after it, so recovery takes 0 to 9 s.
func TestCapacityTurnsRunsAway(t *testing.T) {
	s := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Second}}
	r, err := Outage{Jobs: 100, Down: time.Minute, Capacity: 10}.Run(context.Background(), s)
	require.NoError(t, err)
	assert.Equal(t, 100, r.Succeeded)
	assert.Equal(t, Percentiles{P50: 4 * time.Second, P99: 9 * time.Second, Max: 9 * time.Second}, r.Recovery)
	// 60 failing runs each before it is back, then 100 + 90 + … + 10 runs.
	assert.Equal(t, 100*60+550, r.Runs)
}

// TestOutageIsDeterministic: the same seed gives the same results; another
// seed, other jitter and other first runs.
func TestOutageIsDeterministic(t *testing.T) {
	s := parse(t, ampJitter)
	o := Outage{Jobs: 500, Spread: 5 * time.Minute, Tick: 0, Seed: 7}
	a, err := o.Run(context.Background(), s)
	require.NoError(t, err)
	b, err := o.Run(context.Background(), s)
	require.NoError(t, err)
	assert.True(t, reflect.DeepEqual(a, b), "one seed, one result")
	o.Seed = 8
	c, err := o.Run(context.Background(), s)
	require.NoError(t, err)
	assert.False(t, reflect.DeepEqual(a.Load, c.Load), "another seed spreads the jobs otherwise")
	assert.NotEqual(t, a.Recovery, c.Recovery)
}

func TestOutageRefusesWhatCannotRun(t *testing.T) {
	for _, o := range []Outage{{Jobs: -1}, {Jobs: 2_000_000}, {Down: -time.Second}, {Capacity: -1}, {Horizon: 31 * 24 * time.Hour}} {
		_, err := o.Run(context.Background(), retrypolicy.Default())
		assert.Error(t, err, "%+v", o)
	}
	_, err := Outage{}.Run(context.Background(), retrypolicy.Strategy{Kind: retrypolicy.Bounded})
	assert.ErrorIs(t, err, retrypolicy.ErrInvalid)
}

func TestPercentilesAreNearestRank(t *testing.T) {
	ds := make([]time.Duration, 200)
	for i := range ds {
		ds[i] = time.Duration(200-i) * time.Second // 1 … 200 s, shuffled by reversal
	}
	assert.Equal(t, Percentiles{P50: 100 * time.Second, P99: 198 * time.Second, Max: 200 * time.Second}, percentiles(ds))
	assert.Equal(t, Percentiles{}, percentiles(nil))
}

// TestContentionOrderingsAreTheBlogs: over 100 runs of 100 clients, as the
// blog states: no backoff makes the most calls; full jitter makes fewer
// than half of exponential's; exponential without jitter is the slowest.
func TestContentionOrderingsAreTheBlogs(t *testing.T) {
	results := map[string]ContentionResult{}
	for _, who := range PublishedContenders() {
		r, err := Contention{Clients: 100, Runs: 100, Seed: 1}.Run(context.Background(), who)
		require.NoError(t, err)
		assert.Zero(t, r.GaveUp)
		results[who.Name] = r
	}
	none, exp, full, ours := results["none"], results["exponential"], results["full_jitter"], results["exponential_with_jitter"]
	for _, other := range []ContentionResult{exp, full, ours} {
		assert.Greater(t, none.Calls, other.Calls, "no backoff makes the most calls")
		if other.Name != "exponential" {
			assert.Greater(t, exp.CompletionMs, other.CompletionMs, "exponential is the slowest")
		}
	}
	assert.Greater(t, exp.CompletionMs, none.CompletionMs, "exponential is the slowest")
	assert.Less(t, full.Calls, exp.Calls/2, "full jitter halves exponential's calls")
	// A client reads and writes at least once: 4 messages of about 10 ms.
	assert.GreaterOrEqual(t, full.Calls, 100.0)
}

// TestContentionIsDeterministic: one seed, one result; a strategy that
// gives up leaves clients without a write.
func TestContentionIsDeterministic(t *testing.T) {
	who := PublishedContenders()[3]
	a, err := Contention{Clients: 20, Runs: 5, Seed: 3}.Run(context.Background(), who)
	require.NoError(t, err)
	b, err := Contention{Clients: 20, Runs: 5, Seed: 3}.Run(context.Background(), who)
	require.NoError(t, err)
	assert.Equal(t, a, b)
	c, err := Contention{Clients: 20, Runs: 5, Seed: 4}.Run(context.Background(), who)
	require.NoError(t, err)
	assert.NotEqual(t, a, c)

	once := Contender{Name: "once", Strategy: retrypolicy.Strategy{Kind: retrypolicy.None}}
	r, err := Contention{Clients: 20, Runs: 5}.Run(context.Background(), once)
	require.NoError(t, err)
	assert.Positive(t, r.GaveUp, "with none, every client that loses a race gives up")
	assert.Less(t, r.GaveUp, 20.0, "the first write wins")
	assert.Equal(t, 20.0, r.Calls, "a write each")

	_, err = Contention{Clients: -1}.Run(context.Background(), who)
	assert.Error(t, err)
	assert.True(t, slices.ContainsFunc(PublishedContenders(), func(c Contender) bool { return c.NoWait }))
}

// TestContentionOfCenturies: waits past what a History holds end the
// client's tries instead of overflowing the clock.
func TestContentionOfCenturies(t *testing.T) {
	s := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 100 * 365 * 24 * time.Hour}}
	r, err := Contention{Clients: 10, Runs: 2}.Run(context.Background(), Contender{Name: "centuries", Strategy: s})
	require.NoError(t, err)
	assert.Positive(t, r.GaveUp)
	assert.Less(t, r.GaveUp, 10.0, "the first writer wins")
}

// zeroDelay owes 1 s after the first failure and 0 ns after every later
// one: 1e-300 floors every step past the first to nothing.
var zeroDelay = retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{
	Kind: retrypolicy.Exponential, BaseDelay: time.Second, Multiplier: 1e-300}}

// TestZeroDelayWaitsATickUnderAController pins docs/semantics.md, section 5: a job
// that fails on a tick is seen at the next one, so a delay of 0 ns under a
// one-minute tick retries once a minute. Worked by hand: runs at 0, 1m, …,
// 29m fail (30 decisions), the run at 30m finds the provider back.
func TestZeroDelayWaitsATickUnderAController(t *testing.T) {
	r, err := Outage{Jobs: 1, Tick: time.Minute}.Run(context.Background(), zeroDelay)
	require.NoError(t, err)
	assert.False(t, r.Truncated)
	assert.Equal(t, 31, r.Runs)
	assert.Equal(t, 30, r.Decisions)
	assert.Equal(t, 1, r.Succeeded)
	assert.Equal(t, Percentiles{}, r.Recovery, "it succeeds as the provider comes back")
}

// TestZeroDelayWithoutATickStopsAtTheJobBound: in the in-process loop a
// delay of 0 ns retries at the failure's own instant forever; the job's
// History reaching MaxJobFailures stops the simulation, which says so.
func TestZeroDelayWithoutATickStopsAtTheJobBound(t *testing.T) {
	r, err := Outage{Jobs: 1}.Run(context.Background(), zeroDelay)
	require.NoError(t, err)
	assert.True(t, r.Truncated)
	assert.Equal(t, MaxJobFailures, r.Decisions, "the job's failures, all in its window")
	assert.Equal(t, MaxJobFailures, r.Runs)
	assert.Equal(t, 1, r.Unfinished)

	r, err = Outage{Jobs: 3}.Run(context.Background(), zeroDelay)
	require.NoError(t, err)
	assert.True(t, r.Truncated)
	assert.LessOrEqual(t, r.Decisions, 3*MaxJobFailures, "no job passes the bound")
	assert.GreaterOrEqual(t, r.Decisions, MaxJobFailures)
}

// TestOutageStopsAtMaxRuns: the runs followed never pass MaxRuns, and a
// run cut there says so.
func TestOutageStopsAtMaxRuns(t *testing.T) {
	fixed := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Second}}
	r, err := Outage{Jobs: 10, MaxRuns: 25}.Run(context.Background(), fixed)
	require.NoError(t, err)
	assert.True(t, r.Truncated)
	assert.Equal(t, 25, r.Runs)
	assert.Equal(t, 10, r.Unfinished)

	whole, err := Outage{Jobs: 1, Down: time.Minute}.Run(context.Background(), fixed)
	require.NoError(t, err)
	assert.False(t, whole.Truncated, "61 runs: far from the default bound")
	assert.Equal(t, 61, whole.Runs, "a run a second through a minute's outage, and the one that succeeds")

	for _, bad := range []int{-1, 1_000_000_001} {
		_, err := Outage{MaxRuns: bad}.Run(context.Background(), fixed)
		assert.Error(t, err, "MaxRuns %d", bad)
	}
}

// TestSimulationsStopWhenTheContextIsDone: a done context stops a
// simulation at once, with the figures so far and an error that wraps the
// context's.
func TestSimulationsStopWhenTheContextIsDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := Outage{Jobs: 100}.Run(ctx, retrypolicy.Default())
	assert.ErrorIs(t, err, context.Canceled)
	assert.True(t, r.Truncated)
	assert.Zero(t, r.Runs)

	c, err := Contention{Clients: 50, Runs: 10}.Run(ctx, PublishedContenders()[1])
	assert.ErrorIs(t, err, context.Canceled)
	assert.True(t, c.Truncated)
	assert.Equal(t, 1, c.Runs, "the run cut short")

}

// TestContentionStopsAtMaxMessages: the messages followed never pass
// MaxMessages; the means are over the runs begun.
func TestContentionStopsAtMaxMessages(t *testing.T) {
	who := PublishedContenders()[0] // no wait: each run ends once every client has written
	c := Contention{Clients: 5, Runs: 1}
	whole, err := c.Run(context.Background(), who)
	require.NoError(t, err)
	require.False(t, whole.Truncated)
	// The fewest messages that let the run finish: a run needs at least 4
	// messages a client, and each is followed once.
	need := 0
	for m := 20; m < 10_000 && need == 0; m++ {
		c.MaxMessages = m
		r, err := c.Run(context.Background(), who)
		require.NoError(t, err)
		if !r.Truncated {
			need = m
			assert.Equal(t, whole, r, "a bound that is not reached changes nothing")
		}
	}
	require.Positive(t, need)

	r, err := Contention{Clients: 5, Runs: 3, MaxMessages: need + 10}.Run(context.Background(), who)
	require.NoError(t, err)
	assert.True(t, r.Truncated)
	assert.Equal(t, 2, r.Runs, "the whole first run, and the second cut after 10 of its 20 or more")

	r, err = Contention{Clients: 5, Runs: 3, MaxMessages: need}.Run(context.Background(), who)
	require.NoError(t, err)
	assert.True(t, r.Truncated)
	assert.Equal(t, 1, r.Runs, "the bound ends with the first run: the second never starts")
	assert.Equal(t, whole.Calls, r.Calls)

	_, err = Contention{MaxMessages: -1}.Run(context.Background(), who)
	assert.Error(t, err)
}

// parse reads a descriptor that the test knows to be valid.
func parse(t require.TestingT, doc string) retrypolicy.Strategy {
	s, err := retrypolicy.Parse([]byte(doc))
	require.NoError(t, err, doc)
	return s
}

// ampJitter is Amp's jitter example.
const ampJitter = `{"strategy":"unless_stopped","backoff":{"kind":"exponential_with_jitter","base_delay_secs":2,"max_delay_secs":300}}`
