package retrypolicy

import (
	"math"
	"math/bits"
	"time"

	"github.com/retrypolicy/retrypolicy/internal/splitmix"
)

// BackoffKind names how the delay grows with the failures in the window:
// Fixed, Exponential or ExponentialWithJitter. The zero value is not a
// backoff kind; in a Backoff that sets other fields it means Exponential.
type BackoffKind uint8

const (
	// Fixed waits BaseDelay after every failure.
	Fixed BackoffKind = iota + 1
	// Exponential waits BaseDelay × Multiplier^(k-1) after the window's
	// k-th failure, at most MaxDelay when it is set.
	Exponential
	// ExponentialWithJitter is Exponential plus up to a quarter of the
	// credited delay, drawn from the caller's jitter seed.
	ExponentialWithJitter
)

var backoffEnum = enum{typ: "BackoffKind", what: "backoff kind", names: []string{"", "fixed", "exponential", "exponential_with_jitter"}}

// String returns the descriptor's name for k, or "BackoffKind(N)".
func (k BackoffKind) String() string { return backoffEnum.string(uint8(k)) }

// MarshalText returns the descriptor's name for k; it fails for a value
// that is not a backoff kind.
func (k BackoffKind) MarshalText() ([]byte, error) { return backoffEnum.marshal(uint8(k)) }

// UnmarshalText reads a descriptor's backoff kind name, exactly.
func (k *BackoffKind) UnmarshalText(text []byte) error {
	return backoffEnum.unmarshal(text, (*uint8)(k))
}

// exponential reports whether k grows the delay with a multiplier.
func (k BackoffKind) exponential() bool {
	return k == Exponential || k == ExponentialWithJitter
}

// Backoff says how long a failed job waits before it is retried. Multiplier
// and MaxDelay belong to the exponential kinds and are zero for Fixed.
type Backoff struct {
	// Kind is how the delay grows: Fixed, Exponential or
	// ExponentialWithJitter. Zero is Exponential, in a Backoff that sets
	// other fields as in the zero Backoff (the default backoff).
	Kind BackoffKind
	// BaseDelay is the first delay, and every delay for Fixed; zero is 1 s.
	BaseDelay time.Duration
	// Multiplier multiplies each delay for the exponential kinds: greater
	// than 0 and finite; zero is 2.
	Multiplier float64
	// MaxDelay caps the delay for the exponential kinds, at least
	// BaseDelay; zero means no cap (delays still saturate at 100 years).
	MaxDelay time.Duration
}

// defaultBackoff is the backoff of the default strategy: exponential, 1 s,
// ×2, at most an hour.
func defaultBackoff() Backoff {
	return Backoff{Kind: Exponential, BaseDelay: time.Second, Multiplier: 2, MaxDelay: time.Hour}
}

// Limits of the delays.
const (
	// ceiling is the longest delay the library computes: 100 years of 365
	// days. Longer delays saturate at it; jitter may add a quarter on top.
	ceiling = 100 * 365 * 24 * time.Hour
	// minDelay is the shortest delay a Strategy built in Go may use: any
	// positive whole number of nanoseconds (docs/semantics.md, section 4), for an
	// in-process loop around a lock or a local socket.
	minDelay = time.Nanosecond
	// maxDelaySecs is the most whole seconds a time.Duration holds.
	maxDelaySecs = int64(math.MaxInt64 / int64(time.Second))
)

// A due time is the newest failure plus at most the ceiling and a quarter
// of it for the jitter: that sum must stay a Duration. (This constant does
// not compile if it would not.)
const _ = uint64(math.MaxInt64 - int64(ceiling) - int64(ceiling/4))

// delays is a backoff compiled for deciding: the delay owed after the
// window's k-th failure, in nanoseconds, for every k >= 1.
//
// For Fixed and a multiplier of 1 every delay is min(base, limit). For the
// exponential kinds the k-th delay is
//
//	min(limit, floor(base × m^(k-1)))
//
// with the power computed in integer arithmetic with 128-bit mantissas
// (type wide), so that every machine gets the same nanoseconds: m^(k-1) =
// M^h × m^i for k-1 = 256h + i, with m^i = m^(i-1) × m, M = m^255 × m and
// M^h by binary exponentiation. Its relative error is below 2^-60 for any
// k: far inside the rule's tolerance (1 ns or 10^-9 of the value), and below the smallest step a
// multiplier other than 1 takes (2^-53), so the delays never decrease with
// k for a multiplier above 1 and never increase below 1. The limit is
// MaxDelay, or the 100-year ceiling; the product saturates, not the base.
//
// The table of sums covers the steps up to the limit, at most blockSize of
// them, for the credit's search. Past it a step owes the limit, zero, or (for
// multipliers so close to 1 that 256 steps fall short of the limit) its
// delay from the powers m^i, one product each once base × M^h is known.
type delays struct {
	base  int64   // the base delay, uncapped
	limit int64   // MaxDelay, or the ceiling
	grows bool    // exponential with a multiplier above 1: credit may pay steps
	sums  []int64 // sums[k] = delay(1) + … + delay(k) < 2^63, for k <= table()
	rest  int64   // the delay of every step past the table, when small is nil
	small []wide  // m^i for i < blockSize, when steps past the table need them
	block wide    // m^blockSize, with small
}

// blockSize is the run of failures whose delays share one power of M.
const blockSize = 256

// tables is the storage a backoff compiles into: Compile keeps what it
// needs of it, and Decide on a plain Strategy keeps it on the stack.
type tables struct {
	sums  [blockSize + 1]int64
	small [blockSize]wide
}

