package fleet

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/attemptlog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

var everySecond = retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Second}}

// runReplaying runs a replay of log under s and returns it, to look inside.
func runReplaying(t *testing.T, r Replay, log *Log, s retrypolicy.Strategy) (*replaying, ReplayResult) {
	t.Helper()
	if r.MaxAttempts == 0 {
		r.MaxAttempts = DefaultMaxReplayed
	}
	p, err := retrypolicy.Compile(s)
	require.NoError(t, err)
	rp := newReplaying(r, log, p)
	bound, err := rp.eng.run(context.Background(), rp.end-1, rp.step)
	require.NoError(t, err)
	return rp, rp.result(bound)
}

// replayMemoryBound is the package doc's bound on what a replay holds
// beside its Log: ReplayJobBytes for each job of the log, twice (slices
// grow by doubling) 8 bytes a failure held and 32 an event waiting at
// once, the Load's buckets, and 64 KiB of fixed cost.
func replayMemoryBound(rp *replaying) int64 {
	return ReplayJobBytes*int64(len(rp.log.jobs)) + 2*(8*int64(rp.eng.peakHeld)+32*int64(rp.eng.peakPending)) +
		2*8*MaxLoadBuckets + 64<<10
}

// TestAReplayHoldsWhatItsLogAsks (N1): a two-line log whose dependency is
// down from 1970 to 2262, replayed under a retry every second, holds the
// same few KiB at 100,000 attempts and at a million: what a replay keeps
// grows with the log's jobs and the attempts waiting at once, never with
// the attempts it makes or the minutes they span.
func TestAReplayHoldsWhatItsLogAsks(t *testing.T) {
	log, err := NewLog([]attemptlog.Attempt{
		{Job: "a", Start: attemptlog.First, End: attemptlog.First},
		{Job: "b", Start: time.Date(2262, 4, 10, 0, 0, 0, 0, time.UTC), End: time.Date(2262, 4, 10, 0, 0, 0, 0, time.UTC), Succeeded: true},
	})
	require.NoError(t, err)
	var held []int64
	for _, attempts := range []int{100_000, 1_000_000} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		rp, res := runReplaying(t, Replay{MaxAttempts: attempts}, log, everySecond)
		runtime.GC()
		runtime.ReadMemStats(&after)
		assert.Equal(t, BoundMaxRuns, res.TruncatedBy)
		assert.Equal(t, attempts+1, res.Attempts, "the replayed ones and b's recorded one")
		assert.Equal(t, attempts, res.Replayed, "MaxAttempts bounds the replayed ones")
		assert.LessOrEqual(t, len(res.Load.Busiest), MaxLoadBuckets)
		h := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		assert.Less(t, h, replayMemoryBound(rp), "heap held %d bytes", h)
		held = append(held, h)
		runtime.KeepAlive(rp)
	}
	assert.Less(t, held[1], held[0]+256<<10, "ten times the attempts, the same memory")
}

// TestJobsArriveOneAtATime (N3): 10,000 jobs that each fail once, a
// minute apart, wait one at a time, not all at once, so a log of millions
// of failing jobs replays them all; every one is replayed and ends.
func TestJobsArriveOneAtATime(t *testing.T) {
	var attempts []attemptlog.Attempt
	t0 := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	for i := range 10_000 {
		at := t0.Add(time.Duration(i) * time.Minute)
		attempts = append(attempts, attemptlog.Attempt{Job: "job-" + string(rune('a'+i%26)) + time.Duration(i).String(), Start: at, End: at})
	}
	log, err := NewLog(attempts)
	require.NoError(t, err)
	rp, res := runReplaying(t, Replay{}, log, retrypolicy.Strategy{Kind: retrypolicy.None})
	assert.Equal(t, 10_000, res.Fatal)
	assert.Zero(t, res.Unfinished)
	assert.False(t, res.Truncated)
	assert.Equal(t, 1, rp.eng.peakPending, "the next arrival alone waits")
	assert.GreaterOrEqual(t, rp.eng.maxPending, MaxPendingEvents, "room for every job of a larger log")
}

