package slots

import "time"

// Ring counts two kinds of event over a trailing window of N slots: the
// rule of aging kept once for the windowed budget (calls and retries) and
// the throttle (requests and accepts). Slots count from the first time
// the ring is given (its origin): slot k is [origin + k·w, origin +
// (k+1)·w), w its width; a time earlier than the latest given counts as
// the latest. A Ring is not safe for concurrent use: its owner holds a
// lock around it. Each method is O(1) (at most N slots aged) and
// allocates nothing.
type Ring struct {
	width  time.Duration // a slot's
	origin time.Time     // the first time given
	begun  bool          // origin is set
	slot   int64         // the current slot's index
	a, b   [N]int64
	// SumA and SumB are the counts of each kind in the window: the current
	// slot and the N-1 before it.
	SumA, SumB int64
}

// NewRing returns a ring of N slots of width (above 0).
func NewRing(width time.Duration) Ring { return Ring{width: width} }

// At moves the ring to the slot of t, emptying the slots that left the
// window, and returns that slot's index: the first time given is the
// origin; a time before the current slot counts in it.
func (r *Ring) At(t time.Time) int {
	if !r.begun {
		r.origin, r.begun = t, true
	}
	return r.age(t.Sub(r.origin))
}

// Now is At with the monotonic clock's now, read as time.Since the
// origin (cheaper than time.Now) once there is one.
func (r *Ring) Now() int {
	if !r.begun {
		return r.At(time.Now())
	}
	return r.age(time.Since(r.origin))
}

// AddA and AddB count n events of each kind in slot i.
func (r *Ring) AddA(i int, n int64) { r.a[i] += n; r.SumA += n }

// AddB counts n events of the second kind in slot i.
func (r *Ring) AddB(i int, n int64) { r.b[i] += n; r.SumB += n }

// B returns the events of the second kind in slot i.
func (r *Ring) B(i int) int64 { return r.b[i] }

// age moves the ring to the slot of offset at from the origin.
func (r *Ring) age(at time.Duration) int {
	slot := int64(max(at, 0) / r.width)
	if slot > r.slot {
		for k := max(r.slot+1, slot-N+1); k <= slot; k++ {
			i := k % N
			r.SumA -= r.a[i]
			r.SumB -= r.b[i]
			r.a[i], r.b[i] = 0, 0
		}
		r.slot = slot
	}
	return int(r.slot % N)
}
