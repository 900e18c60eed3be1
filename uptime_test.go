package retrypolicy

import (
	"math"
	"math/big"
	"math/bits"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"pgregory.net/rapid"
)

func TestCreditWorkedExamples(t *testing.T) {
	// The worked examples of the uptime credit: default backoff, n = 4, owed 8 s.
	tests := []struct {
		uptime time.Duration
		want   time.Duration
	}{
		{10 * time.Second, 4 * time.Second},
		{15 * time.Second, 1 * time.Second},
		{0, 8 * time.Second},
		{7999 * time.Millisecond, 8 * time.Second},
		{8 * time.Second, 4 * time.Second},
		{12 * time.Second, 2 * time.Second},
		{14 * time.Second, 1 * time.Second}, // 8+4+2 paid: down to the first step
		{time.Hour, 1 * time.Second},        // never below the first step
		{-time.Hour, 8 * time.Second},       // negative counts as zero
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, defaultBackoff().credited(4, tt.uptime), "uptime %v", tt.uptime)
		assert.Equal(t, tt.want, defaultBackoff().creditReference(4, tt.uptime), "reference, uptime %v", tt.uptime)
	}
}

func TestCreditAtTheCap(t *testing.T) {
	// Default backoff, n = 20: steps 13..20 owe 3600 s each, 12 owes 2048.
	b := defaultBackoff()
	tests := []struct {
		uptime time.Duration
		want   time.Duration
	}{
		{3599 * time.Second, 3600 * time.Second},
		{8 * 3600 * time.Second, 2048 * time.Second}, // every capped step paid
		{8*3600*time.Second + 2047*time.Second, 2048 * time.Second},
		{8*3600*time.Second + 2048*time.Second, 1024 * time.Second},
		{7 * 3600 * time.Second, 3600 * time.Second}, // step 13 still owed
		{math.MaxInt64, time.Second},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, b.credited(20, tt.uptime), "uptime %v", tt.uptime)
	}
}

func TestCreditFixedAndShrinking(t *testing.T) {
	fixed := Backoff{Kind: Fixed, BaseDelay: 30 * time.Second}
	assert.Equal(t, 30*time.Second, fixed.credited(9, time.Hour))
	shrink := Backoff{Kind: Exponential, BaseDelay: 8 * time.Second, Multiplier: 0.5}
	// n = 3 owes 2 s; credit changes nothing below a multiplier of 1.
	assert.Equal(t, 2*time.Second, shrink.credited(3, time.Hour))
	assert.Equal(t, 2*time.Second, shrink.creditReference(3, time.Hour))
}

// TestCreditClosedFormEqualsReferenceLoop pins the credit rule: the
// constant-time form, with and without the table Compile adds, and the
// rule's step-by-step loop give the same delay, to the nanosecond, for
// every backoff, failure count and uptime.
func TestCreditClosedFormEqualsReferenceLoop(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genBackoff(t)
		if rapid.Bool().Draw(t, "growing") {
			b = genGrowingBackoff(t)
		}
		plain := b.compiled()
		prepared := b.compiled()
		prepared.prepare()
		n := rapid.OneOf(rapid.IntRange(1, 40), rapid.IntRange(1, 3000)).Draw(t, "n")
		uptime := genUptime(t, "uptime")
		if rapid.Bool().Draw(t, "uptime on a step boundary") {
			// Exactly the sum of the steps from n down to some step: the
			// ties the loop decides with >=.
			var sum int64
			downTo := rapid.IntRange(1, n).Draw(t, "down to")
			for s := n; s >= downTo && s > 1; s-- {
				if sum > math.MaxInt64-plain.delay(int64(s)) {
					break
				}
				sum += plain.delay(int64(s))
			}
			uptime = time.Duration(sum + rapid.Int64Range(-1, 1).Draw(t, "nudge"))
		}
		want := b.creditReference(n, uptime)
		_, got := plain.credit(n, uptime)
		_, fromTable := prepared.credit(n, uptime)
		if got != want || fromTable != want {
			t.Fatalf("credit(%d, %v) = %v (compiled: %v), the reference loop says %v", n, uptime, got, fromTable, want)
		}
	})
}

