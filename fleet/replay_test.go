package fleet

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/retrypolicy/retrypolicy/attemptlog"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/rapidgen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// logOf runs o under s, and returns its result and the log it writes.
func logOf(t *testing.T, o Outage, s retrypolicy.Strategy) (OutageResult, *Log) {
	t.Helper()
	var attempts []attemptlog.Attempt
	o.Log = func(a attemptlog.Attempt) { attempts = append(attempts, a) }
	res, err := o.Run(context.Background(), s)
	require.NoError(t, err)
	log, err := NewLog(attempts)
	require.NoError(t, err)
	return res, log
}

func mustParse(t *testing.T, doc string) retrypolicy.Strategy {
	t.Helper()
	s, err := retrypolicy.Parse([]byte(doc))
	require.NoError(t, err)
	return s
}

// TestReplayOfTheSimulationThatMadeTheLog: an outage run of S under a
// minute's tick, every job ending well inside both horizons, written as a
// log and replayed under S, gives exactly the simulation's completed, fatal
// and attempt counts: the replay starts each job when the simulation did,
// and every replayed attempt starts when a recorded one did, seeing what it
// saw.
func TestReplayOfTheSimulationThatMadeTheLog(t *testing.T) {
	for _, doc := range []string{
		`{"strategy":"unless_stopped","backoff":{"kind":"fixed","base_delay_secs":90}}`,
		`null`, // exponential to an hour
		`{"strategy":"unless_stopped","backoff":{"kind":"exponential_with_jitter","base_delay_secs":2,"max_delay_secs":300}}`,
		`{"strategy":"bounded","max_attempts":5,"window_secs":86400,"backoff":{"kind":"exponential","base_delay_secs":1,"max_delay_secs":600}}`,
	} {
		t.Run(doc, func(t *testing.T) {
			s := mustParse(t, doc)
			o := Outage{Jobs: 300, Down: 20 * time.Minute, FailAfter: 5 * time.Second, Spread: 10 * time.Minute, Tick: time.Minute, Seed: 7}
			sim, log := logOf(t, o, s)
			require.Zero(t, sim.Unfinished)
			got, err := Replay{Tick: time.Minute}.Run(context.Background(), log, s)
			require.NoError(t, err)
			assert.Equal(t, sim.Succeeded, got.Completed, "completed")
			assert.Equal(t, sim.Fatal, got.Fatal, "fatal")
			assert.Equal(t, sim.Runs, got.Attempts, "attempts")
			assert.Zero(t, got.Unfinished)
			assert.Equal(t, log.Recorded().Attempts, got.Attempts, "the same attempts as recorded")
			assert.False(t, got.Truncated)
		})
	}
}

// TestReplayUnderAnotherStrategyIsCloseToItsSimulation: a log of one
// strategy replayed under another comes within 2% of the other's own
// simulation on the same outage, in completed, fatal and attempts. It
// differs where the log cannot tell: between the last failure it records
// and the first success, the dependency counts as down.
func TestReplayUnderAnotherStrategyIsCloseToItsSimulation(t *testing.T) {
	o := Outage{Jobs: 1000, Down: 30 * time.Minute, FailAfter: 2 * time.Second, Spread: 5 * time.Minute, Tick: time.Minute, Seed: 3}
	strategies := []string{
		`null`,
		`{"strategy":"unless_stopped","backoff":{"kind":"exponential_with_jitter","base_delay_secs":2,"max_delay_secs":300}}`,
		`{"strategy":"bounded","max_attempts":5,"window_secs":86400,"backoff":{"kind":"exponential","base_delay_secs":1,"max_delay_secs":600}}`,
		`{"strategy":"unless_stopped","backoff":{"kind":"fixed","base_delay_secs":60}}`,
	}
	for i, made := range strategies {
		if i == 2 {
			continue // bounded gives up on every job: its log never sees the recovery, and a replay of it none
		}
		_, log := logOf(t, o, mustParse(t, made))
		for _, doc := range strategies {
			if doc == made {
				continue
			}
			closeToItsSimulation(t, o, log, made, doc)
		}
	}
}

