package retrypolicy

import (
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestDelayDefaultBackoffDoubles(t *testing.T) {
	// The retry documentation's table: 1, 2, 4, 8 and 16 seconds after the first five
	// failures, then up to an hour.
	want := []time.Duration{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 3600, 3600}
	b := defaultBackoff()
	for i, w := range want {
		assert.Equal(t, w*time.Second, b.delay(i+1), "k=%d", i+1)
	}
}

func TestDelayByKind(t *testing.T) {
	tests := []struct {
		name string
		b    Backoff
		k    int
		want time.Duration
	}{
		{"fixed ignores k", Backoff{Kind: Fixed, BaseDelay: 30 * time.Second}, 9, 30 * time.Second},
		{"fixed first", Backoff{Kind: Fixed, BaseDelay: 30 * time.Second}, 1, 30 * time.Second},
		{"k below 1 is the first step", defaultBackoff(), -3, time.Second},
		{"x1.5 second step", Backoff{Kind: Exponential, BaseDelay: 2 * time.Second, Multiplier: 1.5}, 2, 3 * time.Second},
		{"x1.5 third step", Backoff{Kind: Exponential, BaseDelay: 2 * time.Second, Multiplier: 1.5}, 3, 4500 * time.Millisecond},
		{"cap", Backoff{Kind: Exponential, BaseDelay: 2 * time.Second, Multiplier: 10, MaxDelay: 300 * time.Second}, 4, 300 * time.Second},
		{"below cap", Backoff{Kind: Exponential, BaseDelay: 2 * time.Second, Multiplier: 10, MaxDelay: 300 * time.Second}, 3, 200 * time.Second},
		{"x0.5 shrinks", Backoff{Kind: Exponential, BaseDelay: 8 * time.Second, Multiplier: 0.5}, 4, time.Second},
		{"jitter kind has the same steps", Backoff{Kind: ExponentialWithJitter, BaseDelay: time.Second, Multiplier: 3}, 3, 9 * time.Second},
		{"uncapped saturates at the ceiling", Backoff{Kind: Exponential, BaseDelay: time.Second, Multiplier: 2}, 200, ceiling},
		{"huge multiplier saturates", Backoff{Kind: Exponential, BaseDelay: time.Second, Multiplier: math.MaxFloat64}, 3, ceiling},
		{"huge k saturates", Backoff{Kind: Exponential, BaseDelay: time.Second, Multiplier: 1.0001}, math.MaxInt, ceiling},
		{"huge base saturates", Backoff{Kind: Fixed, BaseDelay: math.MaxInt64}, 1, ceiling},
		{"tiny multiplier reaches zero", Backoff{Kind: Exponential, BaseDelay: time.Second, Multiplier: 1e-300}, 5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.b.delay(tt.k))
		})
	}
}

// compiled returns b as Decide on a plain Strategy compiles it: without
// the table Compile adds.
func (b Backoff) compiled() *steps {
	var st steps
	st.init(&b)
	return &st
}

// delay is the delay owed after the k-th failure (k below 1 counts as 1).
func (b Backoff) delay(k int) time.Duration {
	return time.Duration(b.compiled().delay(int64(max(k, 1))))
}

// exactStep returns base × m^(k-1) to 200 bits, from big.Float arithmetic
// on the exact float64 multiplier: the oracle the delays are held to.
func exactStep(base time.Duration, m float64, k int) *big.Float {
	p := new(big.Float).SetPrec(200).SetFloat64(1)
	mm := new(big.Float).SetPrec(200).SetFloat64(m)
	for range k - 1 {
		p.Mul(p, mm)
	}
	return p.Mul(p, new(big.Float).SetPrec(200).SetInt64(int64(base)))
}

