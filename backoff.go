package retrypolicy

import (
	"math"
	"math/bits"
	"time"
)

// steps is a backoff compiled for deciding: its delays, in nanoseconds.
//
// For Fixed, and for a multiplier of 1, every delay is the base. For a
// multiplier below 1 the delay after the window's k-th failure is
// base × m^(k-1), rounded; credit never changes a delay that does not grow.
//
// For a multiplier m above 1, delays are defined through their sums, so
// that the uptime credit can pay any number of them in closed form. The
// failures are taken in blocks of q (q = 1 but for multipliers within
// about 10^-9 of 1); M = m^q, and block b owes
//
//	D(b) = F(b+1) - F(b),  F(b) = floor(G(b)),  G(b) = base × (M^b - 1)/(M - 1)
//
// so that D(b) is base × M^b within a nanosecond and the sum of any run of
// blocks is a difference of two F. G is exact for a whole multiplier, and
// computed in double-double otherwise, to within a hundredth of a
// nanosecond; q is the least block for which base × (M - 1) >= 3 ns and
// M - 1 >= 2^-30, so that the exact increments of G exceed what rounding
// can take away and D never decreases. The k-th failure owes
// min(limit, D((k-1)/q)), limit being MaxDelay or the 100-year ceiling.
//
// The double-double G that F floors costs an expm1 of some 300 ns. A
// faster exponential (expTimes) gives G to within a margin that covers the
// error of both: where no whole number lies that close, the two floors
// agree, and otherwise cum computes G as defined. The credit's search,
// which needs F at a block below one whose H it has, reaches it by
// multiplying by M^-d instead (backSteps), within the same margin.
type steps struct {
	base, limit int64
	m           float64
	grows       bool       // an exponential kind with m > 1: the sums above apply
	whole       uint64     // m when it is a whole number from 2 to 2^32, else 0
	q           int64      // failures per block
	lnM, dM     dd         // ln M and M - 1, for the closed form
	c, mM       dd         // base/(M - 1), so that G(b) = c × (M^b - 1), and M
	lnMf, guess float64    // ln M and (M - 1)/(q × base) in float64, for estimates
	perLnM      float64    // 1/lnMf, which estimates multiply by rather than divide
	tab         *expTables // closedPair's tables, shared by every strategy
	closed      bool       // lnM, dM, c, mM, lnMf, guess, perLnM and tab are set
	capBlock    int64      // the first block that owes the limit; -1 until found
	far         int64      // a block past which D is over e × limit; 0 until found
	table       []u128     // F(0), F(1), …, computed at Compile
	delays      []int64    // min(limit, D(b)) for the blocks the table covers
	belowCap    fpair      // F of the last block below the cap and of the cap's, past the table
	back        *backSteps // M^-d for the credit's search, when it may search in closed form
}

// backSteps holds lo[i] = M^-i and hi[i] = M^(-256 i) for i below 256, each
// e^(-x) for x a multiple of ln M: the credit's search finds H d blocks
// below a block whose H it has, for d below 2^16, as that H × lo[d mod 256]
// × hi[d / 256], two products in place of an exponential.
type backSteps struct{ lo, hi [256]dd }

// maxBack is the most blocks below top's block that backSteps reaches.
const maxBack = 1 << 16

// hornerMax is the last block whose G is summed term by term (Horner's
// rule, exact whenever the terms are) rather than in closed form.
const hornerMax = 128

// minGrowth is the least M - 1 the blocks are sized for: below it, G would
// need more precision than a double-double has.
const minGrowth = 0x1p-30

// init compiles b, a valid backoff. It computes only what every decision
// needs; prepare adds the rest.
func (st *steps) init(b *Backoff) {
	*st = steps{base: int64(clampDelay(b.BaseDelay)), limit: int64(ceiling), m: b.Multiplier, q: 1, capBlock: -1}
	if !b.Kind.exponential() || st.m == 1 {
		st.m = 1 // every delay is the base
		return
	}
	if b.MaxDelay > 0 && b.MaxDelay < ceiling {
		st.limit = int64(b.MaxDelay)
	}
	st.grows = st.m > 1
	if !st.grows {
		return
	}
	if st.m == math.Trunc(st.m) && st.m <= 1<<32 {
		// D(b) = base × m^b exactly: the cap's block is found by
		// multiplying.
		st.whole = uint64(st.m)
		st.capBlock = 0
		for v := uint64(st.base); v < uint64(st.limit); v *= st.whole {
			st.capBlock++
			if v > math.MaxUint64/st.whole {
				break // the next product is past the limit
			}
		}
		st.far = st.capBlock
		return
	}
	floor := max(3/float64(st.base), minGrowth)
	if st.m-1 < floor {
		st.prepareClosed(floor)
	}
}

