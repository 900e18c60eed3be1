package retrypolicy

import (
	"io"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// genExtremeBackoff draws valid backoffs at the edges of every range:
// multipliers from the smallest to the largest float64 and within a hair
// of 1, delays from 1 ms up to the longest Duration in whole seconds.
func genExtremeBackoff(t *rapid.T) Backoff {
	secs := rapid.OneOf(rapid.Just(int64(1)), rapid.Just(maxDelaySecs), rapid.Int64Range(1, maxDelaySecs),
		rapid.Int64Range(maxDelaySecs-10, maxDelaySecs))
	b := Backoff{Kind: rapid.SampledFrom([]BackoffKind{Fixed, Exponential, ExponentialWithJitter}).Draw(t, "backoff.kind")}
	base := time.Duration(secs.Draw(t, "base_secs")) * time.Second
	if rapid.Bool().Draw(t, "milliseconds") {
		base = time.Duration(rapid.Int64Range(1, 5000).Draw(t, "base_ms")) * time.Millisecond
	}
	b.BaseDelay = base
	if b.Kind != Fixed {
		b.Multiplier = rapid.OneOf(rapid.Just(math.MaxFloat64), rapid.Float64Range(1, math.MaxFloat64),
			rapid.Just(math.SmallestNonzeroFloat64), rapid.Float64Range(math.SmallestNonzeroFloat64, 1),
			rapid.Float64Range(1, 1.000001), rapid.SampledFrom([]float64{1 + 0x1p-52, 1.000001, 1.0001})).Draw(t, "multiplier")
		if rapid.Bool().Draw(t, "capped") {
			b.MaxDelay = time.Duration(rapid.Int64Range(int64(base/time.Millisecond), maxDelaySecs*1000).Draw(t, "max_ms")) * time.Millisecond
		}
	}
	return b
}

// genExtremeStrategy draws valid strategies at the edges of every range,
// max_attempts up to the largest int.
func genExtremeStrategy(t *rapid.T) Strategy {
	b := genExtremeBackoff(t)
	if rapid.Bool().Draw(t, "bounded") {
		return Strategy{Kind: Bounded, MaxAttempts: rapid.OneOf(rapid.Just(math.MaxInt), rapid.IntRange(1, math.MaxInt)).Draw(t, "max_attempts"),
			Window: maxWindow, Backoff: b}
	}
	return Strategy{Kind: UnlessStopped, Backoff: b}
}

// TestExtremesNeverBreakTheDecision pins saturation at the extremes: for
// strategies at the edges of every range and up to a million failures in
// the window (or any count), the decision keeps every bound, and owed delays
// never decrease as failures grow for a multiplier of at least 1.
func TestExtremesNeverBreakTheDecision(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genExtremeStrategy(t)
		require.NoError(t, s.Validate())
		n := rapid.OneOf(rapid.IntRange(1, 1000000), rapid.IntRange(1, math.MaxInt-1)).Draw(t, "n")
		last := time.Unix(rapid.Int64Range(-1e10, 1e10).Draw(t, "last"), 0)
		uptime := genUptime(t, "uptime")
		p, err := Compile(s)
		require.NoError(t, err)
		var d Decision
		p.decideCounted(&d, counted{n, instantOf(last), last.Location()}, asked{uptime, rapid.Uint64().Draw(t, "seed"), last})
		checkDecision(t, s, d, last)
		if d.Action == Fatal {
			return
		}
		if s.Backoff.Kind != Fixed && s.Backoff.Multiplier >= 1 {
			var next Decision
			p.decideCounted(&next, counted{n + 1, instantOf(last), last.Location()}, asked{uptime, 0, last})
			if next.Action != Fatal && next.Owed < d.Owed {
				t.Fatalf("owed %v after %d failures, %v after %d", d.Owed, n, next.Owed, n+1)
			}
		}
		if s.Backoff.MaxDelay > 0 && d.Owed > s.Backoff.MaxDelay {
			t.Fatalf("owed %v above the cap %v", d.Owed, s.Backoff.MaxDelay)
		}
	})
}

