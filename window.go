package retrypolicy

import (
	"sort"
	"time"
)

// countWindow returns the newest of failures (at least one) and how many
// fall within window of it: a failure at t counts iff
// last - window <= t <= last, so the newest always counts. failures may be
// in any order and repeat an instant; they are compared as instants.
func countWindow(failures []time.Time, window time.Duration) (last time.Time, n int) {
	if len(failures) == 1 {
		return failures[0], 1
	}
	// Histories usually come in order (appended as failures happen, or read
	// newest first): one pass finds that out, and a binary search counts.
	switch order(failures) {
	case +1:
		last = failures[len(failures)-1]
		from := instantOf(last.Add(-window))
		return last, len(failures) - sort.Search(len(failures), func(k int) bool { return !instantOf(failures[k]).before(from) })
	case -1:
		last = failures[0]
		from := instantOf(last.Add(-window))
		return last, sort.Search(len(failures), func(k int) bool { return instantOf(failures[k]).before(from) })
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

// instant is a time's place on the wall clock, seconds and nanoseconds since
// the Unix epoch, as a stored failure time is read back by every replica.
// It orders times as Before does for times without a monotonic clock
// reading and ignores such a reading where there is one. Unlike Before, its
// comparison inlines, which matters on Decide's path.
type instant struct {
	sec  int64
	nsec int32
}

func instantOf(t time.Time) instant { return instant{t.Unix(), int32(t.Nanosecond())} }

func (a instant) before(b instant) bool {
	return a.sec < b.sec || a.sec == b.sec && a.nsec < b.nsec
}
