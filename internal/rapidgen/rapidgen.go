// Package rapidgen draws strategies for the property tests of more than
// one package.
package rapidgen

import (
	"time"

	"pgregory.net/rapid"

	"github.com/retrypolicy/retrypolicy"
)

// LoopStrategy draws a valid strategy whose crash loop settles within a
// few thousand failures: delays of at least a 200th of the window.
func LoopStrategy(t *rapid.T) retrypolicy.Strategy {
	kind := rapid.SampledFrom([]retrypolicy.StrategyKind{retrypolicy.None, retrypolicy.Bounded, retrypolicy.UnlessStopped}).Draw(t, "strategy")
	if kind == retrypolicy.None {
		return retrypolicy.Strategy{Kind: kind}
	}
	window := time.Hour
	s := retrypolicy.Strategy{Kind: kind}
	if kind == retrypolicy.Bounded {
		window = time.Duration(rapid.Int64Range(10, 7200).Draw(t, "window_secs")) * time.Second
		s.Window, s.MaxAttempts = window, rapid.IntRange(1, 40).Draw(t, "max_attempts")
	}
	least := max(window/200, time.Second)
	s.Backoff = retrypolicy.Backoff{
		Kind:      rapid.SampledFrom([]retrypolicy.BackoffKind{retrypolicy.Fixed, retrypolicy.Exponential, retrypolicy.ExponentialWithJitter}).Draw(t, "backoff"),
		BaseDelay: time.Duration(rapid.Int64Range(int64(least/time.Second), int64(least/time.Second)*20).Draw(t, "base_delay_secs")) * time.Second,
	}
	if s.Backoff.Kind != retrypolicy.Fixed {
		s.Backoff.Multiplier = rapid.SampledFrom([]float64{1, 1.5, 2, 3}).Draw(t, "multiplier")
		if rapid.Bool().Draw(t, "capped") {
			s.Backoff.MaxDelay = s.Backoff.BaseDelay * time.Duration(rapid.Int64Range(1, 100).Draw(t, "cap_steps"))
		}
	}
	return s
}

// GrowingBackoff draws an exponential backoff, with jitter or without, in
// seconds or milliseconds, multipliers close to 1 among them, capped or
// not. (The core's own tests, which cannot import this package, draw the
// same in their genGrowingBackoff.)
func GrowingBackoff(t *rapid.T) retrypolicy.Backoff {
	b := retrypolicy.Backoff{
		Kind: rapid.SampledFrom([]retrypolicy.BackoffKind{retrypolicy.Exponential, retrypolicy.ExponentialWithJitter}).Draw(t, "backoff.kind"),
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
