package retrypolicy

import (
	"math"
	"math/bits"
	"sync"
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

// minus returns a - b for a >= b >= 0, to within about 2^-105 × a: it
// saves add's work for operands whose signs are known.
func (a dd) minus(b dd) dd {
	s, e := twoSum(a.hi, -b.hi)
	s, e = fastTwoSum(s, e+(a.lo-b.lo))
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

// mulLoose is mul without the final renormalization, for a product that
// feeds another: its low part may exceed half an ulp of its high part by
// a little, which mul accepts.
func (a dd) mulLoose(b dd) dd {
	p, e := twoProd(a.hi, b.hi)
	return dd{p, e + (float64(a.hi*b.lo) + float64(a.lo*b.hi))}
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

// expTables holds what expTimes needs: 2^(i/256) and 2^(i/65536) for i below
// 256, each from expm1 to about 2^-100 relative, and ln 2 / 65536 split in
// three parts, the first with 29 significant bits so that its product with
// a whole number below 2^24 is exact.
//
// It also holds what ln1p needs: ln(1 + i/128) and 1/(1 + i/128).
type expTables struct {
	coarse, fine [256]dd
	l1, l2, l3   float64
	ln, inv      [128]float64
}

// loadExpTables computes the tables once, on first use: about 0.2 ms.
var loadExpTables = sync.OnceValue(func() *expTables {
	t := new(expTables)
	for i := range 256 {
		t.coarse[i] = ln2DD.mulFloat(float64(i) / 256).expm1().add(dd{1, 0})
		t.fine[i] = ln2DD.mulFloat(float64(i) / 65536).expm1().add(dd{1, 0})
	}
	l1 := math.Float64frombits(math.Float64bits(ln2DD.hi) &^ (1<<24 - 1))
	l2, l3 := fastTwoSum(ln2DD.hi-l1, ln2DD.lo) // ln2DD.hi - l1 is exact
	t.l1, t.l2, t.l3 = l1/65536, l2/65536, l3/65536
	for i := range 128 {
		t.ln[i] = math.Log1p(float64(i) / 128)
		t.inv[i] = 1 / (1 + float64(i)/128)
	}
	return t
})

// ln1p returns ln(1 + a) for a > 0 (0 otherwise) to about 2^-44, in a third
// of math.Log1p's time, for estimates: 1 + a = 2^e × v, v in [1, 2), is
// ln 2 × e + ln(1 + i/128) + ln(1 + r) with i the first seven bits of v's
// fraction and 0 <= r < 2^-7, where five terms of the series suffice. Like
// expTimes, its last bits may differ between platforms.
func (t *expTables) ln1p(a float64) float64 {
	if !(a > 0 && a < 0x1p1000) {
		return 0
	}
	b := math.Float64bits(1 + a)
	i := b >> 45 & 127
	v := math.Float64frombits(b&(1<<52-1) | 1023<<52)
	r := (v - (1 + float64(i)/128)) * t.inv[i] // v's difference is exact
	p := r * (1 - r*(0.5-r*(1.0/3-r*(0.25-r*0.2))))
	return float64(int64(b>>52)-1023)*math.Ln2 + t.ln[i] + p
}

// expTimes returns c × e^x for x = b × lnM as lnM.mulFloat(b) computes it,
// 0 <= x <= 60, and c > 0, to about 2^-98 relative, over ten times faster
// than expm1: e^x = 2^(N/65536) × e^r, with N the nearest whole number to
// x × 65536/ln 2, 2^(N/65536) a power of two times two table entries, and
// |r| <= ln 2 / 131072, where five terms of e^r's series suffice and only
// the first two need more than a float64. The entries are multiplied by c
// while e^r is summed, and x's two parts go into r without being
// normalized first.
//
// Its last bits may differ between platforms, as the compiler may fuse a
// multiply-add: it serves estimates that are checked against a margin
// (see steps.closedPair), never a result by itself.
func (t *expTables) expTimes(b float64, lnM, c dd) dd {
	// x = xh + xl exactly as mulFloat has it before normalizing.
	xh, xe := twoProd(b, lnM.hi)
	xl := xe + float64(lnM.lo*b)
	n := float64(int64(xh*(65536/math.Ln2) + 0.5)) // round: x >= 0, N below 2^23
	k := int64(n)
	scale := math.Float64frombits(uint64(1023+k>>16) << 52) // 2^(N/65536 whole part)
	scaled := t.coarse[k>>8&255].mulLoose(t.fine[k&255]).mulLoose(dd{c.hi * scale, c.lo * scale})
	// r = x - N·ln 2/65536: N·l1 is exact, and so is xh minus it, the
	// two being within a factor of 2 (or N being 0).
	r1 := xh - n*t.l1
	p, pe := twoProd(n, t.l2)
	s, se := twoSum(r1, -p)
	rh, rl := fastTwoSum(s, se-pe+xl-n*t.l3)
	// e^r - 1 = r + r²/2 + r³/6 + r⁴/24 + r⁵/120, |r| <= 2^-17.4: r³/6
	// is below 2^-54, so the float64 tail errs by less than 2^-106, and
	// r⁶/720 is below 2^-113.
	sq, sqe := twoProd(rh, rh)
	tail := sq * rh * (1.0/6 + rh*(1.0/24+rh*(1.0/120)))
	sh, sl := fastTwoSum(rh, sq*0.5)
	sl += rl + sqe*0.5 + rh*rl + tail
	eh, el := fastTwoSum(1, sh)
	return scaled.mul(dd{eh, el + sl})
}
