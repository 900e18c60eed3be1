package retrypolicy

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func bounded(max int, window time.Duration) Strategy {
	return Strategy{Kind: Bounded, MaxAttempts: max, Window: window, Backoff: defaultBackoff()}
}

// TestDecideSeedExamples pins the retry documentation's worked examples.
func TestDecideSeedExamples(t *testing.T) {
	tests := []struct {
		name     string
		s        Strategy
		failures []time.Time
		uptime   time.Duration
		now      time.Time
		action   Action
		reason   Reason
		n        int
		credited time.Duration
	}{
		{"first failure waits 1 s", Default(), failuresAt(0), 0, t0, Wait, Reason(0), 1, time.Second},
		{"fourth failure owes 8 s", Default(), failuresAt(-3, -2, -1, 0), 0, t0, Wait, Reason(0), 4, 8 * time.Second},
		{"10 s of uptime: waits 4 s", Default(), failuresAt(-3, -2, -1, 0), 10 * time.Second, t0, Wait, Reason(0), 4, 4 * time.Second},
		{"15 s of uptime: waits 1 s", Default(), failuresAt(-3, -2, -1, 0), 15 * time.Second, t0, Wait, Reason(0), 4, time.Second},
		{"backoff passed: retry now", Default(), failuresAt(-3, -2, -1, 0), 0, t0.Add(8 * time.Second), RetryNow, Reason(0), 4, 8 * time.Second},
		{"a nanosecond early: wait", Default(), failuresAt(-3, -2, -1, 0), 0, t0.Add(8*time.Second - 1), Wait, Reason(0), 4, 8 * time.Second},
		{"5 failures in an hour: bounded(5) is fatal", bounded(5, time.Hour), failuresAt(-3000, -2000, -1000, -10, 0), 0, t0, Fatal, AttemptsExhausted, 5, 0},
		{"5 failures over more than an hour: not fatal", bounded(5, time.Hour), failuresAt(-3601, -2000, -1000, -10, 0), 0, t0, Wait, Reason(0), 4, 8 * time.Second},
		{"uptime never saves a bounded job", bounded(5, time.Hour), failuresAt(-3000, -2000, -1000, -10, 0), 100 * time.Hour, t0.Add(time.Hour), Fatal, AttemptsExhausted, 5, 0},
		{"none is fatal on the first failure", Strategy{Kind: None}, failuresAt(0), 0, t0, Fatal, StrategyNone, 1, 0},
		{"unless_stopped counts an hour for its backoff", Default(), failuresAt(-7200, -3601, -1, 0), 0, t0, Wait, Reason(0), 2, 2 * time.Second},
		{"a clock behind the failure waits", Default(), failuresAt(0), 0, t0.Add(-time.Hour), Wait, Reason(0), 1, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Decide(tt.s, tt.failures, tt.uptime, 0, tt.now)
			require.NoError(t, err)
			assert.Equal(t, tt.action, d.Action)
			assert.Equal(t, tt.reason, d.Reason)
			assert.Equal(t, tt.n, d.InWindow)
			assert.Equal(t, tt.credited, d.Delay)
			if tt.action == Fatal {
				assert.True(t, d.Due.IsZero())
				return
			}
			assert.True(t, d.Due.Equal(t0.Add(tt.credited)), "due %v", d.Due)
		})
	}
}

func TestDecideRejectsBadInput(t *testing.T) {
	_, err := Decide(Default(), nil, 0, 0, t0)
	assert.ErrorIs(t, err, errNoFailures)

	_, err = Decide(Strategy{Kind: 9}, failuresAt(0), 0, 0, t0)
	assert.ErrorIs(t, err, ErrInvalid)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "Kind", ve.Errors[0].Field)
}

func TestDecideJitterIsStable(t *testing.T) {
	s := Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: ExponentialWithJitter, BaseDelay: 60 * time.Second, Multiplier: 2}}
	failures, seed := failuresAt(-10, 0), SeedFromString("job-42")
	a, err := Decide(s, failures, 0, seed, t0)
	require.NoError(t, err)
	b, err := Decide(s, failures, 0, seed, t0.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, a.Jitter, b.Jitter, "the same failure gets the same extra on every tick")
	assert.True(t, a.Due.Equal(b.Due))
	assert.Equal(t, Wait, a.Action)
	assert.Equal(t, RetryNow, b.Action)
	assert.Equal(t, 120*time.Second, a.Delay)
	assert.Less(t, a.Jitter, 30*time.Second)

	c, err := Decide(s, failures, 0, SeedFromString("job-43"), t0)
	require.NoError(t, err)
	assert.NotEqual(t, a.Jitter, c.Jitter, "another job gets another extra")

	plain := s
	plain.Backoff.Kind = Exponential
	p, err := Decide(plain, failures, 0, seed, t0)
	require.NoError(t, err)
	assert.Equal(t, time.Duration(0), p.Jitter)
}