// TestDelayIsTheGeometricStepWithinANanosecond pins the delays of a
// multiplier above 1 (blocks of one failure) against base × m^(k-1)
// computed independently: below the cap, every delay is within a
// nanosecond of it.
func TestDelayIsTheGeometricStepWithinANanosecond(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := Backoff{
			Kind:       Exponential,
			BaseDelay:  time.Duration(rapid.Int64Range(1, 1e6).Draw(t, "base_ms")) * time.Millisecond,
			Multiplier: rapid.OneOf(rapid.Float64Range(1.0001, 3), rapid.Float64Range(1.000001, 1.001), rapid.SampledFrom([]float64{1.5, 1.1, 2.5, 1.0000001})).Draw(t, "multiplier"),
		}
		st := b.compiled()
		if st.q != 1 {
			return // the blocks are pinned by TestNearOneTheDelayGrowsInBlocks
		}
		k := rapid.OneOf(rapid.IntRange(1, 200), rapid.IntRange(1, 20000)).Draw(t, "k")
		got := st.delay(int64(k))
		if got == st.limit {
			return
		}
		want := exactStep(b.BaseDelay, b.Multiplier, k)
		diff := new(big.Float).Sub(new(big.Float).SetInt64(got), want)
		if d, _ := diff.Float64(); math.Abs(d) >= 1 {
			t.Fatalf("delay(%d) = %d, base × m^(k-1) = %s", k, got, want.Text('f', 3))
		}
	})
}

// TestDelaysOfAWholeMultiplierAreExact: with a whole multiplier the delays
// are exactly base × m^(k-1), up to the cap.
func TestDelaysOfAWholeMultiplierAreExact(t *testing.T) {
	for _, m := range []int64{2, 3, 10, 1000} {
		for _, base := range []time.Duration{time.Millisecond, time.Second, 7 * time.Second} {
			b := Backoff{Kind: Exponential, BaseDelay: base, Multiplier: float64(m)}
			want := int64(base)
			for k := 1; ; k++ {
				got := b.delay(k)
				if want >= int64(ceiling) {
					assert.Equal(t, ceiling, got)
					break
				}
				require.Equal(t, time.Duration(want), got, "m=%d base=%v k=%d", m, base, k)
				if want > math.MaxInt64/m {
					want = math.MaxInt64
				} else {
					want *= m
				}
			}
		}
	}
}

// TestNearOneTheDelayGrowsInBlocks pins the blocks of a multiplier within
// a hair of 1: the delay holds for q failures, then grows by M = m^q,
// within a nanosecond, and M - 1 is what the steps are sized for.
func TestNearOneTheDelayGrowsInBlocks(t *testing.T) {
	for _, tc := range []struct {
		base time.Duration
		m    float64
	}{
		{time.Second, 1 + 0x1p-52},
		{time.Millisecond, 1.000001},
		{time.Hour, 1 + 1e-12},
		{time.Second, 1 + 1e-9},
	} {
		b := Backoff{Kind: Exponential, BaseDelay: tc.base, Multiplier: tc.m}
		st := b.compiled()
		require.Greater(t, st.q, int64(1), "%v", tc)
		grow := st.dM.hi
		assert.GreaterOrEqual(t, grow, max(3/float64(tc.base), minGrowth), "%v", tc)
		assert.GreaterOrEqual(t, st.lnM.hi/math.Log(tc.m), float64(st.q)*(1-1e-9), "M = m^q")
		for _, block := range []int64{0, 1, 2, 1000} {
			first, last := block*st.q+1, (block+1)*st.q
			assert.Equal(t, st.delay(first), st.delay(last), "one delay per block")
			next := float64(st.delay(last + 1))
			want := float64(tc.base) * math.Exp(float64(block+1)*st.lnM.hi)
			assert.InDelta(t, want, next, 1+want*1e-12, "%v block %d", tc, block+1)
		}
	}
}

// TestDelayNeverNegativeNeverAboveTheCap pins saturation: for any valid
// backoff, extremes included, and any k, the delay is in [0, ceiling], and
// within the cap when one is set.
func TestDelayNeverNegativeNeverAboveTheCap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genExtremeBackoff(t)
		k := rapid.OneOf(rapid.IntRange(1, 100), rapid.IntRange(1, math.MaxInt)).Draw(t, "k")
		d := b.delay(k)
		if d < 0 || d > ceiling {
			t.Fatalf("delay %v outside [0, %v]", d, ceiling)
		}
		if b.Kind.exponential() && b.MaxDelay > 0 && d > b.MaxDelay {
			t.Fatalf("delay %v above the cap %v", d, b.MaxDelay)
		}
	})
}