// TestCreditInBlocksEqualsReferenceLoop pins the credit rule where the
// delays grow in blocks of many failures (multipliers within a hair of 1)
// and where they are summed in closed form (past the first 128 steps): the
// same result as the step-by-step loop, over histories spanning many blocks.
func TestCreditInBlocksEqualsReferenceLoop(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := Backoff{
			Kind:       Exponential,
			BaseDelay:  time.Duration(rapid.Int64Range(1, 3000).Draw(t, "base_ms")) * time.Millisecond,
			Multiplier: 1 + rapid.OneOf(rapid.Float64Range(1e-10, 1e-5), rapid.Float64Range(1e-5, 1e-3)).Draw(t, "growth"),
		}
		if rapid.Bool().Draw(t, "capped") {
			b.MaxDelay = b.BaseDelay + time.Duration(rapid.Int64Range(0, int64(time.Second)).Draw(t, "cap_above_base"))
		}
		st := b.compiled()
		n := rapid.IntRange(1, 30000).Draw(t, "n")
		var sum int64
		downTo := rapid.IntRange(1, n).Draw(t, "down to")
		for s := n; s >= downTo && s > 1; s-- {
			sum += st.delay(int64(s))
		}
		uptime := time.Duration(sum + rapid.Int64Range(-2, 2).Draw(t, "nudge"))
		if rapid.Bool().Draw(t, "pays every capped step") {
			uptime = time.Duration(rapid.Int64Range(sum, math.MaxInt64).Draw(t, "long uptime"))
		}
		prepared := b.compiled()
		prepared.prepare()
		want := b.creditReference(n, uptime)
		_, got := st.credit(n, uptime)
		_, fromTable := prepared.credit(n, uptime)
		if got != want || fromTable != want {
			t.Fatalf("q=%d: credit(%d, %v) = %v (compiled: %v), the reference loop says %v", st.q, n, uptime, got, fromTable, want)
		}
	})
}

// TestCreditNeverLengthensDelay pins "uptime only shortens the backoff":
// the credited delay is never above the owed one.
func TestCreditNeverLengthensDelay(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genBackoff(t)
		n := rapid.IntRange(1, 1<<20).Draw(t, "n")
		uptime := genUptime(t, "uptime")
		if c := b.credited(n, uptime); c > b.delay(n) || c < 0 {
			t.Fatalf("credited %v, owed %v", c, b.delay(n))
		}
	})
}

// TestCreditNeverBelowFirstStep pins the floor: with a multiplier of at least
// 1, credit never takes the delay below delay(1).
func TestCreditNeverBelowFirstStep(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genGrowingBackoff(t)
		n := rapid.IntRange(1, 1<<20).Draw(t, "n")
		if c := b.credited(n, genUptime(t, "uptime")); c < b.delay(1) {
			t.Fatalf("credited %v below the first step %v", c, b.delay(1))
		}
	})
}

// TestMoreUptimeNeverLongerDelay pins monotony in the uptime: a longer run
// never owes a longer delay.
func TestMoreUptimeNeverLongerDelay(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genBackoff(t)
		if rapid.Bool().Draw(t, "growing") {
			b = genGrowingBackoff(t)
		}
		n := rapid.IntRange(1, 5000).Draw(t, "n")
		u1 := genUptime(t, "uptime")
		extra := time.Duration(rapid.Int64Range(0, math.MaxInt64).Draw(t, "extra"))
		u2 := u1 + extra
		if u2 < u1 { // saturate
			u2 = math.MaxInt64
		}
		if c1, c2 := b.credited(n, u1), b.credited(n, u2); c2 > c1 {
			t.Fatalf("uptime %v gives %v, longer uptime %v gives %v", u1, c1, u2, c2)
		}
	})
}

// credited is the delay after the uptime credit, as Decide on a plain
// Strategy computes it.
func (b Backoff) credited(n int, uptime time.Duration) time.Duration {
	_, c := b.compiled().credit(n, uptime)
	return c
}