// TestJitterSpreadsJobsThatFailedTogether pins the jitter's spreading: jobs that
// failed at the same instant get extras spread uniformly over [0, 1/4).
func TestJitterSpreadsJobsThatFailedTogether(t *testing.T) {
	const jobs, buckets = 20000, 10
	var count [buckets]int
	credited := 400 * time.Second
	for i := range jobs {
		u := jitterUnit(SeedFromString("job-"+strconv.Itoa(i)), instantOf(t0), 3)
		j := jitterFor(credited, u)
		count[int(j*4*buckets/credited)]++
	}
	for b, c := range count {
		// Expected 2000 per bucket; 5 standard deviations is about 210.
		assert.InDelta(t, jobs/buckets, c, 250, "bucket %d", b)
	}
}

func TestDecisionLogValue(t *testing.T) {
	var sb strings.Builder
	logger := slog.New(slog.NewTextHandler(&sb, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	d, err := Decide(Default(), failuresAt(-1, 0), 0, 0, t0)
	require.NoError(t, err)
	logger.Info("decided", "decision", d)
	assert.Contains(t, sb.String(), "decision.action=wait decision.failures_in_window=2 decision.owed_secs=2 decision.delay_secs=2 decision.jitter_secs=0 decision.due=2026-11-02T15:04:07.000000000Z")

	sb.Reset()
	d, err = Decide(Strategy{Kind: None}, failuresAt(0), 0, 0, t0)
	require.NoError(t, err)
	logger.Info("decided", "decision", d)
	assert.Contains(t, sb.String(), "decision.action=fatal decision.reason=strategy_none decision.failures_in_window=1")
	assert.NotContains(t, sb.String(), "due")
}

// genHistory draws a failure history with a known count: the newest failure
// at last, inWindow more within the window of it, and outside more strictly
// older than the window, shuffled.
func genHistory(t *rapid.T, window time.Duration) (failures []time.Time, last time.Time, inWindow, outside int) {
	last = time.Unix(rapid.Int64Range(0, 4e9).Draw(t, "last_unix"), rapid.Int64Range(0, 999999999).Draw(t, "last_nsec")).UTC()
	inWindow = rapid.IntRange(0, 30).Draw(t, "in_window")
	outside = rapid.IntRange(0, 30).Draw(t, "outside")
	failures = append(failures, last)
	for i := range inWindow {
		back := rapid.Int64Range(0, int64(window)).Draw(t, "back_"+strconv.Itoa(i))
		failures = append(failures, last.Add(-time.Duration(back)))
	}
	for i := range outside {
		back := rapid.Int64Range(int64(window)+1, int64(maxWindow)+int64(window)).Draw(t, "old_"+strconv.Itoa(i))
		failures = append(failures, last.Add(-time.Duration(back)))
	}
	perm := rapid.Permutation(failures).Draw(t, "order")
	return perm, last, inWindow, outside
}

// TestFailuresOutsideWindowNeverChangeDecision pins the window: adding failures
// older than the window changes nothing in the decision.
func TestFailuresOutsideWindowNeverChangeDecision(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genStrategy(t)
		failures, last, _, _ := genHistory(t, s.window())
		in := input{failures, genUptime(t, "uptime"), rapid.Uint64().Draw(t, "seed")}
		now := last.Add(time.Duration(rapid.Int64Range(-int64(time.Hour), int64(ceiling)).Draw(t, "since")))
		var recent []time.Time
		from := last.Add(-s.window())
		for _, f := range failures {
			if !f.Before(from) {
				recent = append(recent, f)
			}
		}
		full, err := Decide(s, in.failures, in.uptime, in.seed, now)
		require.NoError(t, err)
		in.failures = recent
		trimmed, err := Decide(s, in.failures, in.uptime, in.seed, now)
		require.NoError(t, err)
		if full != trimmed {
			t.Fatalf("with old failures %+v, without %+v", full, trimmed)
		}
	})
}