// TestDelayNeverDecreasesWithFailures pins monotony: with a multiplier of at
// least 1, the delay after k+j failures is never shorter than after k, for
// multipliers within a hair of 1 as well.
func TestDelayNeverDecreasesWithFailures(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genGrowingBackoff(t)
		st := b.compiled()
		k := rapid.OneOf(rapid.IntRange(1, 5000), rapid.IntRange(1, math.MaxInt-1000)).Draw(t, "k")
		j := rapid.IntRange(1, 1000).Draw(t, "j")
		d0, d1, dj := st.delay(int64(k)), st.delay(int64(k+1)), st.delay(int64(k+j))
		if d1 < d0 || dj < d0 {
			t.Fatalf("delay(%d)=%d, delay(%d)=%d, delay(%d)=%d", k, d0, k+1, d1, k+j, dj)
		}
	})
}

// TestDelayNeverIncreasesBelowOne pins the mirror rule the credit relies
// on: with a multiplier of at most 1, delays never grow with k.
func TestDelayNeverIncreasesBelowOne(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := Backoff{
			Kind:       Exponential,
			BaseDelay:  genSeconds(t, "base", 1, maxDelaySecs),
			Multiplier: rapid.OneOf(rapid.Float64Range(0, 1), rapid.Float64Range(0.999, 1)).Draw(t, "multiplier"),
		}
		if b.Multiplier == 0 {
			b.Multiplier = math.SmallestNonzeroFloat64
		}
		k := rapid.IntRange(1, 100000).Draw(t, "k")
		if b.delay(k+1) > b.delay(k) {
			t.Fatalf("delay(%d)=%v > delay(%d)=%v", k+1, b.delay(k+1), k, b.delay(k))
		}
	})
}

func TestJitterForBounds(t *testing.T) {
	const top = 1<<53 - 1
	assert.Equal(t, time.Duration(0), jitterFor(0, top))
	assert.Equal(t, time.Duration(0), jitterFor(-time.Second, top))
	assert.Equal(t, time.Duration(0), jitterFor(time.Hour, 0))
	// u = 1/2 gives an eighth.
	assert.Equal(t, time.Second, jitterFor(8*time.Second, 1<<52))
	// The largest u stays strictly below a quarter, even for a credited
	// delay that a quarter divides exactly.
	assert.Equal(t, 4*time.Second-1, jitterFor(16*time.Second, top))
	assert.Less(t, jitterFor(ceiling, top), ceiling/4)
	assert.Less(t, jitterFor(math.MaxInt64, top), time.Duration(math.MaxInt64/4))
}

// TestJitterStaysBelowAQuarter pins the jitter's bound for any credited delay and
// any u: 0 <= jitter < credited/4 (and 0 when credited is 0).
func TestJitterStaysBelowAQuarter(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := time.Duration(rapid.Int64Range(0, math.MaxInt64).Draw(t, "credited"))
		u := rapid.Uint64Range(0, 1<<53-1).Draw(t, "u53")
		j := jitterFor(c, u)
		if j < 0 || (c > 0 && 4*float64(j) >= float64(c) && j*4 >= c) || (c == 0 && j != 0) {
			t.Fatalf("jitter %v for credited %v", j, c)
		}
	})
}

func TestPowUint(t *testing.T) {
	assert.Equal(t, 1.0, powUint(0.5, 0))
	assert.Equal(t, 0x1p-10, powUint(0.5, 10))
	assert.Equal(t, 0.0, powUint(0.5, math.MaxUint64))
	assert.InEpsilon(t, math.Pow(0.9, 300), powUint(0.9, 300), 1e-13)
}

// TestPowUintMonotoneBelowOne sweeps the multipliers a few ulps below 1,
// where rounding could most easily make m^(e+1) exceed m^e: the shrinking
// delays' monotony rests on it.
func TestPowUintMonotoneBelowOne(t *testing.T) {
	for j := 1; j <= 40; j++ {
		down := 1 - float64(j)*0x1p-53
		prev := 1.0
		for e := uint64(1); e < 20000; e++ {
			if pd := powUint(down, e); pd > prev {
				t.Fatalf("m=1-%d ulp/2, e=%d: %v after %v", j, e, pd, prev)
			} else {
				prev = pd
			}
		}
	}
}