// creditReference is the uptime-credit rule exactly as the semantics state
// it, one step at a time: the oracle the constant-time credit is held to.
func (b Backoff) creditReference(n int, uptime time.Duration) time.Duration {
	st := b.compiled()
	delay := func(k int) time.Duration { return time.Duration(st.delay(int64(k))) }
	n = max(n, 1)
	c, s := max(uptime, 0), n
	for s > 1 && c >= delay(s) {
		c -= delay(s)
		s--
	}
	return min(delay(n), delay(s))
}

// TestFirstTrueFindsTheBoundaryFromAnyGuess pins the search the credit
// starts from an estimate: whatever the guess, even far off or outside the
// range, it returns the first k for which the predicate holds.
func TestFirstTrueFindsTheBoundaryFromAnyGuess(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lo := rapid.IntRange(0, 1000).Draw(t, "lo")
		hi := rapid.IntRange(lo, lo+rapid.IntRange(0, 1<<20).Draw(t, "span")).Draw(t, "hi")
		want := rapid.IntRange(lo, hi).Draw(t, "boundary")
		guess := rapid.IntRange(lo-100, hi+100).Draw(t, "guess")
		calls := 0
		got := firstTrue(lo, hi, guess, func(k int) bool {
			calls++
			if k < lo || k > hi {
				t.Fatalf("probed %d outside [%d, %d]", k, lo, hi)
			}
			return k >= want
		})
		if got != want {
			t.Fatalf("firstTrue = %d, want %d (guess %d)", got, want, guess)
		}
		// Galloping: about 2·log2(|guess - want|) + 2 probes.
		if off := max(want-guess, guess-want, 1); calls > 2*bits.Len(uint(off))+4 {
			t.Fatalf("%d probes for a guess %d off", calls, off)
		}
	})
	// At the edges of int.
	assert.Equal(t, math.MaxInt, firstTrue(1, math.MaxInt, 1, func(k int) bool { return k == math.MaxInt }))
	assert.Equal(t, 1, firstTrue(1, math.MaxInt, math.MaxInt, func(int) bool { return true }))
}

// TestCreditEstimateIsTheBlock pins what keeps the credit's search to one
// pair of sums: for strategies summed in closed form, from the table's end
// to the cap and for runs that pay from a few steps to nearly all, the
// estimate (earlyGuess, or guessBlock from the exact target where the early
// one declines) is the block the search ends on, all but a few times in a
// thousand.
func TestCreditEstimateIsTheBlock(t *testing.T) {
	for _, b := range []Backoff{
		{Kind: Exponential, BaseDelay: time.Second, Multiplier: 1.000001},
		{Kind: Exponential, BaseDelay: time.Millisecond, Multiplier: 1.0001},
		{Kind: Exponential, BaseDelay: 10 * time.Second, Multiplier: 1.01},
		{Kind: Exponential, BaseDelay: time.Minute, Multiplier: 1 + 1e-10},
	} {
		st := b.compiled()
		st.prepare()
		last := st.capAt()
		tried, early, right := 0, 0, 0
		for bt := int64(len(st.table)); bt < last; bt += max(1, last/300) {
			if !st.closedForm(bt) {
				continue
			}
			f := st.pair(bt)
			for _, j := range []int64{1, st.q} { // the block's first failure, and its last
				top := bt*st.q + j
				all := f.lo.mul64(uint64(st.q - j)).add(f.hi.mul64(uint64(j)))
				for _, part := range []float64{1e-6, 1e-3, 0.1, 0.5, 0.99} {
					u := int64(part * (float64(all.hi)*0x1p64 + float64(all.lo)))
					if u < f.delay() || !u64(uint64(u+st.base)).less(all) {
						continue // no search: nothing paid, or every step
					}
					target := all.sub(u64(uint64(u)))
					want := firstTrue(0, int(bt), 0, func(b int) bool {
						return !st.cum(int64(b) + 1).mul64(uint64(st.q)).less(target)
					})
					g := st.earlyGuess(bt, top, u)
					if g >= 0 {
						early++
					} else {
						g = st.guessBlock(bt, target)
					}
					tried++
					if g == int64(want) {
						right++
					}
				}
			}
		}
		assert.Greater(t, tried, 300, "%v", b)
		assert.Greater(t, early, tried/2, "%v: the early estimate served %d of %d", b, early, tried)
		assert.GreaterOrEqual(t, right, tried*995/1000, "%v: right %d of %d", b, right, tried)
		t.Logf("%v: right %d of %d, %d of them early", b, right, tried, early)
	}
}

