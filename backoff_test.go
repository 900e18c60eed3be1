package retrypolicy

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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

// TestDelayNeverNegativeNeverAboveCeiling pins saturation: for any backoff,
// valid or not, and any k, the delay is in [0, ceiling], and within the cap
// when one is set.
func TestDelayNeverNegativeNeverAboveCeiling(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := Backoff{
			Kind:       BackoffKind(rapid.IntRange(0, 4).Draw(t, "kind")),
			BaseDelay:  time.Duration(rapid.Int64().Draw(t, "base")),
			Multiplier: rapid.Float64().Draw(t, "multiplier"),
			MaxDelay:   time.Duration(rapid.Int64().Draw(t, "max")),
		}
		k := rapid.Int().Draw(t, "k")
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
// least 1, the delay after k+j failures is never shorter than after k.
func TestDelayNeverDecreasesWithFailures(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genBackoff(t)
		if b.Kind.exponential() && b.Multiplier < 1 {
			b.Multiplier = 1 / b.Multiplier
			if math.IsInf(b.Multiplier, 0) {
				b.Multiplier = math.MaxFloat64
			}
		}
		k := rapid.IntRange(1, math.MaxInt-1000).Draw(t, "k")
		if rapid.Bool().Draw(t, "small k") {
			k = rapid.IntRange(1, 5000).Draw(t, "k small")
		}
		j := rapid.IntRange(1, 1000).Draw(t, "j")
		if b.delay(k+j) < b.delay(k) {
			t.Fatalf("delay(%d)=%v < delay(%d)=%v", k+j, b.delay(k+j), k, b.delay(k))
		}
		if b.delay(k+1) < b.delay(k) {
			t.Fatalf("delay(%d)=%v < delay(%d)=%v", k+1, b.delay(k+1), k, b.delay(k))
		}
	})
}

// TestDelayNeverIncreasesBelowOne pins the mirror rule the credit's closed
// form relies on: with a multiplier of at most 1, delays never grow with k.
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
	assert.Equal(t, 1.0, powUint(3, 0))
	assert.Equal(t, 1024.0, powUint(2, 10))
	assert.Equal(t, 3486784401.0, powUint(3, 20))
	assert.Equal(t, 2.25, powUint(1.5, 2))
	assert.True(t, math.IsInf(powUint(2, 1024), 1))
	assert.True(t, math.IsInf(powUint(2, math.MaxUint64), 1))
	assert.Equal(t, 0.0, powUint(0.5, math.MaxUint64))
	assert.Equal(t, 1.0, powUint(1, math.MaxUint64))
	assert.InEpsilon(t, math.Pow(1.1, 300), powUint(1.1, 300), 1e-13)
}

// TestPowUintMonotoneNearOne sweeps the multipliers a few ulps either side
// of 1, where rounding could most easily make m^(e+1) fall below m^e: the
// delays' monotony rests on it.
func TestPowUintMonotoneNearOne(t *testing.T) {
	for j := 1; j <= 40; j++ {
		up, down := 1+float64(j)*0x1p-52, 1-float64(j)*0x1p-53
		prevUp, prevDown := 1.0, 1.0
		for e := uint64(1); e < 20000; e++ {
			pu, pd := powUint(up, e), powUint(down, e)
			if pu < prevUp || pd > prevDown {
				t.Fatalf("m=1±%d ulp, e=%d: %v after %v, %v after %v", j, e, pu, prevUp, pd, prevDown)
			}
			prevUp, prevDown = pu, pd
		}
	}
}