// prepare computes everything a decision may need, so that deciding never
// writes to st: the closed form's constants, the cap's block, the table of
// F up to the cap (at most hornerMax+2 entries), and, for a strategy whose
// credit may search past that table, backSteps (8 KB, about 50 µs).
func (st *steps) prepare() {
	if !st.grows {
		return
	}
	st.prepareClosed(0)
	st.farAt()
	cb := st.capAt()
	table := make([]u128, min(cb, hornerMax)+2)
	for b := range table {
		table[b] = st.cum(int64(b))
	}
	delays := make([]int64, len(table)-1)
	for b := range delays {
		delays[b] = min(table[b+1].sub(table[b]).int64(), st.limit)
	}
	st.table, st.delays = table, delays
	if cb > int64(len(table))-1 {
		// An uptime that pays every capped step goes on below the cap:
		// the sums there are computed once.
		st.belowCap = fpair{st.cum(cb - 1), st.cum(cb)}
	}
	if cb > int64(len(table)) && st.whole == 0 && float64(maxBack)*st.lnM.hi < 59 {
		// The credit may search in closed form, within the exponential's
		// range: 512 exponentials here save one in each such search.
		one := dd{1, 0}
		back := new(backSteps)
		for i := range 256 {
			back.lo[i] = one.div(st.tab.expTimes(float64(i), st.lnM, one))
			back.hi[i] = one.div(st.tab.expTimes(float64(256*i), st.lnM, one))
		}
		st.back = back
	}
}

// prepareClosed computes ln M and M - 1, first sizing the blocks when
// floor > 0 (m - 1 < floor): q is the least block with M - 1 >= floor.
func (st *steps) prepareClosed(floor float64) {
	if st.closed || st.whole != 0 {
		return
	}
	lnm := logDD(st.m)
	if floor > 0 {
		// ln M ≈ q·ln m: start from q = floor/ln m, then find the least q
		// exactly.
		guess := int(math.Ceil(floor / lnm.hi))
		hi := 2*guess + 2
		st.q = int64(firstTrue(1, hi, guess, func(q int) bool {
			return lnm.mulFloat(float64(q)).expm1().hi >= floor
		}))
	}
	st.lnM = lnm.mulFloat(float64(st.q))
	if st.q == 1 {
		st.dM = dd{st.m, 0}.sub(dd{1, 0}) // exact
	} else {
		st.dM = st.lnM.expm1()
	}
	st.c = dd{float64(st.base), 0}.div(st.dM)
	st.tab = loadExpTables()
	st.mM = dd{1, 0}.add(st.dM)
	if st.q == 1 {
		st.mM = dd{st.m, 0}
	}
	st.lnMf = float64(st.q) * math.Log(st.m)
	st.guess = math.Expm1(st.lnMf) / (float64(st.q) * float64(st.base))
	st.perLnM = 1 / st.lnMf
	st.closed = true
}

// cum returns F(b), the sum of the delays of blocks 0 to b-1 (uncapped).
// b must not be far past the cap's block: F is only needed up to it.
func (st *steps) cum(b int64) u128 {
	switch {
	case b < int64(len(st.table)):
		return st.table[b]
	case b == 0:
		return u128{}
	case b == 1:
		return u64(uint64(st.base))
	case st.whole != 0:
		// base × (m^b - 1)/(m - 1), exactly: b is at most 64 here.
		sum, pow := u128{}, u64(1)
		for range b {
			sum = sum.add(pow)
			pow = pow.mul64(st.whole)
		}
		return sum.mul64(uint64(st.base))
	case st.q == 1 && b <= hornerMax:
		return st.horner(b)
	}
	st.prepareClosed(0)
	if f, _, ok := st.closedPair(b); ok {
		return f.lo
	}
	return st.definedF(b)
}

// definedF returns F(b) for a block b in the closed form's range by its
// definition, the floor of gDefined, or saturated where x is so large that
// the delays are far past any limit.
func (st *steps) definedF(b int64) u128 {
	x := st.lnM.mulFloat(float64(b))
	if x.hi > 60 {
		return saturated
	}
	return st.gExact(x)
}

