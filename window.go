package retrypolicy

import (
	"math"
	"time"
)

// The windows failures are counted over.
const (
	// maxWindow is the longest window of a Bounded strategy: the seven days
	// a scheduler keeps failures for.
	maxWindow = 7 * 24 * time.Hour
	// defaultWindow is the window of a Bounded descriptor without window_secs.
	defaultWindow = time.Hour
	// unlessStoppedWindow is the window UnlessStopped counts its backoff over.
	unlessStoppedWindow = time.Hour
)

// countWindow returns the index of the newest of failures (at least one),
// its instant, and how many fall within window of it: a failure at t counts iff
// last - window <= t <= last, so the newest always counts. failures may be
// in any order and repeat an instant; they are compared as instants.
func countWindow(failures []time.Time, window time.Duration) (newest int, at instant, n int) {
	// Most times fall within 2^33 seconds of 1970 (the years 1697 to
	// 2242), where an instant fits in int64 nanoseconds and compares in one
	// instruction.
	const span = 1 << 33
	// One pass reads every instant and keeps the earliest and the newest:
	// when the earliest is in the window, they all are, in whatever order.
	// sec + span is below 2^34 for every time within the span, and so is
	// their bitwise or. The pass reads two at a time, which halves the
	// loop's own work and lets the two chains of comparisons overlap.
	lo, hi, far := int64(math.MaxInt64), int64(math.MinInt64), uint64(0)
	i := 0
	for ; i+1 < len(failures); i += 2 {
		t, u := &failures[i], &failures[i+1]
		ts, us := t.Unix(), u.Unix()
		far |= uint64(ts+span) | uint64(us+span)
		tv := ts*int64(time.Second) + int64(t.Nanosecond())
		uv := us*int64(time.Second) + int64(u.Nanosecond())
		lo, hi = min(lo, tv, uv), max(hi, tv, uv)
	}
	if i < len(failures) {
		t := &failures[i]
		ts := t.Unix()
		far |= uint64(ts + span)
		tv := ts*int64(time.Second) + int64(t.Nanosecond())
		lo, hi = min(lo, tv), max(hi, tv)
	}
	if far >= 2*span {
		return countWindowAnywhen(failures, window)
	}
	newest = len(failures) - 1
	for unixNanos(failures[newest]) != hi {
		newest--
	}
	if from := hi - int64(window); lo < from {
		for _, t := range failures {
			if unixNanos(t) >= from {
				n++
			}
		}
	} else {
		n = len(failures) // all in the window: the usual case
	}
	return newest, instantOf(failures[newest]), n
}

// unixNanos is t's nanoseconds since 1970, for t within countWindow's span.
func unixNanos(t time.Time) int64 { return t.Unix()*int64(time.Second) + int64(t.Nanosecond()) }

// countWindowAnywhen is countWindow for times anywhere in time.Time's
// range, compared as instants: a pass for the newest, a pass to count.
func countWindowAnywhen(failures []time.Time, window time.Duration) (newest int, at instant, n int) {
	at = instantOf(failures[0])
	for i, t := range failures[1:] {
		if a := instantOf(t); at.before(a) {
			newest, at = i+1, a
		}
	}
	from := at.minus(window)
	for _, t := range failures {
		if !instantOf(t).before(from) {
			n++
		}
	}
	return newest, at, n
}
