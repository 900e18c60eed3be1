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
