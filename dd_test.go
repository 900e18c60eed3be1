package retrypolicy

import (
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"pgregory.net/rapid"
)

// relErr is |got - want| / |want| in double-double, as a float64.
func relErr(got, want dd) float64 {
	d := got.sub(want)
	return math.Abs(d.hi+d.lo) / math.Abs(want.hi)
}

// TestExpm1AndLogAgreeWithHighPrecisionValues pins the double-double
// functions the delays of multipliers close to 1 rest on, against values
// computed to 80 digits outside the project for the exact float64 arguments: both within 2^-100 relative.
func TestExpm1AndLogAgreeWithHighPrecisionValues(t *testing.T) {
	const tol = 0x1p-100
	for _, tc := range []struct {
		x    float64
		want dd
	}{
		{1e-05, dd{1.0000050000166668e-05, -3.111926571619883e-22}},
		{0.3, dd{0.3498588075760031, 1.6549155728191776e-17}},
		{1.0, dd{1.7182818284590453, -7.747991575210629e-17}},
		{10.5, dd{36314.502674246636, 1.577797006387782e-12}},
		{43.3, dd{6.381915746994812e+18, 317.20292513223336}},
		{0.34657359, dd{0.4142135619771539, -1.6212946952837727e-17}},
	} {
		if e := relErr(dd{tc.x, 0}.expm1(), tc.want); e > tol {
			t.Errorf("expm1(%v): relative error %g", tc.x, e)
		}
	}
	for _, tc := range []struct {
		m    float64
		want dd
	}{
		{1.5, dd{0.4054651081081644, -2.8811380259626426e-18}},
		{1.000001, dd{9.999994999180668e-07, 1.5807876089699732e-23}},
		{1 + 0x1p-52, dd{2.2204460492503128e-16, 3.649214750845877e-48}},
		{3, dd{1.0986122886681098, -9.07129723500153e-17}},
		{1.0001, dd{9.999500033329732e-05, 1.739121921953736e-21}},
		{1e15, dd{34.538776394910684, 1.184757763427252e-15}},
	} {
		if e := relErr(logDD(tc.m), tc.want); e > tol {
			t.Errorf("log(%v): relative error %g", tc.m, e)
		}
	}
}

func TestFloorOfADoubleDouble(t *testing.T) {
	for _, tc := range []struct {
		x    dd
		want u128
	}{
		{dd{0, 0}, u64(0)},
		{dd{7.5, 0}, u64(7)},
		{dd{8, -1e-20}, u64(7)},
		{dd{8, 1e-20}, u64(8)},
		{dd{0x1p60, -3}, u64(1<<60 - 3)},
		{dd{0x1p60, 100.5}, u64(1<<60 + 100)},
		{dd{0x1p64, -1.5}, u128{0, math.MaxUint64 - 1}},
		{dd{0x1p100, 0}, u128{1 << 36, 0}},
	} {
		if got := tc.x.floor(); got != tc.want {
			t.Errorf("floor(%v + %v) = %v, want %v", tc.x.hi, tc.x.lo, got, tc.want)
		}
	}
}

// bigOf returns hi + lo exactly.
func bigOf(x dd) *big.Float {
	const prec = 320
	v := new(big.Float).SetPrec(prec).SetFloat64(x.hi)
	return v.Add(v, new(big.Float).SetPrec(prec).SetFloat64(x.lo))
}

// bigExp returns e^x for 0 <= x <= 64 to far more than 200 bits: the series
// at x/4096, squared twelve times.
func bigExp(x *big.Float) *big.Float {
	const prec = 320
	y := new(big.Float).SetPrec(prec).Quo(x, big.NewFloat(4096))
	sum := new(big.Float).SetPrec(prec).SetInt64(1)
	term := new(big.Float).SetPrec(prec).SetInt64(1)
	small := new(big.Float).SetMantExp(big.NewFloat(1), -prec)
	for i := int64(1); term.Cmp(small) > 0; i++ {
		term.Mul(term, y)
		term.Quo(term, new(big.Float).SetInt64(i))
		sum.Add(sum, term)
	}
	for range 12 {
		sum.Mul(sum, sum)
	}
	return sum
}

