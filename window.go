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
	last = failures[0]
	for _, t := range failures[1:] {
		if t.After(last) {
			last = t
		}
	}
	from := last.Add(-max(window, 0))
	for _, t := range failures {
		if !t.Before(from) {
			n++
		}
	}
	return last, n
}