// TestClosedPairSettlesAsTheDefinition pins the fast closed form to the
// definition of F: wherever closedPair settles F(b) and F(b+1), they are
// what gExact computes, to the nanosecond.
func TestClosedPairSettlesAsTheDefinition(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		st := genClosedForm(t)
		b := rapid.Int64Range(max(int64(len(st.table)), 2), int64(62/st.lnM.hi)).Draw(t, "block")
		if !st.closedForm(b) {
			t.Skip("not in the closed form's range")
		}
		f, _, ok := st.closedPair(b)
		if !ok {
			t.Skip("not settled")
		}
		lo, hi := st.gExact(st.lnM.mulFloat(float64(b))), st.gExact(st.lnM.mulFloat(float64(b+1)))
		if f.lo != lo || f.hi != hi {
			t.Fatalf("closedPair(%d) = %v, %v; by definition %v, %v", b, f.lo, f.hi, lo, hi)
		}
	})
}

// TestClosedPairSettlesAlmostAlways pins that the fast closed form is the
// one taken: across a strategy's whole range of blocks, up to the 100-year
// ceiling, closedPair settles all but a few in a thousand. The margin grows
// with base/(M - 1): where that is 2^66, as for a minute's base in blocks
// of M = 1 + 2^-30, the blocks near the ceiling fall back more often.
func TestClosedPairSettlesAlmostAlways(t *testing.T) {
	for _, tc := range []struct {
		b        Backoff
		perMille int
	}{
		{Backoff{Kind: Exponential, BaseDelay: time.Second, Multiplier: 1.000001}, 995},
		{Backoff{Kind: Exponential, BaseDelay: time.Millisecond, Multiplier: 1.0001}, 995},
		{Backoff{Kind: Exponential, BaseDelay: 10 * time.Second, Multiplier: 1.01}, 995},
		{Backoff{Kind: Exponential, BaseDelay: time.Minute, Multiplier: 1 + 1e-10}, 900},
	} {
		b := tc.b
		st := b.compiled()
		st.prepare()
		last := st.capAt()
		tried, settled := 0, 0
		for blk := int64(len(st.table)); blk < last; blk += max(1, last/1000) {
			tried++
			if _, _, ok := st.closedPair(blk); ok {
				settled++
			}
		}
		assert.Greater(t, tried, 100, "%v", b)
		assert.GreaterOrEqual(t, settled, tried*tc.perMille/1000, "%v: settled %d of %d", b, settled, tried)
		t.Logf("%v: settled %d of %d", b, settled, tried)
	}
}

// TestPairWhereTheClosedFormDoesNotSettle pins the fallback of pair: for
// the blocks where closedPair cannot settle a floor (a minute's base in
// blocks of M = 1 + 2^-30 has dozens across its range), pair and pairH
// return F(b) and F(b+1) as gExact defines them.
func TestPairWhereTheClosedFormDoesNotSettle(t *testing.T) {
	b := Backoff{Kind: Exponential, BaseDelay: time.Minute, Multiplier: 1 + 1e-10}
	st := b.compiled()
	st.prepare()
	last, unsettled := st.capAt(), 0
	for blk := int64(len(st.table)); blk < last; blk += max(1, last/1000) {
		if _, _, ok := st.closedPair(blk); ok {
			continue
		}
		unsettled++
		want := fpair{st.gExact(st.lnM.mulFloat(float64(blk))), st.gExact(st.lnM.mulFloat(float64(blk + 1)))}
		f, h := st.pairH(blk)
		assert.Equal(t, want, f, "pairH(%d)", blk)
		assert.Equal(t, want, st.pair(blk), "pair(%d)", blk)
		assert.NotZero(t, h.hi, "pairH(%d) computed H", blk)
	}
	assert.Greater(t, unsettled, 10)
}
