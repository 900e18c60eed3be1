package retrypolicy

import (
	"errors"
	"math"
	"sync"
	"time"
)

// CountWindow returns the newest of failures and how many failures fall
// within window of it: a failure at t counts iff
// last - window <= t <= last. The window ends at the newest failure, not at
// the clock, so the count never changes while a job waits.
//
// failures may be in any order and may repeat an instant (each entry is one
// failure). Times compare as wall-clock instants, whatever their location
// and ignoring monotonic clock readings (see [Decide]); the count includes
// the newest failure, so n >= 1 for a non-empty slice. For an empty slice it
// returns the zero time and 0. It does not modify or retain failures.
func CountWindow(failures []time.Time, window time.Duration) (last time.Time, n int) {
	if len(failures) == 0 {
		return time.Time{}, 0
	}
	if len(failures) == 1 {
		return failures[0], 1
	}
	window = max(window, 0)
	// Histories usually come in order (appended as failures happen, or read
	// newest first): one pass finds that out, and a binary search counts.
	switch order(failures) {
	case +1:
		last = failures[len(failures)-1]
		from := instantOf(last.Add(-window))
		return last, len(failures) - searchFirst(len(failures), func(k int) bool { return !instantOf(failures[k]).before(from) })
	case -1:
		last = failures[0]
		from := instantOf(last.Add(-window))
		return last, searchFirst(len(failures), func(k int) bool { return instantOf(failures[k]).before(from) })
	}
	last = failures[0]
	newest := instantOf(last)
	for _, t := range failures[1:] {
		if at := instantOf(t); newest.before(at) {
			last, newest = t, at
		}
	}
	from := instantOf(last.Add(-window))
	for _, t := range failures {
		if !instantOf(t).before(from) {
			n++
		}
	}
	return last, n
}

// order returns +1 when no time in ts is before the one preceding it, -1
// when none is after it (all equal counts as +1), and 0 otherwise.
func order(ts []time.Time) int {
	up, down := true, true
	prev := instantOf(ts[0])
	for _, t := range ts[1:] {
		at := instantOf(t)
		switch {
		case at.before(prev):
			if up = false; !down {
				return 0
			}
		case prev.before(at):
			if down = false; !up {
				return 0
			}
		}
		prev = at
	}
	if up {
		return +1
	}
	return -1
}

// instant is a time's place on the wall clock: seconds and nanoseconds since
// the Unix epoch, as a failure time is stored and as every replica reads it.
// It orders times as Before and After do for times without a monotonic clock
// reading, and ignores such a reading where there is one, so that a process
// that recorded failures in memory decides as a replica that read them back.
// Unlike Before, its comparison inlines, which matters on Decide's path.
type instant struct {
	sec  int64
	nsec int32
}

func instantOf(t time.Time) instant { return instant{t.Unix(), int32(t.Nanosecond())} }

func (a instant) before(b instant) bool {
	return a.sec < b.sec || a.sec == b.sec && a.nsec < b.nsec
}