// TestBoundedFatalIffWindowHoldsMaxAttempts pins the give-up rule: a bounded job is fatal
// exactly when its window holds max_attempts failures, whatever its uptime.
func TestBoundedFatalIffWindowHoldsMaxAttempts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := Strategy{
			Kind:        Bounded,
			MaxAttempts: rapid.IntRange(1, 35).Draw(t, "max_attempts"),
			Window:      genSeconds(t, "window_secs", 1, int64(maxWindow/time.Second)),
			Backoff:     genBackoff(t),
		}
		failures, last, inWindow, _ := genHistory(t, s.Window)
		in := input{failures, genUptime(t, "uptime"), 0}
		d, err := Decide(s, in.failures, in.uptime, in.seed, last.Add(time.Duration(rapid.Int64().Draw(t, "since"))))
		require.NoError(t, err)
		n := inWindow + 1
		if d.InWindow != n {
			t.Fatalf("counted %d failures, the history holds %d in the window", d.InWindow, n)
		}
		if fatal := d.Action == Fatal; fatal != (n >= s.MaxAttempts) {
			t.Fatalf("n=%d max_attempts=%d: action %v", n, s.MaxAttempts, d.Action)
		}
		if d.Action == Fatal && d.Reason != AttemptsExhausted {
			t.Fatalf("reason %v", d.Reason)
		}
	})
}

// TestDueSameForEveryNow pins the window's anchor and the due time: it does not depend on
// the clock (ticks and replicas agree), and the verdict is RetryNow iff now is
// not before it.
func TestDueSameForEveryNow(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genStrategy(t)
		failures, last, _, _ := genHistory(t, s.window())
		in := input{failures, genUptime(t, "uptime"), rapid.Uint64().Draw(t, "seed")}
		offset := func(label string) time.Time {
			return last.Add(time.Duration(rapid.Int64().Draw(t, label)))
		}
		a, err := Decide(s, in.failures, in.uptime, in.seed, offset("now_a"))
		require.NoError(t, err)
		nowB := offset("now_b")
		b, err := Decide(s, in.failures, in.uptime, in.seed, nowB)
		require.NoError(t, err)
		if a.Action == Fatal || b.Action == Fatal {
			if a.Action != b.Action || a.Reason != b.Reason {
				t.Fatalf("fatal depends on now: %+v vs %+v", a, b)
			}
			return
		}
		if !a.Due.Equal(b.Due) || a.Delay != b.Delay || a.Jitter != b.Jitter {
			t.Fatalf("due depends on now: %+v vs %+v", a, b)
		}
		if want := !nowB.Before(b.Due); (b.Action == RetryNow) != want {
			t.Fatalf("now %v, due %v: action %v", nowB, b.Due, b.Action)
		}
		if !b.Due.Equal(last.Add(b.Delay).Add(b.Jitter)) {
			t.Fatalf("due %v is not last + credited + jitter", b.Due)
		}
		// Exactly at due: retry.
		at, err := Decide(s, in.failures, in.uptime, in.seed, b.Due)
		require.NoError(t, err)
		if at.Action != RetryNow {
			t.Fatalf("at due: %v", at.Action)
		}
	})
}

// TestJitterWithinQuarterAndStable pins the jitter through Decide: the extra is in
// [0, credited/4), zero for the other kinds, and the same for the same seed
// and failure.
func TestJitterWithinQuarterAndStable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genStrategy(t)
		if s.Kind == None {
			return
		}
		failures, last, _, _ := genHistory(t, s.window())
		in := input{failures, genUptime(t, "uptime"), rapid.Uint64().Draw(t, "seed")}
		d, err := Decide(s, in.failures, in.uptime, in.seed, last)
		require.NoError(t, err)
		if d.Action == Fatal {
			return
		}
		if s.Backoff.Kind != ExponentialWithJitter {
			if d.Jitter != 0 {
				t.Fatalf("jitter %v for %v", d.Jitter, s.Backoff.Kind)
			}
			return
		}
		if d.Jitter < 0 || (d.Delay > 0 && d.Jitter >= (d.Delay+3)/4) || (d.Delay == 0 && d.Jitter != 0) {
			t.Fatalf("jitter %v for credited %v", d.Jitter, d.Delay)
		}
		again, err := Decide(s, failuresReversed(failures), in.uptime, in.seed, last.Add(time.Hour))
		require.NoError(t, err)
		if again.Jitter != d.Jitter {
			t.Fatalf("jitter %v then %v for the same failure", d.Jitter, again.Jitter)
		}
	})
}

func failuresReversed(in []time.Time) []time.Time {
	out := slices.Clone(in)
	slices.Reverse(out)
	return out
}

