package retrypolicy

import (
	"bytes"
	"encoding/json"
	"github.com/stretchr/testify/require"
	"math"
	"time"

	"pgregory.net/rapid"
)

// Generators shared by the property tests. Each draw is labelled, so that a
// failing case reads as the inputs that broke the rule.

// genSeconds draws a whole number of seconds in [lo, hi], biased to small values.
func genSeconds(t *rapid.T, label string, lo, hi int64) time.Duration {
	return time.Duration(rapid.Int64Range(lo, hi).Draw(t, label)) * time.Second
}

// genMultiplier draws a valid multiplier: the usual ones, values near 1 on
// both sides, and the extremes of float64.
func genMultiplier(t *rapid.T, label string) float64 {
	return rapid.OneOf(
		rapid.SampledFrom([]float64{1, 1.5, 2, 3, 10, 0.5, 1.1, math.Nextafter(1, 2), math.Nextafter(1, 0), math.MaxFloat64, math.SmallestNonzeroFloat64}),
		rapid.Float64Range(0.01, 20),
		rapid.Float64Range(1, 1.001),
		rapid.Float64Range(math.SmallestNonzeroFloat64, math.MaxFloat64),
	).Draw(t, label)
}

// genBackoff draws a valid backoff of any kind.
func genBackoff(t *rapid.T) Backoff {
	kind := rapid.SampledFrom([]BackoffKind{Fixed, Exponential, ExponentialWithJitter}).Draw(t, "backoff.kind")
	base := rapid.OneOf(
		rapid.Int64Range(1, 120),
		rapid.Int64Range(1, maxDelaySecs),
	).Draw(t, "base_secs")
	b := Backoff{Kind: kind, BaseDelay: time.Duration(base) * time.Second}
	if kind == Fixed {
		return b
	}
	b.Multiplier = genMultiplier(t, "multiplier")
	if rapid.Bool().Draw(t, "capped") {
		b.MaxDelay = genSeconds(t, "max_delay_secs", base, maxDelaySecs)
	}
	return b
}

// genGrowingBackoff draws a valid exponential backoff with a multiplier of
// at least 1, those within a hair of 1 among them, and a base small enough
// for the credit to matter, in seconds or milliseconds.
func genGrowingBackoff(t *rapid.T) Backoff {
	b := Backoff{
		Kind: rapid.SampledFrom([]BackoffKind{Exponential, ExponentialWithJitter}).Draw(t, "backoff.kind"),
		Multiplier: rapid.OneOf(rapid.Float64Range(1, 4), rapid.Float64Range(1, 1.001),
			rapid.SampledFrom([]float64{1, 1.5, 2, 10, 1 + 0x1p-52, 1.000001, 1.0001})).Draw(t, "multiplier"),
	}
	unit := rapid.SampledFrom([]time.Duration{time.Second, time.Millisecond}).Draw(t, "unit")
	base := rapid.Int64Range(1, 3600).Draw(t, "base")
	b.BaseDelay = time.Duration(base) * unit
	if rapid.Bool().Draw(t, "capped") {
		b.MaxDelay = time.Duration(rapid.Int64Range(base, 1<<20).Draw(t, "max_delay")) * unit
	}
	return b
}

// genStrategy draws a valid strategy of any kind.
func genStrategy(t *rapid.T) Strategy {
	switch rapid.SampledFrom([]StrategyKind{None, Bounded, UnlessStopped}).Draw(t, "strategy") {
	case None:
		return Strategy{Kind: None}
	case Bounded:
		return Strategy{
			Kind:        Bounded,
			MaxAttempts: rapid.OneOf(rapid.IntRange(1, 20), rapid.IntRange(1, math.MaxInt)).Draw(t, "max_attempts"),
			Window:      genSeconds(t, "window_secs", 1, int64(maxWindow/time.Second)),
			Backoff:     genBackoff(t),
		}
	}
	return Strategy{Kind: UnlessStopped, Backoff: genBackoff(t)}
}

// genCanonicalDoc draws a valid strategy and returns its canonical JSON as a
// map, numbers kept as written, for tests that edit descriptors.
func genCanonicalDoc(t *rapid.T) map[string]any {
	canonical, err := genStrategy(t).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(canonical))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// genUptime draws an uptime: zero, small, a few hours, or anything up to
// the longest Duration (negative ones too, which count as zero).
func genUptime(t *rapid.T, label string) time.Duration {
	return time.Duration(rapid.OneOf(
		rapid.Just(int64(0)),
		rapid.Int64Range(0, int64(time.Hour)),
		rapid.Int64Range(-int64(time.Hour), 8*int64(time.Hour)),
		rapid.Int64Range(math.MinInt64, math.MaxInt64),
	).Draw(t, label))
}

// t0 is the fixed instant the example-based tests count from.
var t0 = time.Date(2026, 11, 2, 15, 4, 5, 0, time.UTC)

// failuresAt returns t0 plus each offset in seconds.
func failuresAt(offsets ...float64) []time.Time {
	out := make([]time.Time, len(offsets))
	for i, o := range offsets {
		out[i] = t0.Add(time.Duration(o * float64(time.Second)))
	}
	return out
}

// input is Decide's arguments apart from the strategy and the clock, for
// tests that decide several times on them.
type input struct {
	failures []time.Time
	uptime   time.Duration
	seed     uint64
}

// newHistory returns an empty history under s, compiled.
func newHistory(t require.TestingT, s Strategy) *History {
	p, err := Compile(s)
	require.NoError(t, err)
	return NewHistory(p)
}