// TestJSONIntegersAtEveryMagnitude pins that any integer written in a
// descriptor, up to and past int64, is either accepted within its range or
// rejected naming its field.
func TestJSONIntegersAtEveryMagnitude(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := rapid.OneOf(rapid.Int64(), rapid.Int64Range(-2, 2), rapid.Just(int64(math.MaxInt64)), rapid.Just(maxDelaySecs), rapid.Just(maxDelaySecs+1)).Draw(t, "value")
		text := strconv.FormatInt(v, 10)
		if v != 0 && rapid.Bool().Draw(t, "ten times larger") {
			text += "0"
		}
		field := rapid.SampledFrom([]string{"base_delay_secs", "max_delay_secs"}).Draw(t, "field")
		doc := `{"strategy":"unless_stopped","backoff":{"kind":"exponential","` + field + `":` + text + `}}`
		s, err := Parse([]byte(doc))
		if err != nil {
			assert.Equal(t, []string{"backoff." + field}, errorPaths(t, err), doc)
			return
		}
		assert.LessOrEqual(t, s.Backoff.delay(math.MaxInt), ceiling)
		assert.GreaterOrEqual(t, s.Backoff.delay(1), time.Duration(0))
	})
}

func TestAMillionFailuresInTheWindow(t *testing.T) {
	const n = 1000000
	failures := make([]time.Time, n)
	for i := range failures {
		failures[i] = t0.Add(-time.Duration(i) * time.Millisecond) // all within the hour
	}
	h := newHistory(t, Default())
	for i := n - 1; i >= 0; i-- {
		require.NoError(t, h.Record(failures[i], 90*time.Hour))
	}
	d, err := Decide(Default(), failures, 90*time.Hour, 0, t0)
	require.NoError(t, err)
	assert.Equal(t, n, d.InWindow)
	assert.Equal(t, time.Hour, d.Owed)
	// 90 h pays 90 capped steps back; the next step still owes the cap.
	assert.Equal(t, time.Hour, d.Delay)
	hd, err := h.Decide(0, t0)
	require.NoError(t, err)
	assert.Equal(t, d, hd)
}

// TestClockTrouble: clocks that disagree, histories out of order, repeated
// instants, the zero time, other locations and monotonic readings all give
// the answer docs/semantics.md gives, never an error or a panic.
func TestClockTrouble(t *testing.T) {
	s := Default()
	sorted := failuresAt(-3, -2, -1, 0)
	want, err := Decide(s, sorted, 0, 0, t0)
	require.NoError(t, err)
	require.Equal(t, 8*time.Second, want.Delay)

	decide := func(failures []time.Time, now time.Time) Decision {
		t.Helper()
		d, err := Decide(s, failures, 0, 0, now)
		require.NoError(t, err)
		return d
	}
	t.Run("now before the newest failure waits", func(t *testing.T) {
		d := decide(sorted, t0.Add(-time.Hour))
		assert.Equal(t, Wait, d.Action)
		assert.True(t, d.Due.Equal(want.Due))
	})
	t.Run("failures after now: the window still ends at the newest", func(t *testing.T) {
		d := decide(failuresAt(100, 101), t0)
		assert.Equal(t, Wait, d.Action)
		assert.True(t, d.Due.Equal(t0.Add(103*time.Second)))
	})
	t.Run("unsorted", func(t *testing.T) {
		d := decide(failuresAt(-1, 0, -3, -2), t0)
		assert.Equal(t, want, d)
	})
	t.Run("repeated instants count each", func(t *testing.T) {
		d := decide(failuresAt(0, 0, 0, 0), t0)
		assert.Equal(t, 4, d.InWindow)
		assert.Equal(t, 8*time.Second, d.Delay)
	})
	t.Run("the zero time", func(t *testing.T) {
		d := decide([]time.Time{{}}, time.Time{})
		assert.Equal(t, Wait, d.Action)
		assert.True(t, d.Due.Equal(time.Time{}.Add(time.Second)))
		d = decide([]time.Time{{}, t0}, t0)
		assert.Equal(t, 1, d.InWindow, "year 1 is far outside the window")
	})
	t.Run("other locations", func(t *testing.T) {
		zones := []*time.Location{time.FixedZone("A", 5*3600), time.FixedZone("B", -11*3600), time.UTC, time.Local}
		mixed := make([]time.Time, len(sorted))
		for i, f := range sorted {
			mixed[i] = f.In(zones[i])
		}
		d := decide(mixed, t0.In(zones[1]))
		assert.Equal(t, want.InWindow, d.InWindow)
		assert.True(t, d.Due.Equal(want.Due))
		assert.Equal(t, want.Action, d.Action)
	})
	t.Run("monotonic readings", func(t *testing.T) {
		base := time.Now()
		withMono := []time.Time{base.Add(-3 * time.Second), base.Add(-2 * time.Second), base.Add(-time.Second), base}
		stripped := make([]time.Time, len(withMono))
		for i, f := range withMono {
			stripped[i] = f.Round(0)
		}
		a, b := decide(withMono, base.Add(5*time.Second)), decide(stripped, base.Add(5*time.Second).Round(0))
		assert.Equal(t, a.InWindow, b.InWindow)
		assert.True(t, a.Due.Equal(b.Due))
		assert.Equal(t, a.Action, b.Action)
	})
}

