package plan

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/rapidgen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func parse(t require.TestingT, doc string) retrypolicy.Strategy {
	s, err := retrypolicy.Parse([]byte(doc))
	require.NoError(t, err, doc)
	return s
}

func codes(r Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.Code)
	}
	return out
}

// Amp's four example strategies.
const (
	ampBoundedHour = `{"strategy":"bounded","max_attempts":5,"backoff":{"kind":"exponential","base_delay_secs":1,"max_delay_secs":60}}`
	ampBoundedDay  = `{"strategy":"bounded","max_attempts":5,"window_secs":86400,"backoff":{"kind":"exponential","base_delay_secs":1,"max_delay_secs":600}}`
	ampJitter      = `{"strategy":"unless_stopped","backoff":{"kind":"exponential_with_jitter","base_delay_secs":2,"max_delay_secs":300}}`
	ampNone        = `{"strategy":"none"}`
)

// TestFindings: each finding on a strategy that shows it, and not on a
// close one that does not. The expected figures are worked by hand from
// the rules: the default backoff's crash loop fails at 0, 1, 3, 7 … 2047 s,
// and at 4095 s its hour-long window holds the failures from 511 s on.
func TestFindings(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"the default cycles", `null`, []string{"window-forgets"}},
		{"a cap the window holds: no cycle", `{"strategy":"unless_stopped","backoff":{"kind":"exponential","base_delay_secs":2,"max_delay_secs":300}}`, nil},
		{"Amp's jitter example", ampJitter, nil},
		{"Amp's bounded hour: fatal 15 s in", ampBoundedHour, []string{"gives-up-fast"}},
		{"Amp's bounded day: fatal 15 s in too", ampBoundedDay, []string{"gives-up-fast"}},
		{"Amp's none", ampNone, []string{"never-retries"}},
		{"3 failures 29 s apart: fatal at 58 s", `{"strategy":"bounded","max_attempts":3,"backoff":{"kind":"fixed","base_delay_secs":29}}`, []string{"gives-up-fast"}},
		{"3 failures 30 s apart: fatal at 60 s", `{"strategy":"bounded","max_attempts":3,"backoff":{"kind":"fixed","base_delay_secs":30}}`, nil},
		{"5 in 60 s, 30 s apart: never", `{"strategy":"bounded","max_attempts":5,"window_secs":60,"backoff":{"kind":"fixed","base_delay_secs":30}}`, []string{"never-fatal"}},
		{"3 in 60 s, 30 s apart: at 60 s", `{"strategy":"bounded","max_attempts":3,"window_secs":60,"backoff":{"kind":"fixed","base_delay_secs":30}}`, nil},
		{"flags' 7 days without a cap", `{"strategy":"bounded","max_attempts":30,"window_secs":604800,"backoff":{"kind":"exponential","base_delay_secs":1}}`, []string{"never-fatal", "no-cap", "window-forgets"}},
		{"the same with an hour's cap", `{"strategy":"bounded","max_attempts":30,"window_secs":604800,"backoff":{"kind":"exponential","base_delay_secs":1,"max_delay_secs":3600}}`, nil},
		{"no cap, an hour's window: below a day, said", `{"strategy":"unless_stopped","backoff":{"kind":"exponential","base_delay_secs":1}}`, []string{"no-cap", "window-forgets"}},
		{"a plateau below the cap: 2 in 30 s", `{"strategy":"bounded","max_attempts":6,"window_secs":30,"backoff":{"kind":"exponential","base_delay_secs":3,"multiplier":10,"max_delay_secs":607}}`, []string{"never-fatal", "window-forgets"}},
		{"a fixed backoff has no cap to miss", `{"strategy":"unless_stopped","backoff":{"kind":"fixed","base_delay_secs":3}}`, nil},
		{"halving delays", `{"strategy":"unless_stopped","backoff":{"kind":"exponential","base_delay_secs":1,"multiplier":0.5}}`, []string{"zero-delay", "shrinking-delays", "unsettled"}},
		{"halving, bounded: a storm until fatal", `{"strategy":"bounded","max_attempts":40,"backoff":{"kind":"exponential","base_delay_secs":1,"multiplier":0.5}}`, []string{"gives-up-fast", "zero-delay", "shrinking-delays"}},
		{"a multiplier of 1", `{"strategy":"unless_stopped","backoff":{"kind":"exponential","base_delay_secs":1,"multiplier":1}}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Lint(context.Background(), parse(t, tc.doc))
			require.NoError(t, err)
			assert.Equal(t, tc.want, codes(r))
			for _, f := range r.Findings {
				assert.NotContains(t, f.Message, "\n")
				assert.NotEmpty(t, f.Fix)
			}
		})
	}
}

// TestFindingsSayTheNumbers pins the figures the messages and the summary
// give for the cases the issue names, worked by hand.
func TestFindingsSayTheNumbers(t *testing.T) {
	r, err := Lint(context.Background(), retrypolicy.Default())
	require.NoError(t, err)
	assert.Equal(t, Summary{
		LongestWait: 2048 * time.Second, LongestAt: 12,
		RetriesFirstHour: 11, // the retries at 1, 3, 7 … 2047 s; the next is at 4095
		MostInWindow:     12,
		FirstStepUptime:  4094 * time.Second, // 2048 + 1024 + … + 2 pay every step but the first
		Settled:          true, Failures: r.Summary.Failures,
	}, r.Summary)
	assert.Equal(t, "the 1h window forgets failures before the delay reaches its cap of 1h: waits climb to 34m8s, fall back to 8s at failure 13, and cycle", r.Findings[0].Message)

	r, err = Lint(context.Background(), parse(t, ampBoundedHour))
	require.NoError(t, err)
	assert.True(t, r.Summary.Fatal)
	assert.Equal(t, 5, r.Summary.FailuresToFatal)
	assert.Equal(t, 15*time.Second, r.Summary.TimeToFatal, "failures at 0, 1, 3, 7 and 15 s")
	assert.Equal(t, 4, r.Summary.RetriesFirstHour)

	r, err = Lint(context.Background(), parse(t, `{"strategy":"bounded","max_attempts":5,"window_secs":60,"backoff":{"kind":"fixed","base_delay_secs":30}}`))
	require.NoError(t, err)
	assert.Equal(t, 3, r.Summary.MostInWindow, "failures at t, t-30 and t-60 s")
	assert.Contains(t, r.Findings[0].Message, "holds at most 3 failures, short of max_attempts 5")
	assert.Contains(t, r.Findings[0].Fix, "window_secs 120", "the 5th failure comes at 120 s")
	assert.Equal(t, 119, r.Summary.RetriesFirstHour, "every 30 s, from 30 to 3570 s")

	r, err = Lint(context.Background(), parse(t, `{"strategy":"bounded","max_attempts":30,"window_secs":604800,"backoff":{"kind":"exponential","base_delay_secs":1}}`))
	require.NoError(t, err)
	assert.Equal(t, 524288*time.Second, r.Summary.LongestWait, "2^19 s: the 20 failures from 0 to 2^20-1 s fit in 7 days, a 21st would not")
	assert.Contains(t, r.Findings[0].Fix, "no window of up to 7 days holds 30 failures")
	assert.Contains(t, r.Findings[1].Message, "waits grow to 6d1h38m8s (failure 20)")

	r, err = Lint(context.Background(), parse(t, `{"strategy":"bounded","max_attempts":6,"window_secs":30,"backoff":{"kind":"exponential","base_delay_secs":3,"multiplier":10,"max_delay_secs":607}}`))
	require.NoError(t, err)
	assert.Equal(t, 30*time.Second, r.Summary.LongestWait, "3 s, then 30 s for ever: failures 30 s apart, two in the window")
	assert.Equal(t, "the 30s window forgets failures before the delay reaches its cap of 10m7s: it never holds more than 2, so the waits climb to 30s and stay there", r.Findings[1].Message)

	r, err = Lint(context.Background(), parse(t, ampNone))
	require.NoError(t, err)
	assert.Equal(t, Summary{Fatal: true, FailuresToFatal: 1, MostInWindow: 1, FirstStepUptime: -1, Settled: true, Failures: 1}, r.Summary)
}

// TestReportJSON pins lint --json's shape: nulls for what does not
// happen, seconds as exact decimals.
func TestReportJSON(t *testing.T) {
	r, err := Lint(context.Background(), retrypolicy.Default())
	require.NoError(t, err)
	b, err := json.Marshal(r)
	require.NoError(t, err)
	var doc struct {
		Findings []map[string]string
		Summary  map[string]any
	}
	require.NoError(t, json.Unmarshal(b, &doc))
	assert.Equal(t, map[string]string{"code": "window-forgets", "severity": "info", "message": r.Findings[0].Message, "fix": r.Findings[0].Fix}, doc.Findings[0])
	assert.Nil(t, doc.Summary["time_to_fatal_secs"])
	assert.Nil(t, doc.Summary["failures_to_fatal"])
	assert.Equal(t, 2048.0, doc.Summary["longest_wait_secs"])
	assert.Equal(t, 11.0, doc.Summary["retries_first_hour"])
	assert.Equal(t, 4094.0, doc.Summary["first_step_uptime_secs"])
	assert.Equal(t, true, doc.Summary["settled"])

	r, err = Lint(context.Background(), parse(t, `{"strategy":"unless_stopped","backoff":{"kind":"fixed","base_delay_secs":1}}`))
	require.NoError(t, err)
	b, err = json.Marshal(r)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(b), `{"findings":[],"summary":{`), string(b))
}

// TestLintRefusesAnInvalidStrategy: the library's validation error, and
// no report.
func TestLintRefusesAnInvalidStrategy(t *testing.T) {
	_, err := Lint(context.Background(), retrypolicy.Strategy{Kind: retrypolicy.Bounded})
	assert.ErrorIs(t, err, retrypolicy.ErrInvalid)
	_, err = Timeline(retrypolicy.Strategy{Kind: 9}, loopStart, 0, 10)
	assert.ErrorIs(t, err, retrypolicy.ErrInvalid)
}

// reference is the crash loop worked with the library's plain Decide on
// every failure so far, for n failures: each wait is the decision's
// credited delay, without jitter, or under a tick T the gap to the run
// after it, T * max(1, ceil(delay / T)) (docs/semantics.md, section 5).
type reference struct {
	fatalAt   int // the failure that is fatal, from 1, or 0
	fatalTime time.Duration
	waits     []time.Duration
	counts    []int
	starts    []time.Duration // when each retry starts
}

func runReference(t require.TestingT, s retrypolicy.Strategy, n int, tick time.Duration) reference {
	var r reference
	var failures []time.Time
	at := loopStart
	for i := 1; i <= n; i++ {
		failures = append(failures, at)
		d, err := retrypolicy.Decide(s, failures, 0, 1, at)
		require.NoError(t, err)
		r.counts = append(r.counts, d.InWindow)
		if d.Action == retrypolicy.Fatal {
			r.fatalAt, r.fatalTime = i, at.Sub(loopStart)
			return r
		}
		wait := d.Delay
		if tick > 0 {
			wait = tick * max(1, (d.Delay+tick-1)/tick)
		}
		r.waits = append(r.waits, wait)
		at = at.Add(wait)
		r.starts = append(r.starts, at.Sub(loopStart))
	}
	return r
}

// TestLintSummaryIsTheCrashLoop pins the summary to an independent run of
// the crash loop on the plain Decide: the fatal failure and its time, the
// longest wait (anywhere, also long after the loop settled), the retries
// that start within the first hour, the most failures in the window; a
// strategy without never-fatal reaches FATAL, and one with it does not
// within ten windows.
func TestLintSummaryIsTheCrashLoop(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapidgen.LoopStrategy(t)
		tick := time.Duration(rapid.SampledFrom([]int64{0, 1, 30, 59, 60, 61, 300}).Draw(t, "tick secs")) * time.Second
		r, err := Lint(context.Background(), s, WithTick(tick))
		require.NoError(t, err)
		sum := r.Summary
		require.Equal(t, tick, sum.Tick)
		require.True(t, sum.Settled, "settles: %+v", sum)
		ref := runReference(t, s, 3*sum.Failures+10, tick)
		never := slices.Contains(codes(r), "never-fatal")
		switch {
		case sum.Fatal:
			assert.Equal(t, ref.fatalAt, sum.FailuresToFatal)
			assert.Equal(t, ref.fatalTime, sum.TimeToFatal)
		case s.Kind == retrypolicy.Bounded:
			require.True(t, never, "a bounded strategy that is not fatal is never-fatal")
			// Ten windows, however many failures they take.
			long := runReference(t, s, 1, tick)
			for n := 64; ; n *= 2 {
				if long = runReference(t, s, n, tick); long.fatalAt > 0 || long.starts[len(long.starts)-1] > 10*s.Window {
					break
				}
			}
			assert.Zero(t, long.fatalAt, "never-fatal, yet fatal at failure %d", long.fatalAt)
		}
		if s.Kind == retrypolicy.Bounded && !never {
			assert.True(t, sum.Fatal, "without never-fatal a bounded strategy gives up")
		}
		if len(ref.waits) > 0 {
			assert.Equal(t, slices.Max(ref.waits), sum.LongestWait, "the longest wait anywhere")
			assert.Equal(t, slices.Index(ref.waits, sum.LongestWait)+1, sum.LongestAt)
		}
		assert.Equal(t, slices.Max(ref.counts), sum.MostInWindow)
		inHour := 0
		for _, at := range ref.starts {
			if at < time.Hour {
				inHour++
			}
		}
		assert.Equal(t, inHour, sum.RetriesFirstHour)
	})
}

// TestFirstStepUptimeIsTheLeastThatPaysDown pins first_step_uptime_secs
// with the plain Decide: after that uptime the count at the longest wait
// waits the first step, and a nanosecond less does not.
func TestFirstStepUptimeIsTheLeastThatPaysDown(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapidgen.LoopStrategy(t)
		r, err := Lint(context.Background(), s)
		require.NoError(t, err)
		sum := r.Summary
		if sum.LongestAt == 0 {
			assert.Equal(t, time.Duration(-1), sum.FirstStepUptime, "no wait: nothing to pay down")
			return
		}
		ref := runReference(t, s, sum.LongestAt, 0)
		n := ref.counts[sum.LongestAt-1]
		same := slices.Repeat([]time.Time{loopStart}, n)
		first, err := retrypolicy.Decide(s, same[:1], 0, 1, loopStart)
		require.NoError(t, err)
		at, err := retrypolicy.Decide(s, same, sum.FirstStepUptime, 1, loopStart)
		require.NoError(t, err)
		assert.Equal(t, first.Delay, at.Delay)
		if sum.FirstStepUptime > 0 {
			less, err := retrypolicy.Decide(s, same, sum.FirstStepUptime-1, 1, loopStart)
			require.NoError(t, err)
			assert.Greater(t, less.Delay, first.Delay)
		}
	})
}

// TestTimelineIsTheCrashLoop: with runs of any uptime, the timeline's
// decisions are the plain Decide's on every failure so far, each retry
// starting when due without jitter; it stops at max or at the fatal one.
func TestTimelineIsTheCrashLoop(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapidgen.LoopStrategy(t)
		uptime := time.Duration(rapid.Int64Range(0, int64(time.Hour)).Draw(t, "uptime"))
		most := rapid.IntRange(0, 60).Draw(t, "max")
		tick := time.Duration(rapid.Int64Range(0, int64(10*time.Minute)).Draw(t, "tick"))
		steps, err := Timeline(s, loopStart, uptime, most, WithTick(tick))
		require.NoError(t, err)
		var failures []time.Time
		run := loopStart
		for i, st := range steps {
			require.True(t, st.Start.Equal(run), "step %d starts at %v, not %v", i+1, st.Start, run)
			failures = append(failures, run.Add(uptime))
			want, err := retrypolicy.Decide(s, failures, uptime, 1, run.Add(uptime))
			require.NoError(t, err)
			d := st.Decision
			require.True(t, st.Failure.Equal(run.Add(uptime)))
			require.Equal(t, []any{want.Action, want.Reason, want.InWindow, want.Owed, want.Delay}, []any{d.Action, d.Reason, d.InWindow, d.Owed, d.Delay})
			require.Zero(t, d.Jitter)
			if d.Action == retrypolicy.Fatal {
				require.Equal(t, len(steps), i+1, "the fatal step is the last")
				return
			}
			require.True(t, d.Due.Equal(st.Failure.Add(d.Delay)))
			run = d.Due
			if tick > 0 { // the first tick at or after due, after the failure
				due, failure := d.Due.Sub(loopStart), st.Failure.Sub(loopStart)
				k := max((due+tick-1)/tick, failure/tick+1)
				run = loopStart.Add(k * tick)
			}
			require.True(t, st.Retry.Equal(run), "step %d retries at %v, not %v", i+1, st.Retry, run)
		}
		assert.Len(t, steps, most, "not fatal: max steps")
	})
}

// TestTimelineStopsWhereAHistoryEnds: waits of a hundred years run past
// 2262; the timeline ends with the last failure it can hold.
func TestTimelineStopsWhereAHistoryEnds(t *testing.T) {
	s := parse(t, `{"strategy":"unless_stopped","backoff":{"kind":"fixed","base_delay_secs":3153600000}}`)
	steps, err := Timeline(s, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 0, 10)
	require.NoError(t, err)
	assert.Len(t, steps, 3, "2026, 2126, 2226; 2326 is past 2262")
	r, err := Lint(context.Background(), s)
	require.NoError(t, err)
	assert.True(t, r.Summary.Settled, "a fixed delay repeats at once")
}

func BenchmarkLint(b *testing.B) {
	for _, tc := range []struct{ name, doc string }{
		{"default", `null`},
		{"never-fatal", `{"strategy":"bounded","max_attempts":5,"window_secs":60,"backoff":{"kind":"fixed","base_delay_secs":30}}`},
		{"storm", `{"strategy":"unless_stopped","backoff":{"kind":"exponential","base_delay_secs":1,"multiplier":0.5}}`},
	} {
		s := parse(b, tc.doc)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Lint(context.Background(), s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestLintGoSpeaksGo: for a strategy built in Go, the findings name its Go
// fields and Go's units, never the descriptor's.
func TestLintGoSpeaksGo(t *testing.T) {
	for _, s := range []retrypolicy.Strategy{
		{Kind: retrypolicy.Bounded, MaxAttempts: 5, Window: time.Minute, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 30 * time.Second}},
		{Kind: retrypolicy.Bounded, MaxAttempts: 3, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Second}},
		{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{BaseDelay: time.Second}},
		{Kind: retrypolicy.Bounded, MaxAttempts: 30, Window: 7 * 24 * time.Hour, Backoff: retrypolicy.Backoff{BaseDelay: time.Second}},
	} {
		r, err := LintGo(context.Background(), s)
		require.NoError(t, err)
		require.NotEmpty(t, r.Findings)
		for _, f := range r.Findings {
			for _, json := range []string{"_secs", "max_attempts"} {
				assert.NotContains(t, f.Message+f.Fix, json, f.Code)
			}
		}
	}
	r, err := LintGo(context.Background(), retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5, Window: time.Minute,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 30 * time.Second}})
	require.NoError(t, err)
	assert.Equal(t, "a window of at least 120s (Window: 120 * time.Second) holds 5 failures; or set MaxAttempts to at most 3, or shorten the delays", r.Findings[0].Fix)
	r, err = LintGo(context.Background(), retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{BaseDelay: time.Second}})
	require.NoError(t, err)
	assert.Equal(t, "set Backoff.MaxDelay, for example time.Hour, if a cap was meant: a Backoff that sets other fields but not MaxDelay has none, while the zero Backoff stops at an hour", r.Findings[0].Fix)
}

// zeroDelay owes 1 s after the first failure and 0 ns after every later
// one: 1e-300 floors every step past the first to nothing.
var zeroDelay = retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{
	Kind: retrypolicy.Exponential, BaseDelay: time.Second, Multiplier: 1e-300}}

// TestTimelineIsBounded: however many failures are asked for, a timeline
// holds at most MaxFailures, even of a strategy whose retries are all at
// one instant.
func TestTimelineIsBounded(t *testing.T) {
	steps, err := Timeline(zeroDelay, loopStart, 0, 1<<40)
	require.NoError(t, err)
	assert.Len(t, steps, MaxFailures)
	assert.True(t, steps[len(steps)-1].Failure.Equal(steps[1].Failure), "every failure after the first at one instant")
}

// TestLintStopsWhenTheContextIsDone: a done context stops the crash loop
// before its first failure, with an error that wraps the context's.
func TestLintStopsWhenTheContextIsDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l, err := Lint(ctx, zeroDelay)
	assert.ErrorIs(t, err, context.Canceled)
	assert.False(t, l.Summary.Settled)
	assert.Zero(t, l.Summary.Failures)
}

// TestWindowForgetsPointsOnlyToAPlanThatRuns: a finding suggests the
// command's plan only with a count plan accepts (it had suggested
// --failures 4781, which plan refuses), and two waits that round alike are
// written exactly (it had said "climb to 1s, fall back to 1s").
func TestWindowForgetsPointsOnlyToAPlanThatRuns(t *testing.T) {
	r, err := Lint(context.Background(), parse(t, `{"strategy":"unless_stopped","backoff":{"kind":"exponential","multiplier":1.0000001,"max_delay_secs":3153600000}}`))
	require.NoError(t, err)
	f := findingOf(t, r, "window-forgets")
	assert.NotContains(t, f.Fix, "--failures")
	assert.NotContains(t, f.Message, "climb to 1s, fall back to 1s")
	assert.Contains(t, f.Message, "climb to 1.000359964s, fall back to 1.000359864s at failure 4769")

	r, err = Lint(context.Background(), retrypolicy.Default())
	require.NoError(t, err)
	f = findingOf(t, r, "window-forgets")
	assert.Regexp(t, `\(retrypolicy plan --failures \d+ --tick 0 shows the cycle\)`, f.Fix)
}

// findingOf returns r's finding of code.
func findingOf(t *testing.T, r Report, code string) Finding {
	t.Helper()
	for _, f := range r.Findings {
		if f.Code == code {
			return f
		}
	}
	t.Fatalf("no %s finding in %v", code, codes(r))
	return Finding{}
}

// TestNanosecondDelaysStayBounded: a Go strategy may wait 1 ns
// (docs/semantics.md, section 4); its crash loop and its timeline still end, at
// MaxFailures at the most.
func TestNanosecondDelaysStayBounded(t *testing.T) {
	s := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Nanosecond}}
	r, err := LintGo(context.Background(), s)
	require.NoError(t, err)
	assert.LessOrEqual(t, r.Summary.Failures, MaxFailures)
	assert.False(t, r.Summary.Fatal)
	assert.Equal(t, time.Nanosecond, r.Summary.LongestWait)
	steps, err := Timeline(s, loopStart, 0, 1<<40)
	require.NoError(t, err)
	assert.Len(t, steps, MaxFailures)
	assert.Equal(t, time.Nanosecond, steps[1].Failure.Sub(steps[0].Failure))
}

// TestLintUnderATick works the 5th section of docs/semantics.md's crash loop under a
// minute's tick by hand: every failure falls on a tick, and the next is a
// whole number of ticks after it, at least one. Delays of 59, 60 and 61 s
// fall just below, on and just above a tick.
func TestLintUnderATick(t *testing.T) {
	const m = time.Minute
	for _, tc := range []struct {
		name, doc   string
		fatalAt     time.Duration // -1: never
		longest     time.Duration
		longestAt   int
		firstHour   int
		wantCodes   []string
		withoutTick time.Duration // the time to fatal when due, -1: never
	}{
		// 1, 2, 4 … s owed, each retry a minute later: the 60 s window holds
		// the failure and the one a minute before it, never 5.
		{"the issue's 5 in 60 s", `{"strategy":"bounded","max_attempts":5,"window_secs":60}`, -1, m, 1, 59, []string{"never-fatal", "window-forgets"}, 15 * time.Second},
		// Failures at 0, 60, 120, 180, 240 s: the fifth is fatal.
		{"fixed 59 s", `{"strategy":"bounded","max_attempts":5,"window_secs":600,"backoff":{"kind":"fixed","base_delay_secs":59}}`, 4 * m, m, 1, 4, nil, 236 * time.Second},
		{"fixed 60 s", `{"strategy":"bounded","max_attempts":5,"window_secs":600,"backoff":{"kind":"fixed","base_delay_secs":60}}`, 4 * m, m, 1, 4, nil, 240 * time.Second},
		// 0, 120, 240, 360, 480 s.
		{"fixed 61 s", `{"strategy":"bounded","max_attempts":5,"window_secs":600,"backoff":{"kind":"fixed","base_delay_secs":61}}`, 8 * m, 2 * m, 1, 4, nil, 244 * time.Second},
		// 59, 118, 236, 472 s owed: 1, 2, 4 and 8 minutes; 0, 60, 180, 420, 900 s.
		{"exponential from 59 s", `{"strategy":"bounded","max_attempts":5,"window_secs":3600,"backoff":{"kind":"exponential","base_delay_secs":59,"max_delay_secs":3600}}`, 15 * m, 8 * m, 4, 4, nil, 885 * time.Second},
		{"exponential from 60 s", `{"strategy":"bounded","max_attempts":5,"window_secs":3600,"backoff":{"kind":"exponential","base_delay_secs":60,"max_delay_secs":3600}}`, 15 * m, 8 * m, 4, 4, nil, 900 * time.Second},
		// 61, 122, 244, 488 s owed: 2, 3, 5 and 9 minutes; 0, 120, 300, 600, 1140 s.
		{"exponential from 61 s", `{"strategy":"bounded","max_attempts":5,"window_secs":3600,"backoff":{"kind":"exponential","base_delay_secs":61,"max_delay_secs":3600}}`, 19 * m, 9 * m, 4, 4, nil, 915 * time.Second},
		// 1, 2, 4 … 2048 s owed: a minute each up to 32 s, then 2, 3, 5, 9,
		// 18 and 35 minutes; retries at 60 … 360, 480, 660, 960, 1500 and
		// 2580 s in the first hour, then a wait of 2100 s after failure 12.
		{"the default", `null`, -1, 2100 * time.Second, 12, 11, []string{"window-forgets"}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := parse(t, tc.doc)
			r, err := Lint(context.Background(), s, WithTick(m))
			require.NoError(t, err)
			sum := r.Summary
			assert.Equal(t, m, sum.Tick)
			assert.Equal(t, tc.fatalAt >= 0, sum.Fatal)
			if tc.fatalAt >= 0 {
				assert.Equal(t, tc.fatalAt, sum.TimeToFatal)
			}
			assert.Equal(t, tc.longest, sum.LongestWait)
			assert.Equal(t, tc.longestAt, sum.LongestAt)
			assert.Equal(t, tc.firstHour, sum.RetriesFirstHour)
			assert.Equal(t, tc.wantCodes, codes(r))

			due, err := Lint(context.Background(), s) // no tick: the in-process loop
			require.NoError(t, err)
			assert.Equal(t, tc.withoutTick >= 0, due.Summary.Fatal)
			if tc.withoutTick >= 0 {
				assert.Equal(t, tc.withoutTick, due.Summary.TimeToFatal)
			}
		})
	}
}

// TestNeverFatalUnderATickNamesIt: the finding says the tick, and its fix
// a window that holds max_attempts failures a tick apart, or fewer
// attempts.
func TestNeverFatalUnderATickNamesIt(t *testing.T) {
	r, err := Lint(context.Background(), parse(t, `{"strategy":"bounded","max_attempts":5,"window_secs":60}`), WithTick(time.Minute))
	require.NoError(t, err)
	f := findingOf(t, r, "never-fatal")
	assert.Equal(t, "bounded never gives up when every run crashes under a 1m tick: its 1m window holds at most 2 failures, short of max_attempts 5, so it retries forever as unless_stopped does", f.Message)
	// Five failures a minute apart span 240 s.
	assert.Equal(t, "a window of at least 240s (window_secs 240) holds 5 failures under the 1m tick; or set max_attempts to at most 2, or shorten the delays", f.Fix)
	fixed, err := Lint(context.Background(), parse(t, `{"strategy":"bounded","max_attempts":5,"window_secs":240}`), WithTick(time.Minute))
	require.NoError(t, err)
	assert.True(t, fixed.Summary.Fatal, "the fix's window gives up")
	assert.Equal(t, 4*time.Minute, fixed.Summary.TimeToFatal)
}

// TestZeroDelayUnderATickIsAnInfo: a job whose delays floor to nothing
// waits a tick, a retry a tick rather than a storm.
func TestZeroDelayUnderATickIsAnInfo(t *testing.T) {
	r, err := Lint(context.Background(), zeroDelay, WithTick(time.Minute))
	require.NoError(t, err)
	f := findingOf(t, r, "zero-delay")
	assert.Equal(t, Info, f.Severity)
	assert.Equal(t, "from failure 2 the delay is 0s: each retry waits only for the next 1m tick, so a failing job runs on every tick", f.Message)
	assert.True(t, r.Summary.Settled, "a tick apart, the loop repeats")
	assert.Equal(t, time.Minute, r.Summary.LongestWait)
	due, err := Lint(context.Background(), zeroDelay)
	require.NoError(t, err)
	assert.Equal(t, Warning, findingOf(t, due, "zero-delay").Severity)
}

// TestATickOutOfRangeIsAnError: below 0 or above a day, for each of the
// three calls that take it.
func TestATickOutOfRangeIsAnError(t *testing.T) {
	for _, d := range []time.Duration{-time.Nanosecond, 24*time.Hour + 1} {
		_, err := Lint(context.Background(), retrypolicy.Default(), WithTick(d))
		assert.ErrorContains(t, err, "plan: WithTick: must be from 0 to 24h")
		_, err = LintGo(context.Background(), retrypolicy.Default(), WithTick(d))
		assert.ErrorContains(t, err, "plan: WithTick: must be from 0 to 24h")
		_, err = Timeline(retrypolicy.Default(), loopStart, 0, 3, WithTick(d))
		assert.ErrorContains(t, err, "plan: WithTick: must be from 0 to 24h")
	}
}

// TestLintGoNamesTheFieldThatFixes: a never-fatal bounded strategy is
// fixed by MaxAttempts at most what its window holds, a backoff without a
// cap by Backoff.MaxDelay of an hour; other findings name no field.
func TestLintGoNamesTheFieldThatFixes(t *testing.T) {
	never := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5, Window: time.Minute,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 30 * time.Second}}
	r, err := LintGo(context.Background(), never, WithTick(time.Minute))
	require.NoError(t, err)
	f := findingOf(t, r, "never-fatal")
	assert.Equal(t, "MaxAttempts", f.Field)
	assert.Equal(t, "2", f.Value, "a minute holds two failures a minute apart: %s", f.Message)

	uncapped := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: time.Second, Multiplier: 10}}
	r, err = LintGo(context.Background(), uncapped)
	require.NoError(t, err)
	f = findingOf(t, r, "no-cap")
	assert.Equal(t, "Backoff.MaxDelay", f.Field)
	assert.Equal(t, "time.Hour", f.Value)
	r, err = Lint(context.Background(), uncapped)
	require.NoError(t, err)
	f = findingOf(t, r, "no-cap")
	assert.Equal(t, "max_delay_secs", f.Field)
	assert.Equal(t, "3600", f.Value)
	for _, f := range r.Findings {
		if f.Code != "no-cap" {
			assert.Empty(t, f.Field+f.Value, f.Code)
		}
	}
}