func TestDecideDueSaturatesAtTheEndOfTime(t *testing.T) {
	end := time.Unix(math.MaxInt64-62135596801, 999999999)
	s := Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Fixed, BaseDelay: 3600 * time.Second}}
	d, err := Decide(s, []time.Time{end}, 0, 0, end)
	require.NoError(t, err)
	assert.False(t, d.Due.Before(end), "due %v before the failure %v", d.Due, end)
	assert.Equal(t, Wait, d.Action)
}

// TestNoFailuresIsNotInvalid: deciding on no failures is an error, but not
// an invalid strategy (a server must not answer it 400 INVALID_BODY).
func TestNoFailuresIsNotInvalid(t *testing.T) {
	_, err := Decide(Default(), nil, 0, 0, t0)
	require.Error(t, err)
	assert.False(t, errors.Is(err, ErrInvalid))
	p, err := Compile(Default())
	require.NoError(t, err)
	_, err = p.Decide([]time.Time{}, 0, 0, t0)
	require.Error(t, err)
	assert.False(t, errors.Is(err, ErrInvalid))
}

// TestUnlessStoppedNeverFatal pins that unless_stopped retries forever,
// however many failures the window holds.
func TestUnlessStoppedNeverFatal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := Strategy{Kind: UnlessStopped, Backoff: genBackoff(t)}
		failures, last, _, _ := genHistory(t, s.window())
		d, err := Decide(s, failures, genUptime(t, "uptime"), 0, last)
		require.NoError(t, err)
		if d.Action == Fatal {
			t.Fatalf("unless_stopped fatal after %d failures", d.InWindow)
		}
	})
}

func TestJitterComesOnTopOfTheCap(t *testing.T) {
	// The extra is added after the cap, so the wait may pass max_delay.
	s := Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: ExponentialWithJitter, BaseDelay: time.Second, Multiplier: 2, MaxDelay: 60 * time.Second}}
	var over int
	for i := range 200 {
		d, err := Decide(s, failuresAt(-9, -8, -7, -6, -5, -4, -3, -2, -1, 0), 0, uint64(i), t0)
		require.NoError(t, err)
		require.Equal(t, 60*time.Second, d.Delay)
		require.Less(t, d.Jitter, 15*time.Second)
		if d.Due.Sub(t0) > 60*time.Second {
			over++
		}
	}
	assert.Greater(t, over, 150, "most jobs wait past the cap")
}

// TestDueIsTheWallClockInstant pins how Due is built: for a newest failure
// anywhere in time.Time's range, in any location, with a monotonic reading
// or not, Due is the instant of newest + credited + jitter (saturating as
// time.Time.Add does), in the failure's location, without a monotonic
// reading.
func TestDueIsTheWallClockInstant(t *testing.T) {
	monotonic := time.Now()
	rapid.Check(t, func(t *rapid.T) {
		var last time.Time
		switch rapid.IntRange(0, 2).Draw(t, "from") {
		case 0:
			last = monotonic.Add(time.Duration(rapid.Int64Range(-1e18, 1e18).Draw(t, "offset")))
		case 1:
			last = time.Unix(rapid.Int64Range(-62135596800, 1e11).Draw(t, "sec"), rapid.Int64Range(0, 999999999).Draw(t, "nsec"))
		default:
			// Near the end of time.Time's range, where the sum saturates.
			last = time.Unix(math.MaxInt64-62135596801-rapid.Int64Range(0, 1e10).Draw(t, "before_end"), rapid.Int64Range(0, 999999999).Draw(t, "nsec"))
		}
		switch rapid.IntRange(0, 2).Draw(t, "location") {
		case 0:
			last = last.UTC()
		case 1:
			last = last.In(time.FixedZone("z", rapid.IntRange(-50000, 50000).Draw(t, "zone")))
		}
		s := genStrategy(t)
		if s.Kind == None {
			return
		}
		d, err := Decide(s, []time.Time{last}, genUptime(t, "uptime"), rapid.Uint64().Draw(t, "seed"), last)
		require.NoError(t, err)
		if d.Action == Fatal {
			return
		}
		if want := last.Add(d.Delay + d.Jitter); !d.Due.Equal(want) {
			t.Fatalf("due %v, want %v", d.Due, want)
		}
		if d.Due.Location() != last.Location() {
			t.Fatalf("due in %v, the failure in %v", d.Due.Location(), last.Location())
		}
		if strings.Contains(d.Due.String(), " m=") {
			t.Fatalf("due %v carries a monotonic reading", d.Due)
		}
	})
}

