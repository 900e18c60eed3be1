package retrypolicy

import (
	"math"
	"math/bits"
	"time"
)

// delay returns the delay owed after the window's k-th failure (k below 1
// counts as 1): BaseDelay for Fixed, BaseDelay × Multiplier^(k-1) at most
// MaxDelay for the exponential kinds, rounded to the nanosecond and
// saturating at the ceiling. No input makes it negative or wraps it, valid
// or not.
func (b *Backoff) delay(k int) time.Duration {
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
func (b *Backoff) expDelay(base, limit time.Duration, k int) time.Duration {
	f := float64(base)
	switch m := b.Multiplier; {
	case k > 1024 && m >= 2:
		return limit // base × at least 2^1024: saturated, without squaring up to it
	case k > 1075 && m > 0 && m <= 0.5:
		return 0 // base × at most 2^-1075, below half a nanosecond
	case k > 1:
		f *= powUint(m, uint64(k-1))
	}
	if !(f < float64(limit)) { // also catches +Inf and NaN
		return limit
	}
	if !(f > 0) { // a negative multiplier on an unvalidated Backoff
		return 0
	}
	return time.Duration(math.Round(f))
}

// powUint returns m^e by binary exponentiation: at most 2·log2(e)
// multiplications, exact for any e when m is a power of two, and for
// integer m while the result stays below 2^53. Intermediate squares never
// overflow or underflow where the result does not: each is at most (m > 1)
// or at least (m < 1) the result itself. It stops as soon as the result is
// decided (infinite or zero), so it takes at most about a dozen steps for a
// multiplier of 2, whatever e.
func powUint(m float64, e uint64) float64 {
	r := 1.0
	for {
		if e&1 != 0 {
			r *= m
		}
		e >>= 1
		if e == 0 || r == 0 || math.Abs(r) > math.MaxFloat64 {
			return r
		}
		m *= m
		if m == 0 || m > math.MaxFloat64 { // m is a square: never negative
			return r * m // e's top bit is still to come: it multiplies r by m or more
		}
	}
}

// limit returns the longest delay the exponential kinds may owe: MaxDelay
// when it is set and below the ceiling, the ceiling otherwise.
func (b *Backoff) limit() time.Duration {
	if b.MaxDelay > 0 && b.MaxDelay < ceiling {
		return b.MaxDelay
	}
	return ceiling
}

// clampDelay brings d into [0, ceiling].
func clampDelay(d time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d > ceiling:
		return ceiling
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
	// The failure's three numbers are spread by odd multipliers and folded
	// into one word; two finalizer rounds then mix it with the seed.
	f := uint64(last.Unix())*0x9e3779b97f4a7c15 ^ uint64(last.Nanosecond())*0xc2b2ae3d27d4eb4f ^ uint64(n)*0x165667b19e3779f9
	return mix64(seed^mix64(f)) >> 11
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