// bigLn returns ln x for x >= 1 to far more than 100 bits: Newton's method
// on bigExp from math.Log's value.
func bigLn(x *big.Float) *big.Float {
	f, _ := x.Float64()
	y := new(big.Float).SetPrec(320).SetFloat64(math.Log(f))
	for range 4 {
		q := new(big.Float).SetPrec(320).Quo(x, bigExp(y))
		y.Add(y, q.Sub(q, big.NewFloat(1)))
	}
	return y
}

// TestLn1pWithinItsBound pins the accuracy the credit's estimates rest on:
// ln1p(a) is within 2^-44 of ln(1 + a) computed to 320 bits, for a from
// 2^-45 to 2^90. Divided by ln M, at least 2^-31, that is under 2^-13 of a
// block, so the estimate lands on the block nearly always.
func TestLn1pWithinItsBound(t *testing.T) {
	tab := loadExpTables()
	rapid.Check(t, func(t *rapid.T) {
		a := math.Exp2(rapid.Float64Range(-45, 90).Draw(t, "log2(a)"))
		x := new(big.Float).SetPrec(320).SetFloat64(a)
		want := bigLn(x.Add(x, big.NewFloat(1)))
		d, _ := new(big.Float).Sub(new(big.Float).SetFloat64(tab.ln1p(a)), want).Float64()
		if math.Abs(d) > 0x1p-44 {
			t.Fatalf("ln1p(%g) is %g off", a, d)
		}
	})
	for _, a := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		assert.Zero(t, tab.ln1p(a), "ln1p(%g)", a)
	}
}

// errIn returns |got - want| / scale.
func errIn(got dd, want, scale *big.Float) float64 {
	d := new(big.Float).SetPrec(320).Sub(bigOf(got), want)
	f, _ := d.Abs(d).Quo(d, scale).Float64()
	return f
}

// TestClosedFormErrorBounds pins the bound the fast closed form rests on:
// for a block b in the closed form's range and x = b × ln M as the delays
// compute it, G = c × (e^x - 1) with c = base/(M - 1), both the fast value
// closedPair floors (from expTimes, and for b+1 through M) and the value
// gExact floors (from expm1) are within 2^-95 × c × e^x of G computed to
// 320 bits. closedPair settles a floor only 2^-93 × c × e^x away from any
// whole number, so where it settles, both floor to the same integer.
func TestClosedFormErrorBounds(t *testing.T) {
	const bound = 0x1p-95
	rapid.Check(t, func(t *rapid.T) {
		st := genClosedForm(t)
		b := rapid.Int64Range(max(int64(len(st.table)), 2), int64(58/st.lnM.hi)).Draw(t, "block")
		if !st.closedForm(b) {
			t.Skip("not in the closed form's range")
		}
		base := new(big.Float).SetPrec(320).SetInt64(st.base)
		c := new(big.Float).SetPrec(320).Quo(base, bigOf(st.dM))
		one := big.NewFloat(1)
		for i, x := range []dd{st.lnM.mulFloat(float64(b)), st.lnM.mulFloat(float64(b + 1))} {
			ex := bigExp(bigOf(x))
			h := new(big.Float).SetPrec(320).Mul(c, ex)
			g := new(big.Float).SetPrec(320).Mul(c, new(big.Float).SetPrec(320).Sub(ex, one))
			fast := st.tab.expTimes(float64(b), st.lnM, st.c)
			if i == 1 {
				fast = fast.mul(st.mM)
			}
			if e := errIn(fast.minus(st.c), g, h); e > bound {
				t.Fatalf("fast G(%d): error %g × H", b+int64(i), e)
			}
			if e := errIn(st.gDefined(x), g, h); e > bound {
				t.Fatalf("exact G(%d): error %g × H", b+int64(i), e)
			}
		}
	})
}

// genClosedForm draws a compiled growing backoff whose delays are summed in
// closed form past the table: multipliers from 1 + 2^-52 to 1.3, in blocks
// of one failure or many, bases from a microsecond to a day.
func genClosedForm(t *rapid.T) *steps {
	b := Backoff{
		Kind:       Exponential,
		BaseDelay:  time.Duration(math.Pow(10, rapid.Float64Range(3, 13.9).Draw(t, "log10(base)"))),
		Multiplier: 1 + math.Pow(10, -rapid.Float64Range(0.53, 15.6).Draw(t, "-log10(m-1)")),
	}
	st := b.compiled()
	st.prepare()
	if st.whole != 0 || !st.closed {
		t.Skip("no closed form")
	}
	return st
}