// closeToItsSimulation checks that log, made by the strategy made on o,
// replays under doc within 2% of doc's own simulation.
func closeToItsSimulation(t *testing.T, o Outage, log *Log, made, doc string) {
	t.Helper()
	{
		s2 := mustParse(t, doc)
		sim, err := o.Run(context.Background(), s2)
		require.NoError(t, err)
		got, err := Replay{Tick: time.Minute}.Run(context.Background(), log, s2)
		require.NoError(t, err)
		for name, pair := range map[string][2]int{"completed": {sim.Succeeded, got.Completed}, "fatal": {sim.Fatal, got.Fatal}, "attempts": {sim.Runs, got.Attempts}} {
			assert.InDelta(t, pair[0], pair[1], 0.02*float64(pair[0])+0.5, "%s: %s: simulated %d, replayed %d", doc, name, pair[0], pair[1])
		}
		t.Logf("a log of %s replayed under %s: simulated %d runs, %d fatal; replayed %d attempts, %d fatal", made, doc, sim.Runs, sim.Fatal, got.Attempts, got.Fatal)
	}
}

// attempt is a line of a hand-written log: seconds from base.
func attempt(job string, start, end float64, ok bool) attemptlog.Attempt {
	base := time.Date(2026, 3, 3, 10, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return base.Add(time.Duration(s * float64(time.Second))) }
	return attemptlog.Attempt{Job: job, Start: at(start), End: at(end), Succeeded: ok}
}

// TestReplayWorkedByHand: the rules of section 6 on a log small enough to
// follow. The dependency is observed down at 0 and 100 s and up from
// 200 s, so it is down until 200 s and recovers then.
func TestReplayWorkedByHand(t *testing.T) {
	log, err := NewLog([]attemptlog.Attempt{
		attempt("a", 0, 2, false), attempt("a", 100, 104, false), attempt("a", 200, 201, true),
		attempt("b", 300, 310, true),                                // never failed: completes as recorded
		attempt("c", 100, 100, false), attempt("c", 100, 100, true), // one instant, both: down
	})
	require.NoError(t, err)
	rec := log.Recorded()
	assert.Equal(t, ReplayResult{Jobs: 3, Completed: 3, Attempts: 6, AttemptsDown: 4, PeakPerMin: 3,
		Recovery: Percentiles{P50: time.Second, P99: 110 * time.Second, Max: 110 * time.Second}, Recovered: 2,
		Load: Load{From: time.Date(2026, 3, 3, 10, 0, 0, 0, time.UTC), Width: time.Minute, Busiest: []int{1, 3, 0, 1, 0, 1}}}, rec,
		"c's success at 100 s is a down start; a completes at 201 s, b at 310 s, c at 100 s (before the recovery)")
	assert.Equal(t, []Stretch{{time.Date(2026, 3, 3, 10, 0, 0, 0, time.UTC), time.Date(2026, 3, 3, 10, 3, 20, 0, time.UTC)}}, log.Down())

	// Under none every replayed job fails once and is fatal; b completes.
	got, err := Replay{}.Run(context.Background(), log, retrypolicy.Strategy{Kind: retrypolicy.None})
	require.NoError(t, err)
	assert.Equal(t, 2, got.Fatal)
	assert.Equal(t, 2, got.FatalCompletedInReality)
	assert.Equal(t, 1, got.Completed)
	assert.Equal(t, 3, got.Attempts, "a's and c's one attempt, and b's recorded one")

	// Fixed 60 s with no tick. a's median failed attempt (of 2 and 4 s) is
	// the lower middle, 2 s: it fails at 2 s, runs again at 62, 124 and
	// 186 s (down: the last observation then is 100 s's) and at 248 s (up),
	// done 1 s later (its median success). c fails at once (0 s), at 100 and
	// 160 s, and succeeds at 220 s.
	fixed := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Minute}}
	got, err = Replay{}.Run(context.Background(), log, fixed)
	require.NoError(t, err)
	assert.Equal(t, 3, got.Completed)
	assert.Zero(t, got.Fatal)
	assert.Equal(t, 9, got.Attempts, "a's 5, c's 3, b's recorded 1")
	assert.Equal(t, 6, got.AttemptsDown)
	assert.Equal(t, 2, got.PeakPerMin, "a at 62 s and c at 100 s in 10:01; a at 124 s, c at 160 s in 10:02")
	// Completions 249 s (a), 220 s (c) and 310 s (b), from the recovery at 200 s.
	assert.Equal(t, Percentiles{P50: 49 * time.Second, P99: 110 * time.Second, Max: 110 * time.Second}, got.Recovery)
	assert.Equal(t, 3, got.Recovered)
}