// closedForm reports whether cum computes F(b) in closed form.
func (st *steps) closedForm(b int64) bool {
	return b >= int64(len(st.table)) && b > 1 && st.whole == 0 && (st.q > 1 || b > hornerMax)
}

// gExact returns F at x = b × ln M by its definition, the floor of gDefined.
func (st *steps) gExact(x dd) u128 { return st.gDefined(x).floor() }

// gDefined returns G at x = b × ln M as the delays define it: base ×
// expm1(x) / (M - 1), in double-double.
func (st *steps) gDefined(x dd) dd {
	return x.expm1().mulFloat(float64(st.base)).div(st.dM)
}

// closedMargin is how close to a whole number, relative to H = c × e^x,
// closedPair's G may come and still settle the floor. Both its G and the
// G that gExact floors are within 2^-95 × H of c × (e^x - 1)
// (TestClosedFormErrorBounds; the worst of a few thousand draws is 2^-99.4
// and 2^-100.7), so the two are less than the margin apart.
const closedMargin = 0x1p-93

// closedPair returns F(b) and F(b+1) for a block b in the closed form's
// range, from one expTimes: G(b) = H - c with H = c·e^x at x = b × ln M,
// and G(b+1) = H × M - c. It returns false when a whole number is too
// close to either G to be sure that gExact floors it the same way, or when
// x is near where cum saturates. It also returns H, which the credit's
// search steps back from (see backSteps), zero in that last case.
func (st *steps) closedPair(b int64) (fpair, dd, bool) {
	bf := float64(b)
	if !(bf*st.lnM.hi+st.lnM.hi < 59) {
		return fpair{}, dd{}, false
	}
	h := st.tab.expTimes(bf, st.lnM, st.c)
	f, ok := st.settle(h)
	return f, h, ok
}

// settle returns F(b) and F(b+1) from H = c·e^x at x = b × ln M, and
// whether both floors are settled: whether every value within the margin
// of each G has the same floor (see closedPair).
func (st *steps) settle(h dd) (fpair, bool) {
	h1 := h.mul(st.mM)
	g0, g1 := h.minus(st.c), h1.minus(st.c)
	// At least 2^-40: far more than the floors' own rounding.
	m0, m1 := max(h.hi*closedMargin, 0x1p-40), max(h1.hi*closedMargin, 0x1p-40)
	if !(g1.hi < 0x1p51) {
		if !(h1.hi < 0x1p100) {
			return fpair{}, false
		}
		lo, ok := settledFloorWide(g0, m0)
		hi, ok1 := settledFloorWide(g1, m1)
		return fpair{lo, hi}, ok && ok1
	}
	// Below 2^51, g = n + d with n = round(g.hi), which adding and
	// subtracting 1.5 × 2^52 computes; g.hi - n is exact, and |d| at most
	// about 1/2. Both floors are computed side by side.
	n0, n1 := (g0.hi+0x1.8p52)-0x1.8p52, (g1.hi+0x1.8p52)-0x1.8p52
	d0, d1 := (g0.hi-n0)+g0.lo, (g1.hi-n1)+g1.lo // within 2^-53
	f0, f1 := int64(n0), int64(n1)
	if d0 < 0 {
		f0--
	}
	if d1 < 0 {
		f1--
	}
	return fpair{u64(uint64(f0)), u64(uint64(f1))}, f0 >= 0 && math.Abs(d0) >= m0 && math.Abs(d1) >= m1
}

// settledFloorWide returns floor(g), for 0 <= g.hi < 2^100, and whether
// every value within margin of g has that floor.
func settledFloorWide(g dd, margin float64) (u128, bool) {
	fh := math.Floor(g.hi)
	s := (g.hi - fh) + g.lo // within 2^-53
	fs := math.Floor(s)
	left := s - fs
	ok := left >= margin && left <= 1-margin
	v := floatToU128(fh)
	if fs < 0 {
		return v.sub(u64(uint64(-fs))), ok
	}
	return v.add(u64(uint64(fs))), ok
}

// saturated stands for an F so far past the limit that its value does not
// matter: every delay from there on is the limit.
var saturated = u128{math.MaxUint64, math.MaxUint64}

