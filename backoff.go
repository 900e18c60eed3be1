package retrypolicy

import (
	"math"
	"math/bits"
	"time"
)

// Delay returns the delay owed after the window's k-th failure:
//
//	Fixed                          BaseDelay
//	Exponential, …WithJitter       BaseDelay × Multiplier^(k-1), at most MaxDelay
//
// k below 1 counts as 1. The result is rounded to the nanosecond and never
// exceeds the package's [MaxDelay] ceiling: a delay that would be longer,
// including one whose computation overflows, saturates at it. No input makes
// it negative or wraps it. Delay does not validate b; for an invalid Backoff
// it still returns a value in [0, MaxDelay].
func (b Backoff) Delay(k int) time.Duration {
	base := clampDelay(b.BaseDelay)
	if !b.Kind.exponential() {
		return base
	}
	if k < 1 {
		k = 1
	}
	return b.expDelay(base, b.limit(), k)
}

// expDelay is base × Multiplier^(k-1), saturated at limit (limit > 0).
func (b Backoff) expDelay(base, limit time.Duration, k int) time.Duration {
	f := float64(base)
	if k > 1 {
		f *= math.Pow(b.Multiplier, float64(k-1))
	}
	if !(f < float64(limit)) { // also catches +Inf and NaN
		return limit
	}
	if !(f > 0) { // a negative multiplier on an unvalidated Backoff
		return 0
	}
	return time.Duration(math.Round(f))
}

// limit returns the longest delay the exponential kinds may owe: MaxDelay
// when it is set and below the ceiling, the ceiling otherwise.
func (b Backoff) limit() time.Duration {
	if b.MaxDelay > 0 && b.MaxDelay < MaxDelay {
		return b.MaxDelay
	}
	return MaxDelay
}

// clampDelay brings d into [0, MaxDelay].
func clampDelay(d time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d > MaxDelay:
		return MaxDelay
	}
	return d
}

// jitterUnit derives the jitter's u in [0, 1) from the caller's seed and the
// failure being decided, as a 53-bit fraction u53/2^53. The same seed, newest
// failure and count always give the same u; the mixing spreads different
// seeds uniformly. The newest failure enters by its absolute instant
// (seconds and nanoseconds since the Unix epoch), so its location and any
// monotonic clock reading do not matter.
func jitterUnit(seed uint64, last time.Time, n int) uint64 {
	h := mix64(seed ^ 0x9e3779b97f4a7c15)
	h = mix64(h ^ uint64(last.Unix()))
	h = mix64(h ^ uint64(last.Nanosecond()))
	h = mix64(h ^ uint64(n))
	return h >> 11
}

// mix64 is the SplitMix64 finalizer: a bijection on uint64 whose output bits
// each depend on every input bit.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// jitterFor returns floor(u × credited / 4) for u = u53 / 2^53, computed
// exactly in 128-bit integer arithmetic: for credited > 0 the result is
// always strictly below credited/4, and it is 0 when credited is 0.
func jitterFor(credited time.Duration, u53 uint64) time.Duration {
	if credited <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(credited), u53)
	// (hi:lo) >> 55, where hi < 2^55 because credited < 2^63 and u53 < 2^53.
	return time.Duration(hi<<9 | lo>>55)
}