// TestReplayTicksFromTheEpoch: under a tick a retry runs at the first
// multiple of it since the Unix epoch at or after its due time, not a
// multiple from the job's first attempt.
func TestReplayTicksFromTheEpoch(t *testing.T) {
	log, err := NewLog([]attemptlog.Attempt{attempt("a", 50, 50, false), attempt("b", 150, 150, true)})
	require.NoError(t, err)
	fixed := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3, Window: time.Hour, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Second}}
	got, err := Replay{Tick: time.Minute}.Run(context.Background(), log, fixed)
	require.NoError(t, err)
	// a fails at 10:00:50, is due a second later and runs at the ticks of
	// 10:01:00 and 10:02:00, down both times (the dependency is up from
	// 10:02:30): fatal at its third failure. Ticks counted from a's first
	// attempt would have run it at 10:01:50 (down) and 10:02:50 (up).
	assert.Equal(t, 1, got.Fatal)
	assert.Equal(t, 1, got.Completed, "b alone completes")
	assert.Equal(t, 4, got.Attempts, "a's 3 and b's recorded one")
	assert.Equal(t, 3, got.AttemptsDown)
	assert.Equal(t, Load{From: time.Date(2026, 3, 3, 10, 0, 0, 0, time.UTC), Width: time.Minute, Busiest: []int{1, 1, 2}},
		got.Load, "a at 10:00:50, 10:01:00 and 10:02:00; b at 10:02:30")
	// With no tick the three come a second apart, in one minute.
	due, err := Replay{}.Run(context.Background(), log, fixed)
	require.NoError(t, err)
	assert.Equal(t, 3, due.PeakPerMin)
}

// TestReplayStopsAtTheHorizon: an attempt that would start more than a
// day after the log's last observation is not made, and its job is
// unfinished. A log that saw the dependency down once, at 10:00:00,
// replayed under an hourly retry for ever: attempts on every hour of the
// day after it, 24 in all; the one that would start at the horizon itself,
// 24 hours after, is not made.
func TestReplayStopsAtTheHorizon(t *testing.T) {
	log, err := NewLog([]attemptlog.Attempt{attempt("a", 0, 0, false)})
	require.NoError(t, err)
	hourly := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Hour}}
	got, err := Replay{}.Run(context.Background(), log, hourly)
	require.NoError(t, err)
	assert.Equal(t, 24, got.Attempts)
	assert.Equal(t, 1, got.Unfinished)
	assert.False(t, got.Truncated, "the horizon is the replay's end, not a bound")
}

// TestTheFirstLineGivesTheSeed: a job's jitter seed is its first line's
// by start, and the name's hash when that line has none, whatever later
// lines say.
func TestTheFirstLineGivesTheSeed(t *testing.T) {
	first, later := attempt("a", 0, 0, false), attempt("a", 10, 10, false)
	later.Seed, later.HasSeed = 7, true
	log, err := NewLog([]attemptlog.Attempt{later, first})
	require.NoError(t, err)
	assert.Equal(t, retrypolicy.SeedFromString("a"), log.jobs[0].seed)
	first.Seed, first.HasSeed = 9, true
	log, err = NewLog([]attemptlog.Attempt{later, first})
	require.NoError(t, err)
	assert.Equal(t, uint64(9), log.jobs[0].seed)
}

// TestReplayProperties: a replay is deterministic; under none each
// replayed job makes one attempt; under unless_stopped no job is fatal;
// the attempts never pass MaxAttempts.
func TestReplayProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var attempts []attemptlog.Attempt
		base := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
		n := rapid.IntRange(1, 60).Draw(t, "attempts")
		for i := range n {
			start := time.Duration(rapid.Int64Range(0, int64(2*time.Hour)).Draw(t, fmt.Sprint("start", i)))
			dur := time.Duration(rapid.Int64Range(0, int64(time.Minute)).Draw(t, fmt.Sprint("dur", i)))
			attempts = append(attempts, attemptlog.Attempt{Job: fmt.Sprint("j", rapid.IntRange(0, 9).Draw(t, fmt.Sprint("job", i))),
				Start: base.Add(start), End: base.Add(start + dur), Succeeded: rapid.Bool().Draw(t, fmt.Sprint("ok", i))})
		}
		log, err := NewLog(attempts)
		require.NoError(t, err)
		s := rapidgen.LoopStrategy(t)
		r := Replay{Tick: time.Duration(rapid.SampledFrom([]int64{0, 1, 60}).Draw(t, "tick")) * time.Second, MaxAttempts: rapid.IntRange(1, 5000).Draw(t, "max")}
		a, errA := r.Run(context.Background(), log, s)
		b, errB := r.Run(context.Background(), log, s)
		require.Equal(t, errA, errB)
		assert.Equal(t, a, b, "deterministic")
		all, replayed := log.Jobs()
		assert.Equal(t, all, a.Jobs)
		assert.LessOrEqual(t, a.Attempts-log.asRecorded.attempts, r.MaxAttempts)
		assert.Equal(t, all, a.Completed+a.Fatal+a.Unfinished)
		none, err := Replay{}.Run(context.Background(), log, retrypolicy.Strategy{Kind: retrypolicy.None})
		require.NoError(t, err)
		assert.Equal(t, replayed, none.Attempts-log.asRecorded.attempts, "one attempt a replayed job under none")
		forever, err := r.Run(context.Background(), log, retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped})
		require.NoError(t, err)
		assert.Zero(t, forever.Fatal, "unless_stopped gives up on nothing")
	})
}