// horner returns F(b) = floor(base × (1 + m + … + m^(b-1))) by Horner's
// rule: in float64 while every step is exact (they are for a multiplier of
// few bits, such as 1.5), in double-double from the first that is not,
// which gives the same values as double-double throughout would, since it
// too is exact as long as they are.
func (st *steps) horner(b int64) u128 {
	s := 1.0
	j := int64(1)
	for ; j < b; j++ {
		p, pe := twoProd(s, st.m)
		t, te := twoSum(p, 1)
		if pe != 0 || te != 0 {
			break
		}
		s = t
	}
	if j == b {
		if g, e := twoProd(s, float64(st.base)); e == 0 && g < 0x1p62 {
			return u64(uint64(g)) // G is exact: truncating it is its floor
		}
	}
	sd := dd{s, 0}
	for ; j < b; j++ {
		if sd = sd.mulFloat(st.m).add(dd{1, 0}); !(sd.hi < 0x1p100) {
			return saturated
		}
	}
	g := sd.mulFloat(float64(st.base))
	if !(g.hi < 0x1p126) {
		return saturated
	}
	return g.floor()
}

// blockDelay returns min(limit, D(b)).
func (st *steps) blockDelay(b int64) int64 {
	if st.pastCap(b) {
		return st.limit
	}
	f := st.pair(b)
	if f.hi == saturated {
		return st.limit
	}
	return min(f.delay(), st.limit)
}

// pastCap reports whether block b is known to owe the limit without
// computing D(b): past the cap's block when it is known, and past far, for
// the blocks that Horner's rule does not sum (it saturates by itself).
func (st *steps) pastCap(b int64) bool {
	switch {
	case st.capBlock >= 0:
		return b >= st.capBlock
	case st.q == 1 && b < hornerMax:
		return false
	}
	return b >= st.farAt()
}

// farAt returns a block past which base × M^b exceeds e × limit, so that
// D is the limit there without computing it (and F need not be computed
// so far out). The estimate's last bits may differ between platforms, but
// not the answer: near it, D is well past the limit either way.
func (st *steps) farAt() int64 {
	if st.far == 0 {
		lnm := float64(st.q) * math.Log(st.m)
		st.far = int64(math.Min((math.Log(float64(st.limit)/float64(st.base))+1)/lnm, math.MaxInt64/4)) + 1
	}
	return st.far
}

// capAt returns the first block whose delay is the limit, finding it once.
func (st *steps) capAt() int64 {
	if st.capBlock < 0 {
		st.capBlock = st.findCap()
	}
	return st.capBlock
}

func (st *steps) findCap() int64 {
	if st.base >= st.limit {
		return 0
	}
	// base × M^b reaches the limit near b = ln(limit/base)/ln M; firstTrue
	// finds the exact block from there.
	est := math.Log(float64(st.limit)/float64(st.base)) / (float64(st.q) * math.Log(st.m))
	return int64(firstTrue(0, int(st.farAt()), int(est), func(b int) bool { return st.blockDelay(int64(b)) >= st.limit }))
}

// delay returns the delay owed after the window's k-th failure (k >= 1).
func (st *steps) delay(k int64) int64 {
	switch {
	case st.grows:
		return st.blockDelay((k - 1) / st.q)
	case st.m < 1:
		return shrunk(st.base, st.m, k)
	}
	return st.base
}

// shrunk is base × m^(k-1) for 0 < m < 1, rounded.
func shrunk(base int64, m float64, k int64) int64 {
	if k > 1075 && m <= 0.5 {
		return 0 // base × at most 2^-1075: below half a nanosecond
	}
	return int64(math.Round(float64(base) * powUint(m, uint64(k-1))))
}

// powUint returns m^e, 0 < m < 1, by binary exponentiation: at most
// 2·log2(e) multiplications, stopping once the result is zero.
func powUint(m float64, e uint64) float64 {
	r := 1.0
	for {
		if e&1 != 0 {
			r *= m
		}
		if e >>= 1; e == 0 || r == 0 {
			return r
		}
		m *= m
	}
}

// clampDelay brings d into [0, ceiling].
func clampDelay(d time.Duration) time.Duration {
	return min(max(d, 0), ceiling)
}

// jitterUnit derives the jitter's u in [0, 1) from the caller's seed and the
// failure being decided, as a 53-bit fraction u53/2^53. The same seed, newest
// failure and count always give the same u; the mixing spreads different
// seeds uniformly. The newest failure enters by its instant (seconds and
// nanoseconds since the Unix epoch), whatever its location.
func jitterUnit(seed uint64, last instant, n int) uint64 {
	// The failure's three numbers are spread by odd multipliers and folded
	// into one word; two finalizer rounds then mix it with the seed.
	f := uint64(last.sec)*0x9e3779b97f4a7c15 ^ uint64(last.nsec)*0xc2b2ae3d27d4eb4f ^ uint64(n)*0x165667b19e3779f9
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
