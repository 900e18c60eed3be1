package retrypolicy

import (
	"math"
	"time"
)

// Credited returns the delay a job owes after the window's n-th failure once
// its last run's uptime has paid part of the backoff back.
//
// Each step of the backoff is paid back by the uptime, starting from the
// largest: a run at least as long as the delay owed moves the job down one
// step, the rest of the uptime pays the next step, and so on. With the
// default backoff and n = 4 the job owes 8 s; an uptime of 10 s pays the 8
// and leaves 2, short of the next step (4 s), so it waits 4 s; 15 s pays
// 8, 4 and 2, so it waits 1 s. Credit never goes below the first step and
// never lengthens the delay: for a multiplier below 1 it changes nothing.
//
// n below 1 counts as 1; negative uptime counts as zero. The cost does not
// grow with n: the steps at the cap are paid in one division, an uptime that
// covers every step is recognised at once, and below the cap at most
// log(cap/base)/log(multiplier) steps are paid one by one (12 for the
// default backoff). That bound is large only for a multiplier very close to
// 1 (a million steps at 1.00002 with no cap); the steps paid never exceed n
// nor uptime/base either.
func (b Backoff) Credited(n int, uptime time.Duration) time.Duration {
	_, credited := b.credit(n, uptime)
	return credited
}

// credit returns the delay owed after the n-th failure and the delay after
// the uptime credit, computing the owed one once for both.
func (b Backoff) credit(n int, uptime time.Duration) (owed, credited time.Duration) {
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
		top := b.firstAtLimit(base, limit, n)
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

// firstAtLimit returns the smallest k in [1, n] whose delay is limit, given
// that delay(n) is. It needs Multiplier > 1, so that delays never decrease
// with k; it starts from the closed-form estimate
// 1 + log(limit/base)/log(Multiplier) and corrects it with exact checks.
func (b Backoff) firstAtLimit(base, limit time.Duration, n int) int {
	at := func(k int) bool { return b.expDelay(base, limit, k) >= limit }
	if base <= 0 {
		return n // unreachable for a valid Backoff: delay(n) would be 0
	}
	est := 1 + math.Ceil(math.Log(float64(limit)/float64(base))/math.Log(b.Multiplier))
	k := n
	if est >= 1 && est < float64(n) {
		k = int(est)
	}
	// Invariant from here: at(hi) is true. Search below it for the first
	// true, trying the estimate's neighbours before halving.
	lo, hi := 0, n // at(lo) is false by convention (lo = 0 means "none below")
	if at(k) {
		hi = k
		if k > 1 && !at(k-1) {
			return k
		}
	} else {
		lo = k
		if at(k + 1) {
			return k + 1
		}
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if at(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// creditReference is the uptime-credit rule exactly as the semantics state
// it, one step at a time. It is the oracle for Credited in the tests; its
// cost grows with n.
func (b Backoff) creditReference(n int, uptime time.Duration) time.Duration {
	if n < 1 {
		n = 1
	}
	c := max(uptime, 0)
	s := n
	for s > 1 && c >= b.Delay(s) {
		c -= b.Delay(s)
		s--
	}
	return min(b.Delay(n), b.Delay(s))
}