// TestConcurrentUse shares one strategy, one failure slice and one History
// across goroutines that decide, record and save at once; run it with
// -race. A Strategy, a failure slice (read only) and a History are safe to
// share.
func TestConcurrentUse(t *testing.T) {
	s := Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: ExponentialWithJitter, BaseDelay: time.Second, Multiplier: 2, MaxDelay: time.Hour}}
	shared := failuresAt(-40, -30, -20, -10, 0)
	want, err := Decide(s, shared, 0, 7, t0)
	require.NoError(t, err)
	h := newHistory(t, s)

	const workers, rounds = 16, 200
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				d, err := Decide(s, shared, 0, 7, t0)
				if err != nil || d != want {
					errs <- io.ErrUnexpectedEOF
				}
				if err := h.Record(t0.Add(time.Duration(w*rounds+r)*time.Millisecond), time.Second); err != nil {
					errs <- err
				}
				if _, err := h.Decide(uint64(w), t0); err != nil {
					errs <- err
				}
				if r%20 == w%20 { // encoding copies the whole history: now and then
					if _, err := h.MarshalJSON(); err != nil {
						errs <- err
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	d, err := h.Decide(0, t0)
	require.NoError(t, err)
	assert.Equal(t, workers*rounds, d.InWindow, "every failure recorded, none lost")
	// The newest failure is the last one recorded: 1 s owed at the cap's
	// step is an hour, due an hour after it.
	assert.True(t, d.Due.Add(-d.Delay-d.Jitter).Equal(t0.Add(time.Duration(workers*rounds-1)*time.Millisecond)))
}

// TestConcurrentPastTheTable shares one Policy whose decisions pay steps
// past its table (a multiplier of 1.000001, 5,000 failures in the window, a
// run that pays some steps) across goroutines; run it with -race. Deciding
// writes nothing to the Policy, and every goroutine gets the decision made
// alone.
func TestConcurrentPastTheTable(t *testing.T) {
	p, err := Compile(Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Exponential, BaseDelay: time.Second, Multiplier: 1.000001}})
	require.NoError(t, err)
	failures := make([]time.Time, 5000)
	for i := range failures {
		failures[i] = t0.Add(time.Duration(i-len(failures)) * time.Millisecond)
	}
	want, err := p.Decide(failures, 90*time.Second, 7, t0)
	require.NoError(t, err)
	require.Less(t, want.Delay, want.Owed, "the run pays some steps")

	const workers, rounds = 8, 50
	var wg sync.WaitGroup
	bad := make(chan Decision, workers*rounds)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				if d, err := p.Decide(failures, 90*time.Second, 7, t0); err != nil || d != want {
					bad <- d
				}
			}
		}()
	}
	wg.Wait()
	close(bad)
	for d := range bad {
		t.Fatalf("got %+v, alone %+v", d, want)
	}
}