// TestNothingPilesUpAtTheEndOfTheRange (N4): a job that fails in the last
// minute the log format holds is retried every second until that end and
// then left unfinished: no attempt at or past the range's last instant,
// and none twice at one instant.
func TestNothingPilesUpAtTheEndOfTheRange(t *testing.T) {
	at := attemptlog.Last.Add(-10 * time.Second).Truncate(time.Second)
	log, err := NewLog([]attemptlog.Attempt{{Job: "a", Start: at, End: at}})
	require.NoError(t, err)
	p, err := retrypolicy.Compile(everySecond)
	require.NoError(t, err)
	rp := newReplaying(Replay{MaxAttempts: DefaultMaxReplayed}, log, p)
	var starts []time.Duration
	bound, err := rp.eng.run(context.Background(), rp.end-1, func(at time.Duration, ev int32) {
		starts = append(starts, at)
		rp.step(at, ev)
	})
	require.NoError(t, err)
	res := rp.result(bound)
	assert.False(t, res.Truncated)
	assert.Equal(t, 1, res.Unfinished)
	// at, at+1s, …, at+10s: the last before 23:47:16.854775807.
	require.Len(t, starts, 11)
	for i := 1; i < len(starts); i++ {
		assert.Equal(t, time.Second, starts[i]-starts[i-1], "attempt %d", i)
	}
	assert.Less(t, starts[10], attemptlog.Last.Sub(attemptlog.First))
}

// TestReplayBounds: whatever the log (spans to the ends of the range,
// many jobs, a flapping dependency) and the strategy, a replay makes at
// most MaxAttempts attempts, none at or past its horizon, keeps at most
// MaxLoadBuckets buckets, and waits on at most one event a job.
func TestReplayBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 60).Draw(t, "lines")
		span := rapid.SampledFrom([]time.Duration{time.Minute, 24 * time.Hour, attemptlog.Last.Sub(attemptlog.First)}).Draw(t, "span")
		var attempts []attemptlog.Attempt
		for range n {
			start := attemptlog.First.Add(time.Duration(rapid.Int64Range(0, int64(span)).Draw(t, "start")))
			end := start.Add(time.Duration(rapid.Int64Range(0, int64(attemptlog.Last.Sub(start))).Draw(t, "length") / int64(rapid.IntRange(1, 1<<20).Draw(t, "shrink"))))
			attempts = append(attempts, attemptlog.Attempt{Job: string(rune('a' + rapid.IntRange(0, 7).Draw(t, "job"))),
				Start: start, End: end, Succeeded: rapid.Bool().Draw(t, "ok")})
		}
		log, err := NewLog(attempts)
		require.NoError(t, err)
		s := rapid.SampledFrom([]retrypolicy.Strategy{everySecond, retrypolicy.Default(),
			{Kind: retrypolicy.Bounded, MaxAttempts: 5}, {Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 1}}}).Draw(t, "strategy")
		r := Replay{MaxAttempts: rapid.IntRange(1, 20_000).Draw(t, "max attempts"), Tick: rapid.SampledFrom([]time.Duration{0, time.Minute}).Draw(t, "tick")}
		p, err := retrypolicy.Compile(s)
		require.NoError(t, err)
		rp := newReplaying(r, log, p)
		var last time.Duration
		bound, err := rp.eng.run(context.Background(), rp.end-1, func(at time.Duration, ev int32) {
			last = at
			rp.step(at, ev)
		})
		require.NoError(t, err)
		res := rp.result(bound)
		_, replayed := log.Jobs()
		assert.LessOrEqual(t, res.Attempts-log.asRecorded.attempts, r.MaxAttempts)
		assert.Less(t, last, rp.end, "an attempt at or past the horizon")
		assert.LessOrEqual(t, len(res.Load.Busiest), MaxLoadBuckets)
		assert.LessOrEqual(t, rp.eng.peakPending, replayed+1)
		assert.Equal(t, replayed, res.Fatal+res.Unfinished+res.Completed-len(log.asRecorded.completions))
	})
}

// TestAServersReplayHoldsUnder100MB (N2): the worst log a server's body of
// 1 MiB holds (every line a job of its own, failing at one instant),
// replayed as /v1/replay does (one candidate at a time, at most the
// server's 2,000,000 attempts) under a retry every second with no tick,
// holds its Log and one replay, together under 100 MB.
func TestAServersReplayHoldsUnder100MB(t *testing.T) {
	if testing.Short() {
		t.Skip("replays 2,000,000 attempts")
	}
	var body []byte
	for i := 0; len(body) < 1<<20-200; i++ {
		body = fmt.Appendf(body, `{"job":"%d","started_at":"2026-11-02T15:00:00Z","ended_at":"2026-11-02T15:00:00Z","outcome":"failed"}`+"\n", i)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	log, err := ReadLog(bytes.NewReader(body))
	require.NoError(t, err)
	rp, res := runReplaying(t, Replay{MaxAttempts: 2_000_000}, log, everySecond)
	runtime.GC()
	runtime.ReadMemStats(&after)
	jobs, _ := log.Jobs()
	assert.Greater(t, jobs, 9_000)
	assert.Equal(t, BoundMaxRuns, res.TruncatedBy)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d jobs, %d failures held at the end: %d MB", jobs, rp.eng.held, held>>20)
	assert.Less(t, held, int64(100<<20))
	runtime.KeepAlive(rp)
	runtime.KeepAlive(log)
}
