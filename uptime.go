package retrypolicy

import (
	"math"
	"time"
)

// credit returns the delay owed after the window's n-th failure, and that
// delay once the last run's uptime has paid part of the backoff back: each
// step is paid from the largest down while the uptime covers it, and the job
// owes the step it stopped on. Credit never goes below the first step and
// never lengthens the delay. n below 1 counts as 1; negative uptime as zero.
func (b *Backoff) credit(n int, uptime time.Duration) (owed, credited time.Duration) {
	if n < 1 {
		n = 1
	}
	base := clampDelay(b.BaseDelay)
	if !b.Kind.exponential() || base == 0 {
		return base, base // every step is the same (0 only on an invalid Backoff)
	}
	limit := b.limit()
	owed = b.expDelay(base, limit, n)
	if uptime < owed || n == 1 || !(b.Multiplier > 1) {
		// The uptime does not pay the top step, there is no step below, or
		// the steps do not grow: for a multiplier of at most 1 every lower
		// step is at least the owed one, so min(owed, delay(s)) is owed
		// whatever step s the credit reaches.
		return owed, owed
	}

	if uptime/limit >= time.Duration(n-1) {
		// Every step owes at most limit, so the uptime pays all n-1 steps
		// above the first: the loop ends on step 1.
		return owed, min(owed, b.expDelay(base, limit, 1))
	}
	c, s, d := uptime, n, owed // d is delay(s) whenever it is known
	// Steps at the cap, from n down to max(top, 2), each owe exactly limit.
	if owed >= limit {
		est := 1 + math.Ceil(math.Log(float64(limit)/float64(base))/math.Log(b.Multiplier))
		top := firstTrue(1, n, int(min(max(est, 1), float64(n))), func(k int) bool { return b.expDelay(base, limit, k) >= limit })
		low := max(top, 2)
		steps := n - low + 1
		paid := min(steps, int(c/limit))
		if paid < steps {
			return owed, owed // stopped on a step at the cap: owed is limit too
		}
		c -= time.Duration(paid) * limit
		s = low - 1
		d = b.expDelay(base, limit, s)
	}
	// Steps below the cap grow geometrically; pay them one by one.
	for s > 1 && c >= d {
		c -= d
		s--
		d = b.expDelay(base, limit, s)
	}
	return owed, min(owed, d)
}

// firstTrue returns the smallest k in [lo, hi] for which ok(k) holds, given
// that ok holds at hi and is false then true along k. It starts at guess and
// gallops outwards, so a guess off by e costs O(log e) calls of ok.
func firstTrue(lo, hi, guess int, ok func(int) bool) int {
	guess = min(max(guess, lo), hi)
	// Bracket the answer in (below, above]: ok(above), and below < lo or
	// !ok(below).
	below, above := guess, guess
	if ok(guess) {
		for step := 1; ; step *= 2 {
			if step > above-lo {
				below = lo - 1
				break
			}
			if below = above - step; !ok(below) {
				break
			}
			above = below
		}
	} else {
		for step := 1; ; step *= 2 {
			if step >= hi-below {
				above = hi
				break
			}
			if above = below + step; ok(above) {
				break
			}
			below = above
		}
	}
	for above-below > 1 {
		mid := below + (above-below)/2
		if ok(mid) {
			above = mid
		} else {
			below = mid
		}
	}
	return above
}