// TestBackPairErrorBounds pins the bound that settling sums from H(b) × M^-d
// rests on: for b - d in the closed form's range, backH's value and its
// product with M are within 2^-95 × H of c × e^x at x = (b - d) × ln M and
// at the next block, computed to 320 bits, the same bound as closedPair's
// (TestClosedFormErrorBounds), so the same margin settles them.
func TestBackPairErrorBounds(t *testing.T) {
	const bound = 0x1p-95
	rapid.Check(t, func(t *rapid.T) {
		st := genClosedForm(t)
		lo, hi := max(int64(len(st.table)), 2), int64(58/st.lnM.hi)
		if st.back == nil || lo >= hi {
			t.Skip("no back-step tables, or no closed form below the exponential's limit")
		}
		b := rapid.Int64Range(lo+1, hi).Draw(t, "block")
		d := rapid.Int64Range(1, min(maxBack-1, b-lo)).Draw(t, "blocks back")
		_, h := st.pairH(b)
		if h.hi == 0 {
			t.Skip("not in the closed form's range")
		}
		hd := st.backH(h, d)
		c := new(big.Float).SetPrec(320).Quo(new(big.Float).SetPrec(320).SetInt64(st.base), bigOf(st.dM))
		for i, v := range []dd{hd, hd.mul(st.mM)} {
			want := new(big.Float).SetPrec(320).Mul(c, bigExp(bigOf(st.lnM.mulFloat(float64(b-d+int64(i))))))
			if e := errIn(v, want, want); e > bound {
				t.Fatalf("H(%d) from H(%d): error %g × H", b-d+int64(i), b, e)
			}
		}
	})
}

// TestBackPairSettlesAsTheDefinition pins the sums the credit's search
// reads from H(b) × M^-d to the definition of F: wherever backPair settles
// F(b - d) and F(b - d + 1), they are what gExact computes, and it settles
// nothing below the closed form's range, where F is summed term by term.
func TestBackPairSettlesAsTheDefinition(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		st := genClosedForm(t)
		if st.back == nil {
			t.Skip("no back-step tables")
		}
		b := rapid.Int64Range(max(int64(len(st.table)), 2), int64(58/st.lnM.hi)).Draw(t, "block")
		d := rapid.Int64Range(1, min(maxBack-1, b)).Draw(t, "blocks back")
		_, h := st.pairH(b)
		f, ok := st.backPair(h, b, d)
		switch {
		case !ok:
			return
		case !st.closedForm(b - d):
			t.Fatalf("backPair settled block %d, outside the closed form's range", b-d)
		}
		lo, hi := st.gExact(st.lnM.mulFloat(float64(b-d))), st.gExact(st.lnM.mulFloat(float64(b-d+1)))
		if f.lo != lo || f.hi != hi {
			t.Fatalf("backPair(%d back from %d) = %v, %v; by definition %v, %v", d, b, f.lo, f.hi, lo, hi)
		}
	})
}

// TestBackPairSettlesAlmostAlways pins that the search's sums come from the
// tables: for a strategy that searches in closed form, from blocks across
// its range and one to 2^16 - 1 blocks back, backPair settles all but a
// few in a thousand.
func TestBackPairSettlesAlmostAlways(t *testing.T) {
	b := Backoff{Kind: Exponential, BaseDelay: time.Second, Multiplier: 1.000001}
	st := b.compiled()
	st.prepare()
	tried, settled := 0, 0
	for blk := int64(len(st.table)) + maxBack; blk < st.capAt(); blk += st.capAt() / 200 {
		_, h := st.pairH(blk)
		for _, d := range []int64{1, 7, 33, 300, 4096, 32000, maxBack - 1} {
			tried++
			if _, ok := st.backPair(h, blk, d); ok {
				settled++
			}
		}
	}
	assert.Greater(t, tried, 1000)
	assert.GreaterOrEqual(t, settled, tried*995/1000, "settled %d of %d", settled, tried)
	t.Logf("settled %d of %d", settled, tried)
}
