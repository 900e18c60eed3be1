package retrypolicy

import (
	"math"
	"math/bits"
)

// dd is a double-double: the unevaluated sum hi + lo of two float64s, with
// |lo| at most half an ulp of hi, about 106 bits of precision. It is what
// the delays of a multiplier close to 1 are summed in.
//
// Every operation is deterministic: products go through math.FMA, which is
// exact by definition, and explicit conversions keep the compiler from
// fusing any other multiply-add, so every platform computes the same bits
// and every replica the same delays.
type dd struct{ hi, lo float64 }

// twoSum returns a+b and its rounding error, exactly.
func twoSum(a, b float64) (s, e float64) {
	s = a + b
	bb := s - a
	e = (a - (s - bb)) + (b - bb)
	return s, e
}

// fastTwoSum is twoSum for |a| >= |b|.
func fastTwoSum(a, b float64) (s, e float64) {
	s = a + b
	return s, b - (s - a)
}

// twoProd returns a×b and its rounding error, exactly.
func twoProd(a, b float64) (p, e float64) {
	p = a * b
	return p, math.FMA(a, b, -p)
}

func (a dd) add(b dd) dd {
	s, e := twoSum(a.hi, b.hi)
	t, f := twoSum(a.lo, b.lo)
	s, e = fastTwoSum(s, e+t)
	s, e = fastTwoSum(s, e+f)
	return dd{s, e}
}

// addSameSign is add for a and b of the same sign, where no cancellation
// can magnify the low parts' error: half the work.
func (a dd) addSameSign(b dd) dd {
	s, e := twoSum(a.hi, b.hi)
	s, e = fastTwoSum(s, e+(a.lo+b.lo))
	return dd{s, e}
}

func (a dd) neg() dd { return dd{-a.hi, -a.lo} }

func (a dd) sub(b dd) dd { return a.add(b.neg()) }

func (a dd) mul(b dd) dd {
	p, e := twoProd(a.hi, b.hi)
	e += float64(a.hi*b.lo) + float64(a.lo*b.hi)
	p, e = fastTwoSum(p, e)
	return dd{p, e}
}

func (a dd) mulFloat(b float64) dd {
	p, e := twoProd(a.hi, b)
	e += float64(a.lo * b)
	p, e = fastTwoSum(p, e)
	return dd{p, e}
}

func (a dd) div(b dd) dd {
	q1 := a.hi / b.hi
	r := a.sub(b.mulFloat(q1))
	q2 := r.hi / b.hi
	r = r.sub(b.mulFloat(q2))
	q3 := r.hi / b.hi
	q1, q2 = fastTwoSum(q1, q2)
	return dd{q1, q2}.add(dd{q3, 0})
}

// ln2DD is ln 2 to 106 bits.
var ln2DD = dd{0.6931471805599453, 2.3190468138462996e-17}

// invFact[i] is 1/i! to 106 bits.
var invFact = [...]dd{
	{1, 0}, {1, 0}, {0.5, 0},
	{0.16666666666666666, 9.25185853854297e-18},
	{0.041666666666666664, 2.3129646346357427e-18},
	{0.008333333333333333, 1.1564823173178714e-19},
	{0.001388888888888889, -5.300543954373577e-20},
	{0.0001984126984126984, 1.7209558293420705e-22},
	{2.48015873015873e-05, 2.1511947866775882e-23},
	{2.7557319223985893e-06, -1.858393274046472e-22},
	{2.755731922398589e-07, 2.3767714622250297e-23},
}