// TestReadLog: the format, and every bad line named by its number and
// field, with nothing read.
func TestReadLog(t *testing.T) {
	good := `{"job":"a","started_at":"2026-03-03T10:00:00Z","ended_at":"2026-03-03T10:00:02Z","outcome":"failed","jitter_seed":"a-1","extra":[1]}
{"job":"a","started_at":"2026-03-03T10:01:00Z","ended_at":"2026-03-03T10:01:00Z","outcome":"succeeded"}

{"job":"b","started_at":"2026-03-03T10:00:30.5+01:00","ended_at":"2026-03-03T10:00:31Z","outcome":"failed","jitter_seed":18446744073709551615}
`
	log, err := ReadLog(strings.NewReader(good))
	require.NoError(t, err)
	assert.Equal(t, retrypolicy.SeedFromString("a-1"), log.jobs[0].seed)
	assert.Equal(t, uint64(math.MaxUint64), log.jobs[1].seed)
	assert.Equal(t, 3, log.Recorded().Attempts)
	for text, want := range map[string]string{
		`{"job":"a","started_at":"2026-03-03T10:00:00Z","ended_at":"2026-03-03T10:00:02Z"}`:                                     "line 1: outcome: missing",
		`{"started_at":"2026-03-03T10:00:00Z","ended_at":"2026-03-03T10:00:02Z","outcome":"failed"}`:                            "line 1: job: missing",
		`{"job":"a","started_at":"yesterday","ended_at":"2026-03-03T10:00:02Z","outcome":"failed"}`:                             `line 1: started_at: must be an RFC 3339 time, got "yesterday"`,
		`{"job":"a","started_at":"2026-03-03T10:00:03Z","ended_at":"2026-03-03T10:00:02Z","outcome":"failed"}`:                  "line 1: ended_at: must not be before started_at",
		`{"job":"a","started_at":"2026-03-03T10:00:00Z","ended_at":"2026-03-03T10:00:02Z","outcome":"crashed"}`:                 `line 1: outcome: must be succeeded or failed, got "crashed"`,
		`{"job":"a","started_at":"1969-12-31T23:59:59Z","ended_at":"2026-03-03T10:00:02Z","outcome":"failed"}`:                  "line 1: started_at: must be from 1970 to 2262, got 1969-12-31T23:59:59Z",
		`{"job":"a","started_at":"2026-03-03T10:00:00Z","ended_at":"2026-03-03T10:00:02Z","outcome":"failed","jitter_seed":-1}`: `line 1: jitter_seed: must be a string or an unsigned integer, got "-1"`,
		`[1, 2]`: "line 1: not a JSON object",
		`{"job":5,"started_at":"2026-03-03T10:00:00Z","ended_at":"2026-03-03T10:00:02Z","outcome":"failed"}`:     "line 1: job: must be a string",
		`{"job":"a","started_at":"2026-03-03T10:00:00Z","ended_at":"2026-03-03T10:00:02Z","outcome":"failed"} x`: "line 1: not a JSON object",
		`{"job":"a","started_at":"2026-03-03T10:00:00Z",`:                                                        "line 1: not a JSON object",
	} {
		_, err := ReadLog(strings.NewReader(good + text + "\n"))
		require.Error(t, err, text)
		want = strings.Replace(want, "line 1", "line 5", 1)
		assert.Contains(t, err.Error(), want)
	}
}

// TestReadLogRefusesALongLine: a line over MaxLogLine is an error, read
// no further than the bound.
func TestReadLogRefusesALongLine(t *testing.T) {
	r := &endless{}
	_, err := ReadLog(r)
	require.ErrorContains(t, err, "line 1: longer than 1048576 bytes")
	assert.Less(t, r.read, 3*MaxLogLine, "read no more than a few buffers")
}

// endless is a reader of one line that never ends.
type endless struct{ read int }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.read += len(p)
	return len(p), nil
}