// searchFirst returns the smallest k in [0, n) for which ok(k) is true, or n;
// ok must be false then true along k. It is sort.Search without the import.
func searchFirst(n int, ok func(int) bool) int {
	lo, hi := 0, n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if ok(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// ErrTimeOutOfRange is returned by History.Record for an instant a History
// cannot hold: before 1677-09-21T00:12:44Z or after
// 2262-04-11T23:47:16.854775807Z, the span of int64 nanoseconds since the
// Unix epoch.
var ErrTimeOutOfRange = errors.New("retrypolicy: failure time outside 1677-09-21 to 2262-04-11")

// History is one job's failure history, kept in memory by a scheduler that
// decides often: it records failures in any order, counts the window in
// O(log n), and keeps only what a decision under its strategy can still
// need. That is the failures within the window of the newest one (an older
// failure can never count again, since the newest only moves forward), and
// for a bounded strategy no more than max_attempts of them (the verdict is
// fatal from there on, whatever the rest). Each retained failure takes 8
// bytes (Unix nanoseconds); dead and spare room in the backing array is
// kept to about an eighth of that, plus a small constant.
//
// Failures are kept as instants: times come back in UTC and without a
// monotonic clock reading. The zero History is not usable; call NewHistory.
// A History is safe for concurrent use by multiple goroutines.
type History struct {
	mu    sync.Mutex
	s     Strategy
	keep  int     // the most failures worth keeping; 0 means no limit
	times []int64 // ascending; times[lo:] are live
	lo    int
}

// NewHistory returns an empty history for a job under strategy s.
func NewHistory(s Strategy) (*History, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	h := &History{s: s}
	if s.Kind == Bounded {
		h.keep = s.MaxAttempts
	}
	return h, nil
}

// Record adds a failure at t. It returns ErrTimeOutOfRange, and records
// nothing, for an instant the History cannot hold.
func (h *History) Record(t time.Time) error {
	ns, ok := unixNano(t)
	if !ok {
		return ErrTimeOutOfRange
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	live := h.times[h.lo:]
	if len(live) > 0 && ns < live[len(live)-1]-int64(h.s.window()) {
		return nil // older than the newest failure's window: it never counts
	}
	// Insert in order; failures usually arrive newest last, so this is
	// usually an append.
	i := len(live) - searchFirst(len(live), func(k int) bool { return live[len(live)-1-k] <= ns })
	if len(h.times) == cap(h.times) {
		h.compact() // reuse the dead prefix before growing
	}
	h.times = append(h.times, 0)
	copy(h.times[h.lo+i+1:], h.times[h.lo+i:])
	h.times[h.lo+i] = ns
	h.prune()
	return nil
}

// prune drops what no decision can need: failures before the newest one's
// window, and the oldest beyond keep.
func (h *History) prune() {
	live := h.times[h.lo:]
	from := live[len(live)-1] - int64(h.s.window())
	drop := searchFirst(len(live), func(k int) bool { return live[k] >= from })
	if h.keep > 0 && len(live)-drop > h.keep {
		drop = len(live) - h.keep
	}
	h.lo += drop
	if n := len(h.times) - h.lo; h.lo > n/8+8 {
		h.compact()
	}
}

// compact moves the live failures to the front of the array, and onto a
// smaller one when more than an eighth of it (and a constant) would be spare. Compacting once the
// dead prefix passes an eighth of the live count keeps the array within
// 1.125 times the retained failures plus a constant, at an amortized cost of
// a few copies per failure.
func (h *History) compact() {
	n := len(h.times) - h.lo
	if cap(h.times) > n+n/8+32 {
		h.times = append(make([]int64, 0, n+n/8+16), h.times[h.lo:]...)
	} else {
		h.times = h.times[:copy(h.times, h.times[h.lo:])]
	}
	h.lo = 0
}

// Len returns how many failures the history retains.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.times) - h.lo
}

// Window returns the newest failure and the number of failures within the
// strategy's window of it, as CountWindow would for every failure recorded;
// for a bounded strategy the count stops at max_attempts. It returns the zero
// time and 0 for an empty history.
func (h *History) Window() (last time.Time, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.window()
}

func (h *History) window() (time.Time, int) {
	live := h.times[h.lo:]
	if len(live) == 0 {
		return time.Time{}, 0
	}
	newest := live[len(live)-1]
	from := newest - int64(h.s.window())
	n := len(live) - searchFirst(len(live), func(k int) bool { return live[k] >= from })
	return time.Unix(0, newest).UTC(), n
}

// Decide is Decide for the recorded failures under the history's strategy.
// It returns ErrNoFailures for an empty history, and does not allocate.
func (h *History) Decide(uptime time.Duration, seed uint64, now time.Time) (Decision, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var d Decision
	if d.Last, d.Failures = h.window(); d.Failures == 0 {
		return Decision{}, ErrNoFailures
	}
	h.s.decide(&d, uptime, seed, now)
	return d, nil
}

// unixNano returns t's nanoseconds since the Unix epoch, or false when they
// do not fit in an int64 (whole seconds from -2^63/1e9 on, to the largest
// int64).
func unixNano(t time.Time) (int64, bool) {
	const secMax = math.MaxInt64 / int64(time.Second)
	sec, nsec := t.Unix(), int64(t.Nanosecond())
	if sec < -secMax || sec > secMax || (sec == secMax && nsec > math.MaxInt64%int64(time.Second)) {
		return 0, false
	}
	return sec*int64(time.Second) + nsec, true
}
