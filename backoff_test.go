package retrypolicy

import (
	"math"
	"math/big"
	"runtime"
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
	const year = 365 * 24 * time.Hour
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
		// The product saturates, not the base: 9e9 s × 0.5 is still past 100 years.
		{"huge base, first step", Backoff{Kind: Exponential, BaseDelay: 9e9 * time.Second, Multiplier: 0.5}, 1, 100 * year},
		{"huge base, shrinking", Backoff{Kind: Exponential, BaseDelay: 9e9 * time.Second, Multiplier: 0.5}, 2, 100 * year},
		{"huge base, shrunk below the ceiling", Backoff{Kind: Exponential, BaseDelay: 9e9 * time.Second, Multiplier: 0.5}, 3, 2250000000 * time.Second},
		// Within 2^-30 of 1 the rule's own value: 1e9 s × 1.0000000001 = 1,000,000,000.1 s.
		{"near one, second step", Backoff{Kind: Exponential, BaseDelay: 1e9 * time.Second, Multiplier: 1.0000000001}, 2, 1e9*time.Second + 100*time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.b.delay(tt.k)
			// Within the rule's tolerance (1 ns or 10^-9 of the value) of the exact value (the
			// near-one case is not a whole number of nanoseconds in binary).
			assert.InDelta(t, float64(tt.want), float64(got), 1, "got %v", got)
		})
	}
}

// compiled returns b as Decide on a plain Strategy compiles it.
func (b Backoff) compiled() *delays {
	d := compileDelays(&b, new(tables))
	return &d
}

// delay is the delay owed after the k-th failure (k below 1 counts as 1).
func (b Backoff) delay(k int) time.Duration {
	return time.Duration(b.compiled().at(int64(max(k, 1))))
}

// exactStep returns base × m^(k-1) to 400 bits by binary exponentiation
// in math/big on the exact float64 multiplier: the oracle the delays are
// held to. Its relative error is below k × 2^-395.
func exactStep(base time.Duration, m float64, k int64) *big.Float {
	const prec = 400
	r := new(big.Float).SetPrec(prec).SetInt64(int64(base))
	x := new(big.Float).SetPrec(prec).SetFloat64(m)
	for e := uint64(k - 1); e > 0; e >>= 1 {
		if e&1 != 0 {
			r.Mul(r, x)
		}
		x.Mul(x, x)
	}
	return r
}

// withinTolerance reports whether got is within 1 µs or 10^-9 of want,
// whichever is larger (docs/semantics.md, section 2).
func withinTolerance(got int64, want *big.Float) bool {
	diff := new(big.Float).Sub(new(big.Float).SetInt64(got), want)
	tol := new(big.Float).Mul(want, big.NewFloat(1e-9))
	if tol.Cmp(big.NewFloat(1000)) < 0 {
		tol = big.NewFloat(1000)
	}
	return diff.Abs(diff).Cmp(tol) <= 0
}

// TestDelayIsTheGeometricStepWithinTolerance pins the delays of the
// exponential kinds against base × m^(k-1) computed in math/big: below
// the cap every delay is within 1 µs or 10^-9 of it, whichever is larger,
// for multipliers on both sides of 1, within 2^-30 of it and next to it,
// and failure counts up to 2^40; at the cap it is the cap.
func TestDelayIsTheGeometricStepWithinTolerance(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := Backoff{
			Kind:      Exponential,
			BaseDelay: time.Duration(rapid.OneOf(rapid.Int64Range(1, 1e6), rapid.Int64Range(1, maxDelaySecs*1000)).Draw(t, "base_ms")) * time.Millisecond,
			Multiplier: rapid.OneOf(rapid.Float64Range(0.5, 3), rapid.Float64Range(1-1e-6, 1+1e-6),
				rapid.Float64Range(1-0x1p-30, 1+0x1p-30),
				rapid.SampledFrom([]float64{1.5, 1.1, 2.5, 1.0000001, 1.0000000001, 1 + 0x1p-52, 1 - 0x1p-53, 0.999})).Draw(t, "multiplier"),
		}
		if rapid.Bool().Draw(t, "capped") {
			b.MaxDelay = time.Duration(rapid.Int64Range(int64(b.BaseDelay/time.Millisecond), maxDelaySecs*1000).Draw(t, "max_ms")) * time.Millisecond
		}
		d := b.compiled()
		k := rapid.OneOf(rapid.Int64Range(1, 600), rapid.Int64Range(1, 1<<20), rapid.Int64Range(1, 1<<40)).Draw(t, "k")
		got := d.at(k)
		want := exactStep(b.BaseDelay, b.Multiplier, k)
		limit := new(big.Float).SetInt64(d.limit)
		if want.Cmp(limit) >= 0 {
			if got != d.limit {
				t.Fatalf("delay(%d) = %d, want the limit %d (exact %s)", k, got, d.limit, want.Text('g', 20))
			}
			return
		}
		if !withinTolerance(got, want) {
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

// TestDelaysPastTheTableAreTheDefinition: a step past the table of sums
// owes what the table would have held had it gone on, for multipliers whose
// 256 first steps stay below the cap.
func TestDelaysPastTheTableAreTheDefinition(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genGrowingBackoff(t)
		if rapid.Bool().Draw(t, "shrinking") {
			b.Multiplier = 2 - b.Multiplier
		}
		d := b.compiled()
		k := rapid.Int64Range(1, 4*blockSize).Draw(t, "k")
		// The definition, computed here without the tables.
		m := wideFloat(b.Multiplier)
		if b.Multiplier == 1 {
			return
		}
		x := wideInt(uint64(d.base))
		if h := uint64(k-1) / blockSize; h > 0 {
			x = x.mul(wideOne.mulN(m, blockSize).pow(h))
		}
		want := x.mul(wideOne.mulN(m, int((k-1)%blockSize))).floor(d.limit)
		if got := d.at(k); got != want {
			t.Fatalf("delay(%d) = %d, the definition %d (table %d)", k, got, want, d.table())
		}
	})
}

// mulN returns w × m × … × m, n products in turn, as the table builds them.
func (w wide) mulN(m wide, n int) wide {
	for range n {
		w = w.mul(m)
	}
	return w
}

// TestPolicyTakesAtMost16KiB pins the bound on a compiled policy's memory,
// tables included, for the strategies that need the most.
func TestPolicyTakesAtMost16KiB(t *testing.T) {
	for _, m := range []float64{2, 1.5, 1.000001, 1 + 0x1p-52, 1 - 0x1p-53, 0.5, 1e-300, math.MaxFloat64} {
		s := Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Exponential, BaseDelay: time.Second, Multiplier: m}}
		const runs = 100
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range runs {
			_, err := Compile(s)
			require.NoError(t, err)
		}
		runtime.ReadMemStats(&after)
		perPolicy := (after.TotalAlloc - before.TotalAlloc) / runs
		assert.LessOrEqual(t, perPolicy, uint64(16<<10), "multiplier %v: %d bytes a policy", m, perPolicy)
	}
}

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
		d0, d1, dj := st.at(int64(k)), st.at(int64(k+1)), st.at(int64(k+j))
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