// TestAppendLineIsReadBack: a line AppendLine writes, ReadLog reads as
// the same attempt, whatever the job's name.
func TestAppendLineIsReadBack(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		start := time.Unix(0, rapid.Int64Range(0, 1<<62).Draw(t, "start")).UTC()
		a := attemptlog.Attempt{Job: rapid.StringN(1, 20, -1).Draw(t, "job"), Start: start, End: start.Add(time.Duration(rapid.Int64Range(0, 1<<40).Draw(t, "dur"))),
			Succeeded: rapid.Bool().Draw(t, "ok"), Seed: rapid.Uint64().Draw(t, "seed"), HasSeed: true}
		log, err := ReadLog(strings.NewReader(string(a.AppendLine(nil))))
		require.NoError(t, err)
		require.Len(t, log.jobs, 1)
		assert.Equal(t, a.Job, log.jobs[0].name)
		assert.Equal(t, a.Seed, log.jobs[0].seed)
		assert.Equal(t, a.Start.Sub(epoch), log.jobs[0].first)
	})
}

// TestReplayTakesTheLogInAnyOrder: the same attempts, reversed, replay
// alike.
func TestReplayTakesTheLogInAnyOrder(t *testing.T) {
	var attempts []attemptlog.Attempt
	o := Outage{Jobs: 200, Down: 10 * time.Minute, FailAfter: time.Second, Spread: time.Minute, Tick: time.Minute,
		Log: func(a attemptlog.Attempt) { attempts = append(attempts, a) }}
	_, err := o.Run(context.Background(), retrypolicy.Default())
	require.NoError(t, err)
	inOrder, err := NewLog(attempts)
	require.NoError(t, err)
	slices.Reverse(attempts)
	reversed, err := NewLog(attempts)
	require.NoError(t, err)
	s := mustParse(t, `{"strategy":"unless_stopped","backoff":{"kind":"exponential_with_jitter","base_delay_secs":2,"max_delay_secs":300}}`)
	a, err := Replay{Tick: time.Minute}.Run(context.Background(), inOrder, s)
	require.NoError(t, err)
	b, err := Replay{Tick: time.Minute}.Run(context.Background(), reversed, s)
	require.NoError(t, err)
	assert.Equal(t, a, b)
	assert.Equal(t, inOrder.Recorded(), reversed.Recorded())
}

// TestReplayStopsAtItsBounds: MaxAttempts attempts, then Truncated; a
// done context stops it with an error that wraps the context's.
func TestReplayStopsAtItsBounds(t *testing.T) {
	_, log := logOf(t, Outage{Jobs: 100, Down: time.Hour, Tick: time.Minute}, retrypolicy.Default())
	r, err := Replay{Tick: time.Minute, MaxAttempts: 50}.Run(context.Background(), log, retrypolicy.Default())
	require.NoError(t, err)
	assert.True(t, r.Truncated)
	assert.Equal(t, BoundMaxRuns, r.TruncatedBy)
	assert.Equal(t, 50, r.Attempts)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err = Replay{}.Run(ctx, log, retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Nanosecond}})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, BoundContext, r.TruncatedBy)
	_, err = Replay{Tick: -1}.Run(context.Background(), log, retrypolicy.Default())
	assert.ErrorContains(t, err, "fleet: Replay.Tick: must be from 0 to 24h")
	_, err = Replay{MaxAttempts: -1}.Run(context.Background(), log, retrypolicy.Default())
	assert.ErrorContains(t, err, "fleet: Replay.MaxAttempts")
}

// FuzzReadLog: any input is read or refused with an error naming a line,
// never a panic; what is read replays.
func FuzzReadLog(f *testing.F) {
	f.Add([]byte(`{"job":"a","started_at":"2026-03-03T10:00:00Z","ended_at":"2026-03-03T10:00:02Z","outcome":"failed","jitter_seed":"x"}` + "\n" +
		`{"job":"a","started_at":"2026-03-03T10:01:00Z","ended_at":"2026-03-03T10:01:00Z","outcome":"succeeded"}`))
	f.Add([]byte(`{"job":"\u00e9","started_at":"2262-04-11T23:47:16.854775807Z","ended_at":"2262-04-11T23:47:16.854775807Z","outcome":"failed","jitter_seed":18446744073709551615}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		log, err := ReadLog(bytes.NewReader(data))
		if err != nil {
			if !strings.Contains(err.Error(), "fleet: ReadLog: ") {
				t.Fatalf("an error that does not say where: %v", err)
			}
			return
		}
		r, err := Replay{Tick: time.Minute, MaxAttempts: 10_000}.Run(context.Background(), log, retrypolicy.Default())
		if err != nil {
			t.Fatal(err)
		}
		if all, _ := log.Jobs(); r.Completed+r.Fatal+r.Unfinished != all {
			t.Fatalf("%d jobs, %+v", all, r)
		}
	})
}