// compileDelays returns b, a valid backoff, compiled into t.
func compileDelays(b *Backoff, t *tables) delays {
	d := delays{base: int64(b.BaseDelay), limit: int64(ceiling)}
	if b.Kind.exponential() && b.MaxDelay > 0 {
		d.limit = int64(min(b.MaxDelay, ceiling))
	}
	if !b.Kind.exponential() || b.Multiplier == 1 {
		d.rest = min(d.base, d.limit)
		d.sums = t.sums[:1]
		return d
	}
	d.grows = b.Multiplier > 1
	m, x := wideFloat(b.Multiplier), wideInt(uint64(d.base))
	t.small[0] = wideOne
	k := 1 // the step being tabled, which owes x × m^(k-1)
	for ; k <= blockSize; k++ {
		if k > 1 {
			t.small[k-1] = t.small[k-2].mul(m)
		}
		step := x.mul(t.small[k-1]).floor(d.limit)
		if d.grows && step == d.limit || !d.grows && step == 0 {
			// Every later step owes the same: delays are monotone.
			d.sums, d.rest = t.sums[:k], step
			return d
		}
		if step > math.MaxInt64-t.sums[k-1] {
			break // a sum no uptime reaches: the table ends here
		}
		t.sums[k] = t.sums[k-1] + step
	}
	d.sums = t.sums[:k]
	for i := k; i < blockSize; i++ {
		t.small[i] = t.small[i-1].mul(m)
	}
	d.small, d.block = t.small[:], t.small[blockSize-1].mul(m)
	return d
}

// own returns d with tables of its own, just as large as it needs.
func (d delays) own() delays {
	// make and copy, not slices.Clone, which escape analysis takes to
	// alias its argument: the tables compiled into stay on the stack.
	sums := make([]int64, len(d.sums))
	copy(sums, d.sums)
	var small []wide
	if d.small != nil {
		small = make([]wide, len(d.small))
		copy(small, d.small)
	}
	return delays{base: d.base, limit: d.limit, grows: d.grows, sums: sums, rest: d.rest, small: small, block: d.block}
}

// table returns the last step the table of sums covers.
func (d *delays) table() int64 { return int64(len(d.sums) - 1) }

// at returns the delay owed after the window's k-th failure, k >= 1.
func (d *delays) at(k int64) int64 {
	if k < int64(len(d.sums)) {
		return d.sums[k] - d.sums[k-1]
	}
	if d.small == nil {
		return d.rest
	}
	return d.inBlock(d.blockBase(uint64(k-1)/blockSize), uint64(k-1)%blockSize)
}

// blockBase returns base × M^h, the first delay of block h unfloored.
func (d *delays) blockBase(h uint64) wide {
	return wideInt(uint64(d.base)).mul(d.block.pow(h))
}

// inBlock returns the i-th delay of the block whose base is x.
func (d *delays) inBlock(x wide, i uint64) int64 {
	return x.mul(d.small[i]).floor(d.limit)
}

// wide is a positive number (hi·2^64 + lo) × 2^(e-127), whose 128-bit
// mantissa has its top bit set: in [1, 2) × 2^e. Products truncate, so
// every machine computes the same bits.
type wide struct {
	hi, lo uint64
	e      int64
}

var wideOne = wide{hi: 1 << 63}

// wideExp bounds the exponent: past it a number saturates any delay, or
// floors to zero in it.
const wideExp = 1 << 12

// wideInt returns v, which must be at least 1.
func wideInt(v uint64) wide {
	z := bits.LeadingZeros64(v)
	return wide{hi: v << z, e: int64(63 - z)}
}

// wideFloat returns f, which must be positive and finite.
func wideFloat(f float64) wide {
	frac, exp := math.Frexp(f) // f = frac × 2^exp, frac in [0.5, 1)
	return wide{hi: uint64(frac*(1<<53)) << 11, e: int64(exp - 1)}
}

// mul returns a × b, truncated to 128 bits: within 2^-124 of the product.
func (a wide) mul(b wide) wide {
	// The top 128 bits of the 256-bit product of the mantissas; the
	// product of the low words and the low halves of the cross products
	// are dropped.
	h1, l1 := bits.Mul64(a.hi, b.hi)
	h2, _ := bits.Mul64(a.hi, b.lo)
	h3, _ := bits.Mul64(a.lo, b.hi)
	lo, c := bits.Add64(l1, h2, 0)
	hi := h1 + c
	lo, c = bits.Add64(lo, h3, 0)
	hi += c
	e := a.e + b.e
	if hi>>63 == 0 { // the mantissas' product is below 2
		hi, lo = hi<<1|lo>>63, lo<<1
	} else {
		e++
	}
	return wide{hi, lo, min(max(e, -wideExp), wideExp)}
}

// pow returns w^h by binary exponentiation, w^0 being 1.
func (w wide) pow(h uint64) wide {
	r, set := wideOne, false
	for ; h > 0; h >>= 1 {
		if h&1 != 0 {
			if set {
				r = r.mul(w)
			} else {
				r, set = w, true
			}
		}
		if h > 1 {
			w = w.mul(w)
		}
	}
	return r
}

// floor returns the whole part of w, at most limit (limit < 2^63).
func (w wide) floor(limit int64) int64 {
	switch {
	case w.e < 0:
		return 0
	case w.e >= 63:
		return limit
	}
	return min(int64(w.hi>>(63-w.e)), limit)
}

// jitterUnit derives the jitter's u in [0, 1) from the caller's seed and the
// failure being decided, as a 53-bit fraction u53/2^53. The same seed, newest
// failure and count always give the same u; the mixing spreads different
// seeds uniformly. The newest failure enters by its instant (seconds and
// nanoseconds since the Unix epoch), whatever its location.
func jitterUnit(seed uint64, last instant, n int) uint64 {
	return splitmix.Unit(seed, time.Unix(last.sec, int64(last.nsec)), n)
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
