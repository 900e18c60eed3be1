package retrypolicy

import (
	"math"
	"time"
)

// credit returns the delay owed after the window's n-th failure, and that
// delay once the last run's uptime has paid part of the backoff back: the
// steps are paid from the largest down while the uptime covers them, and
// the job owes the step it stopped on, never below the first and never
// more than it owed. n below 1 counts as 1; negative uptime as zero.
//
// The steps at the limit are paid in one division, those below it by
// comparing the uptime with sums of delays, which are differences of F (see
// steps): the cost does not grow with n.
func (st *steps) credit(n int, uptime time.Duration) (owed, credited time.Duration) {
	n = max(n, 1)
	if b := int64(n-1) / st.q; b < int64(len(st.delays)) && int64(uptime) < st.delays[b] {
		return time.Duration(st.delays[b]), time.Duration(st.delays[b]) // nothing paid: the usual case
	}
	if !st.grows {
		// Steps that do not grow: for a multiplier of at most 1 every
		// lower step owes at least as much, so credit changes nothing.
		o := st.delay(int64(n))
		return time.Duration(o), time.Duration(o)
	}
	q, u, top := st.q, int64(uptime), int64(n)
	var f fpair // F of top's block and the next, once known
	o := st.limit
	early := int64(-1) // the search's block, estimated before F is known
	var h dd           // H of top's block, when the closed form computed it
	if b := (top - 1) / q; !st.pastCap(b) {
		if st.closedForm(b) {
			early = st.earlyGuess(b, top, u)
		}
		if f, h = st.pairH(b); f.hi != saturated && f.delay() < st.limit {
			o = f.delay()
		}
	}
	if u < o || n == 1 {
		return time.Duration(o), time.Duration(o)
	}
	if o == st.limit {
		// The steps from max(first capped step, 2) to n each owe the limit.
		low := max(st.capAt()*q+1, 2)
		count := top - low + 1
		if u/st.limit < count {
			return time.Duration(o), time.Duration(o) // stopped on a capped step
		}
		u -= count * st.limit
		early, h = -1, dd{}
		if top = low - 1; top < 2 {
			return time.Duration(o), time.Duration(min(o, st.base))
		}
		f = st.pair((top - 1) / q)
	}
	// Steps 2..top are below the limit. W(k), the sum of steps 1..k, grows
	// with k; the loop stops on the largest s >= 2 that the uptime left
	// does not cover with the steps above it, W(top) - W(s-1) > u: s is the
	// least s >= 2 with W(s) >= W(top) - u, or 1 when W(1) already is.
	bt := (top - 1) / q
	all := f.hi // W(top) = q·F(bt) + j·D(bt), F(bt+1) when q = 1
	if q > 1 {
		j := top - bt*q
		all = f.lo.mul64(uint64(q - j)).add(f.hi.mul64(uint64(j)))
	}
	if !u64(uint64(u)).add(u64(uint64(st.base))).less(all) {
		return time.Duration(o), time.Duration(min(o, st.base))
	}
	target := all.sub(u64(uint64(u)))
	// s is in the least block b whose end, W(q(b+1)) = q·F(b+1), reaches
	// the target, and owes D(b).
	if bt+1 < int64(len(st.table)) {
		b := st.searchTable(bt, target)
		return time.Duration(o), time.Duration(min(o, st.table[b+1].sub(st.table[b]).int64()))
	}
	reaches := func(f u128) bool { return !f.mul64(uint64(q)).less(target) }
	// The estimate is all but always the block: one pair checks it. The
	// early estimate needs no F, so the processor works it out while it
	// computes bt's pair.
	g := early
	if g < 0 {
		g = st.guessBlock(bt, target)
	}
	if g != bt { // else f is already g's pair
		var ok bool
		if f, ok = st.backPair(h, bt, bt-g); !ok { // two products where H(bt) is known
			f = st.pair(g)
		}
	}
	if reaches(f.hi) && (g == 0 || !reaches(f.lo)) {
		return time.Duration(o), time.Duration(min(o, f.delay()))
	}
	// Beyond the table each F costs a closed form: remember the last few.
	var memo [4]struct {
		b1 int64 // b+1, so that the zero value remembers nothing
		f  u128
	}
	next := 0
	cum := func(b int64) u128 {
		for _, m := range memo {
			if m.b1 == b+1 {
				return m.f
			}
		}
		v := st.cum(b)
		memo[next] = struct {
			b1 int64
			f  u128
		}{b + 1, v}
		next = (next + 1) % len(memo)
		return v
	}
	b := int64(firstTrue(0, int(bt), int(g), func(b int) bool { return reaches(cum(int64(b) + 1)) }))
	return time.Duration(o), time.Duration(min(o, cum(b+1).sub(cum(b)).int64()))
}

