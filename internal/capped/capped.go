// Package capped keeps the first problems of a document and counts the
// rest.
package capped

import "strconv"

// Max is the most problems an error about one document lists.
const Max = 20

// List is what is wrong with one document: the first Max problems, and a
// count of the rest.
type List[T any] struct {
	Kept []T
	More int
}

// Add keeps p, or counts it once Max are kept.
func (ps *List[T]) Add(p T) {
	if ps.Full() {
		ps.More++
		return
	}
	ps.Kept = append(ps.Kept, p)
}

// Full reports whether Max are kept: what comes now is only
// counted.
func (ps *List[T]) Full() bool { return len(ps.Kept) >= Max }

// Reset empties ps, keeping its List's room.
func (ps *List[T]) Reset() { ps.Kept, ps.More = ps.Kept[:0], 0 }

// AndMore says how many problems were left out: "and 3 more".
func AndMore(n int) string { return "and " + strconv.Itoa(n) + " more" }
