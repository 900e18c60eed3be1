package retrypolicy

import "time"

// CountWindow returns the newest of failures and how many failures fall
// within window of it: a failure at t counts iff
// last - window <= t <= last. The window ends at the newest failure, not at
// the clock, so the count never changes while a job waits.
//
// failures may be in any order and may repeat an instant (each entry is one
// failure). Times compare as instants (Before/After), whatever their
// location; the count includes the newest failure, so n >= 1 for a
// non-empty slice. For an empty slice it returns the zero time and 0.
// It does not modify or retain failures.
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
	if i := ascendingPrefix(failures); i == len(failures) {
		last = failures[len(failures)-1]
		from := last.Add(-window)
		return last, len(failures) - searchFirst(len(failures), func(k int) bool { return !failures[k].Before(from) })
	} else if i == 1 && descending(failures) {
		last = failures[0]
		from := last.Add(-window)
		return last, searchFirst(len(failures), func(k int) bool { return failures[k].Before(from) })
	}
	last = failures[0]
	for _, t := range failures[1:] {
		if t.After(last) {
			last = t
		}
	}
	from := last.Add(-window)
	for _, t := range failures {
		if !t.Before(from) {
			n++
		}
	}
	return last, n
}

// ascendingPrefix returns the length of the longest prefix of ts in which no
// time is before the one preceding it.
func ascendingPrefix(ts []time.Time) int {
	i := 1
	for i < len(ts) && !ts[i].Before(ts[i-1]) {
		i++
	}
	return i
}

// descending reports whether no time in ts is after the one preceding it.
func descending(ts []time.Time) bool {
	for i := 1; i < len(ts); i++ {
		if ts[i].After(ts[i-1]) {
			return false
		}
	}
	return true
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