// creditTabled returns what credit returns, for blocks of one failure
// where F(n) is in the table and the n-th step owes less than the limit,
// and an uptime that covers that step: the decision calls it for those
// steps, which need none of credit's detours.
func (st *steps) creditTabled(n int, uptime time.Duration) (owed, credited time.Duration) {
	o := st.delays[n-1]
	if n == 1 {
		return time.Duration(o), time.Duration(o)
	}
	u, all := int64(uptime), st.table[n] // W(n), the sum of steps 1..n
	if !u64(uint64(u)).add(u64(uint64(st.base))).less(all) {
		return time.Duration(o), time.Duration(min(o, st.base))
	}
	b := st.searchTable(int64(n-1), all.sub(u64(uint64(u))))
	return time.Duration(o), time.Duration(min(o, st.delays[b]))
}

// searchTable returns the least block b <= bt whose end, W(q(b+1)) =
// q·F(b+1), reaches target, for F(bt+1) in the table and reaching it.
func (st *steps) searchTable(bt int64, target u128) int64 {
	lo, hi := int64(0), bt
	for lo < hi {
		h := int64(uint64(lo+hi) >> 1)
		end := st.table[h+1]
		if st.q > 1 {
			end = end.mul64(uint64(st.q))
		}
		if end.less(target) {
			lo = h + 1
		} else {
			hi = h
		}
	}
	return lo
}

// fpair holds F(b) and F(b+1) for a block b below the limit.
type fpair struct{ lo, hi u128 }

// delay returns D(b).
func (f fpair) delay() int64 { return f.hi.sub(f.lo).int64() }

// pair returns F(b) and F(b+1), in the closed form's range from one
// exponential.
func (st *steps) pair(b int64) fpair {
	f, _ := st.pairH(b)
	return f
}

// pairH is pair, which also returns H = c·e^x at x = b × ln M when it
// computed it (in the closed form's range), and zero otherwise.
func (st *steps) pairH(b int64) (fpair, dd) {
	if b == st.capBlock-1 && st.belowCap.hi != (u128{}) {
		return st.belowCap, dd{}
	}
	if !st.closedForm(b) {
		return fpair{st.cum(b), st.cum(b + 1)}, dd{}
	}
	if !st.closed {
		st.prepareClosed(0)
	}
	f, h, ok := st.closedPair(b)
	if !ok {
		// Not settled: by the definition, without trying closedPair
		// again as cum would.
		f = fpair{st.definedF(b), st.definedF(b + 1)}
	}
	return f, h
}

// backPair returns F(b - d) and F(b - d + 1) from h = H(b), for 0 < d <
// maxBack and b - d in the closed form's range, and whether it settled
// them: H(b - d) = h × M^-d, from the tables in two products.
func (st *steps) backPair(h dd, b, d int64) (fpair, bool) {
	if st.back == nil || h.hi == 0 || d <= 0 || d >= maxBack || !st.closedForm(b-d) {
		return fpair{}, false
	}
	return st.settle(st.backH(h, d))
}

// backH returns h × M^-d, 0 <= d < maxBack, by the tables.
func (st *steps) backH(h dd, d int64) dd {
	return h.mul(st.back.lo[d&255].mul(st.back.hi[d>>8]))
}

// guessBlock estimates the least block b <= bt with q·F(b+1) >= target.
func (st *steps) guessBlock(bt int64, target u128) int64 {
	return st.guessAt(bt, float64(target.hi)*0x1p64+float64(target.lo))
}

// guessAt estimates the least block b <= bt with q·F(b+1) >= t by the
// delays' continuous form, q·base·(M^(b+1) - 1)/(M - 1); firstTrue finds
// the exact block from there.
func (st *steps) guessAt(bt int64, t float64) int64 {
	var y float64 // b + 1, b the block sought
	if st.closed {
		y = st.tab.ln1p(t*st.guess) * st.perLnM
	} else {
		// Not prepared (Decide on a plain Strategy): computed here
		// rather than with the closed form's other constants, which
		// cost a microsecond.
		lnM := float64(st.q) * math.Log(st.m)
		y = math.Log1p(t*math.Expm1(lnM)/(float64(st.q)*float64(st.base))) / lnM
	}
	b := math.Ceil(y - 1)
	if !(b > 0) {
		return 0
	}
	return int64(min(b, float64(bt)))
}

// earlyGuess estimates, before F is computed, the block that the search
// for an uptime u ends on, for top's block bt in the closed form's range:
// -1 when u likely does not cover bt's step, or covers them all.
func (st *steps) earlyGuess(bt, top, u int64) int64 {
	st.prepareClosed(0)
	x := float64(bt) * st.lnMf
	if !(x < 59) {
		return -1
	}
	// H = c × M^bt, from the tables of expTimes, to about 2^-45.
	k := int64(x*(65536/math.Ln2) + 0.5)
	r := x - float64(k)*(math.Ln2/65536)
	h := st.tab.coarse[k>>8&255].hi * st.tab.fine[k&255].hi * (1 + r + r*r*0.5) * st.c.hi *
		math.Float64frombits(uint64(1023+k>>16)<<52)
	d := h * st.dM.hi // D(bt) = c × (M - 1) × M^bt
	w := float64(st.q)*(h-st.c.hi) + float64(top-bt*st.q)*d
	if float64(u) < d || float64(u)+float64(st.base) >= w {
		return -1
	}
	return st.guessAt(bt, w-float64(u))
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