// TestCompiledPolicyDecidesAsTheRule pins the compiled decision to the
// rule: for any strategy, a Policy, Decide on the plain Strategy and a
// History holding the same failures return the same Decision, whose Owed is
// the backoff's delay for the window's count and whose Credited is the
// uptime-credit loop's, for histories of up to a few thousand failures
// (past the table Compile builds) and uptimes on the steps' boundaries.
func TestCompiledPolicyDecidesAsTheRule(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genStrategy(t)
		if s.Kind != None && rapid.Bool().Draw(t, "growing") {
			s.Backoff = genGrowingBackoff(t)
		}
		window := s.window()
		n := rapid.OneOf(rapid.IntRange(1, 12), rapid.IntRange(1, 3000)).Draw(t, "n")
		last := time.Unix(rapid.Int64Range(0, 4e9).Draw(t, "last_unix"), rapid.Int64Range(0, 999999999).Draw(t, "last_nsec")).UTC()
		step := window / time.Duration(n)
		failures := make([]time.Time, n)
		for i := range failures {
			failures[i] = last.Add(-time.Duration(n-1-i) * step)
		}
		st := s.Backoff.compiled()
		uptime := genUptime(t, "uptime")
		if s.Kind != None && rapid.Bool().Draw(t, "uptime on a step boundary") {
			var sum int64
			downTo := rapid.IntRange(1, n).Draw(t, "down to")
			for k := n; k >= downTo && k > 1 && sum <= math.MaxInt64-st.at(int64(k)); k-- {
				sum += st.at(int64(k))
			}
			uptime = time.Duration(sum + rapid.Int64Range(-1, 1).Draw(t, "nudge"))
		}
		seed := rapid.Uint64().Draw(t, "seed")
		now := last.Add(time.Duration(rapid.Int64Range(-int64(time.Hour), int64(ceiling)).Draw(t, "since")))

		p, err := Compile(s)
		require.NoError(t, err)
		got, err := p.Decide(failures, uptime, seed, now)
		require.NoError(t, err)
		plain, err := Decide(s, failures, uptime, seed, now)
		require.NoError(t, err)
		h := newHistory(t, s)
		for i, f := range failures {
			var up time.Duration // the uptime goes with the newest failure, the last
			if i == n-1 {
				up = uptime
			}
			require.NoError(t, h.Record(f, up))
		}
		fromHistory, err := h.Decide(seed, now)
		require.NoError(t, err)
		for what, d := range map[string]Decision{"Decide": plain, "History.Decide": fromHistory} {
			if d.Action != got.Action || d.Reason != got.Reason || d.InWindow != got.InWindow || d.Owed != got.Owed ||
				d.Delay != got.Delay || d.Jitter != got.Jitter || !d.Due.Equal(got.Due) {
				t.Fatalf("Policy.Decide %+v, %s %+v", got, what, d)
			}
		}
		if got.InWindow != n {
			t.Fatalf("counted %d of %d failures", got.InWindow, n)
		}
		if got.Action == Fatal {
			return
		}
		if want := time.Duration(st.at(int64(n))); got.Owed != want {
			t.Fatalf("owed %v after %d failures, the backoff says %v", got.Owed, n, want)
		}
		if want := s.Backoff.creditReference(n, uptime); got.Delay != want {
			t.Fatalf("credited %v after %d failures and %v up, the loop says %v", got.Delay, n, uptime, want)
		}
	})
}

// TestDecisionReadsAsASentence: fmt prints a decision as what it says
// (it had printed {wait  4 8s 4s 0s ...}): the worked example of uptime credit with
// a 10 s run, the same due, and a fatal decision.
func TestDecisionReadsAsASentence(t *testing.T) {
	last := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	failures := []time.Time{last.Add(-3 * time.Second), last.Add(-2 * time.Second), last.Add(-time.Second), last}
	d, err := Decide(Default(), failures, 10*time.Second, 0, last)
	require.NoError(t, err)
	assert.Equal(t, "wait until 2026-11-02T15:00:04Z: failure 4 in the window owes 8s, 4s after uptime credit, plus 0s of jitter", fmt.Sprint(d))
	d, err = Decide(Default(), failures, 10*time.Second, 0, last.Add(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, "retry now: due at 2026-11-02T15:00:04Z: failure 4 in the window owes 8s, 4s after uptime credit, plus 0s of jitter", d.String())
	d, err = Decide(Strategy{Kind: Bounded, MaxAttempts: 4}, failures, 0, 0, last)
	require.NoError(t, err)
	assert.Equal(t, "fatal (attempts_exhausted) at failure 4 in the window", d.String())
	assert.Equal(t, "Action(0)", Decision{}.String())
}