// expm1 returns e^x - 1 for 0 <= x <= 64, to a few units of 2^-104
// relative. It reduces x to r = x - k·ln 2, then to r/1024, sums the
// Taylor series of e^r - 1 there, and doubles back with
// e^(2y) - 1 = (e^y - 1)(e^y + 1), which loses no precision near 0.
func (x dd) expm1() dd {
	k := math.Floor(x.hi/ln2DD.hi + 0.5)
	r := x.sub(ln2DD.mulFloat(k))
	r = dd{r.hi / 1024, r.lo / 1024}
	// Horner's rule on 1/1! + r/2! + r²/3! + …: |r| <= 2^-11, so each sum
	// is dominated by the positive 1/i! and no cancellation occurs.
	s := invFact[len(invFact)-1]
	for i := len(invFact) - 2; i >= 1; i-- {
		s = s.mul(r).addSameSign(invFact[i])
	}
	s = s.mul(r)
	for range 10 {
		s = s.mul(s.addSameSign(dd{2, 0})) // e^y - 1 > -1: s + 2 > 1
	}
	if k == 0 {
		return s
	}
	p := s.add(dd{1, 0})
	p = dd{math.Ldexp(p.hi, int(k)), math.Ldexp(p.lo, int(k))}
	return p.sub(dd{1, 0})
}

// logDD returns ln m for 1 < m < 2^53, to about 2^-104 relative: Newton's
// method on expm1, from a start the float64 series of atanh gives, without
// the math package's logarithms, whose last bits differ between platforms.
func logDD(m float64) dd {
	frac, exp := math.Frexp(m) // m = frac × 2^exp, frac in [0.5, 1)
	frac, exp = 2*frac, exp-1  // frac in [1, 2)
	z := (frac - 1) / (frac + 1)
	z2 := float64(z * z)
	// 2·atanh(z) = 2(z + z³/3 + z⁵/5 + …), to about 5e-8 for z <= 1/3.
	y := 0.0
	for _, d := range [...]float64{11, 9, 7, 5, 3} {
		y = float64(y*z2) + 1/d
	}
	y = float64(float64(y*z2)+1) * z * 2
	start := dd{float64(float64(exp)*ln2DD.hi) + y, 0}
	delta := dd{m, 0}.sub(dd{1, 0}) // m - 1, exactly
	for range 3 {
		e := start.expm1()
		start = start.add(delta.sub(e).div(e.add(dd{1, 0})))
	}
	return start
}

// u128 is a non-negative 128-bit integer: the cumulative sums of delays.
type u128 struct{ hi, lo uint64 }

func u64(v uint64) u128 { return u128{0, v} }

func (a u128) add(b u128) u128 {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	hi, _ := bits.Add64(a.hi, b.hi, c)
	return u128{hi, lo}
}

// sub returns a - b; a >= b.
func (a u128) sub(b u128) u128 {
	lo, c := bits.Sub64(a.lo, b.lo, 0)
	hi, _ := bits.Sub64(a.hi, b.hi, c)
	return u128{hi, lo}
}

// mul64 returns a × v; the product must fit.
func (a u128) mul64(v uint64) u128 {
	hi, lo := bits.Mul64(a.lo, v)
	return u128{hi + a.hi*v, lo}
}

func (a u128) less(b u128) bool { return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo }

// int64 returns a, or math.MaxInt64 when a is larger.
func (a u128) int64() int64 {
	if a.hi != 0 || a.lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(a.lo)
}

// floor returns the floor of x >= 0, below 2^127, as an integer.
func (x dd) floor() u128 {
	fh := math.Floor(x.hi)
	s, e := twoSum(x.hi-fh, x.lo) // x.hi - fh is exact
	f := math.Floor(s)
	if f == s && e < 0 {
		f-- // s is whole and the exact sum is just below it
	}
	// x = fh + s + e, and floor(s + e) = f: f is at least -1 and, as lo is
	// at most half an ulp of hi, below 2^53.
	v := floatToU128(fh)
	if f < 0 {
		return v.sub(u64(uint64(-f)))
	}
	return v.add(u64(uint64(f)))
}

// floatToU128 returns a whole float64 in [0, 2^128) as an integer.
func floatToU128(f float64) u128 {
	if f < 1<<63 {
		return u64(uint64(f))
	}
	b := math.Float64bits(f)
	mant := b&(1<<52-1) | 1<<52
	shift := int(b>>52&0x7ff) - 1075 // f = mant × 2^shift, shift >= 11 here
	if shift >= 64 {
		return u128{mant << (shift - 64), 0}
	}
	return u128{mant >> (64 - shift), mant << shift}
}
