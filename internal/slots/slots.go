// Package slots keeps a windowed retry budget's counts.
//
// It counts calls and granted retries over a trailing window of ten slots,
// the rule kept once for retry's Budget, on whatever clock its caller
// keeps: the monotonic one, or a simulation's.
package slots

import (
	"errors"
	"math"
	"math/bits"
	"sync"
	"time"

	"github.com/retrypolicy/retrypolicy/internal/budgetrange"
)

// N is the number of slots a window holds.
const N = 10

// microPercent is a percent's unit in a Window: a millionth of one.
const microPercent = 1_000_000

// Window grants a retry while the retries granted in the trailing window
// (the current slot and the N-1 before it) are fewer than bound =
// max(minRetries, floor(percent/100 × calls in the window)), and those
// granted in the current slot fewer than ceil(bound/N), so that granted
// retries do not come in one slot and age out together. Slots count from
// the first time the window is given (its origin): slot k is
// [origin + k·w, origin + (k+1)·w), w the interval over N; a time earlier
// than the latest given counts as the latest. A Window given a time reads
// no clock; the Now forms read the monotonic one (time.Since, cheaper than
// time.Now). It is safe for concurrent use; each method is O(1) (at most N
// slots aged) and allocates nothing.
type Window struct {
	percent uint64 // in millionths of a percent
	least   int64  // minRetries

	mu   sync.Mutex
	ring Ring // calls (A) and retries granted (B)
}

// New returns a window of interval (1 ms to 1 h, N slots of interval/N)
// that grants percent (0 to 100, kept to a millionth of a percent) of its
// calls as retries, and at least minRetries (0 to 1e9). An argument out of
// range is an error naming it and its range.
func New(percent float64, interval time.Duration, minRetries int) (*Window, error) {
	if p := budgetrange.Window(percent, interval, minRetries); len(p) > 0 {
		return nil, errors.New(p[0].Arg + " " + p[0].Rule)
	}
	return &Window{ring: NewRing(interval / N), percent: uint64(math.Floor(percent * microPercent)), least: int64(minRetries)}, nil
}

// Call counts a call at t.
func (w *Window) Call(at time.Time) {
	w.mu.Lock()
	w.call(w.ring.At(at))
	w.mu.Unlock()
}

// CallNow counts a call now.
func (w *Window) CallNow() {
	w.mu.Lock()
	w.call(w.ring.Now())
	w.mu.Unlock()
}

// call counts a call in slot i. w.mu is held.
func (w *Window) call(i int) { w.ring.AddA(i, 1) }

// Grant reports whether a retry is allowed at t, and counts it when it
// is.
func (w *Window) Grant(at time.Time) bool {
	w.mu.Lock()
	ok := w.grant(w.ring.At(at))
	w.mu.Unlock()
	return ok
}

// GrantNow reports whether a retry is allowed now, and counts it when it
// is.
func (w *Window) GrantNow() bool {
	w.mu.Lock()
	ok := w.grant(w.ring.Now())
	w.mu.Unlock()
	return ok
}

// grant reports whether a retry is allowed in slot i, and counts it when
// it is. w.mu is held.
func (w *Window) grant(i int) bool {
	bound := w.bound()
	ok := w.ring.SumB < bound && w.ring.B(i) < pace(bound)
	if ok {
		w.ring.AddB(i, 1)
	}
	return ok
}

// Allowed returns the retries Grant would allow at t: the lesser of the
// bound less the retries in the window and the pace less those in the
// current slot, at least 0.
func (w *Window) Allowed(at time.Time) int64 {
	w.mu.Lock()
	n := w.allowed(w.ring.At(at))
	w.mu.Unlock()
	return n
}

// AllowedNow returns the retries Grant would allow now.
func (w *Window) AllowedNow() int64 {
	w.mu.Lock()
	n := w.allowed(w.ring.Now())
	w.mu.Unlock()
	return n
}

// allowed returns the retries slot i allows. w.mu is held.
func (w *Window) allowed(i int) int64 {
	bound := w.bound()
	return max(min(bound-w.ring.SumB, pace(bound)-w.ring.B(i)), 0)
}

// pace is the most retries one slot grants: ceil(bound/N).
func pace(bound int64) int64 { return bound/N + min(bound%N, 1) }

// bound is max(least, floor(percent/100 × calls in the window)).
func (w *Window) bound() int64 {
	hi, lo := bits.Mul64(uint64(w.ring.SumA), w.percent)
	q, _ := bits.Div64(hi, lo, 100*microPercent) // hi < the divisor: percent <= 100·10^6
	return max(w.least, int64(min(q, math.MaxInt64)))
}
