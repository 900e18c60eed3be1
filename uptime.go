package retrypolicy

import (
	"sort"
	"time"
)

// owe returns the delay owed after the window's n-th failure (n >= 1), and
// that delay once the last run's uptime has paid part of it back. The
// usual case, a step in the table that the uptime does not cover, costs
// two loads; credit does the rest.
func (d *delays) owe(n int64, uptime time.Duration) (owed, credited int64) {
	if n < int64(len(d.sums)) {
		o := d.sums[n] - d.sums[n-1]
		if int64(uptime) < o || !d.grows || n == 1 {
			return o, o
		}
		return o, min(o, d.search(n, int64(uptime))) // tabled steps are below the limit
	}
	return d.credit(n, max(int64(uptime), 0))
}

// credit returns what the reference loop of uptime credit (docs/semantics.md) returns for n >= 1
// failures and an uptime u >= 0:
//
//	s, c := n, u
//	for s > 1 && c >= delay(s) { c -= delay(s); s-- }
//	return delay(n), min(delay(n), delay(s))
//
// Steps at the limit are paid in one division, tabled ones by a binary
// search of the sums, and those between (multipliers near 1 only) one at a
// time: linear in the steps the uptime pays, never more than n.
//
// Delays that do not grow make the loop change nothing: every lower step
// owes at least as much as the n-th.
func (d *delays) credit(n, u int64) (owed, credited int64) {
	owed = d.at(n)
	if !d.grows || n == 1 || u < owed {
		return owed, owed
	}
	s, c := n, u
	if owed == d.limit {
		// Steps max(first capped, 2) to n each owe the limit.
		low := max(d.firstCapped(n), 2)
		if c/d.limit < s-low+1 {
			return owed, owed // the uptime stops on a capped step
		}
		c -= (s - low + 1) * d.limit
		s = low - 1
	}
	if s > d.table() && s > 1 {
		var stop int64
		if s, c, stop = d.payPastTable(s, c); stop > 0 {
			return owed, min(owed, stop)
		}
	}
	if s == 1 {
		return owed, min(owed, d.at(1))
	}
	return owed, min(owed, d.search(s, c))
}

// search returns the step the reference loop stops on from step s in the
// table with the credit c left: the least j >= 1 with sums[j] >= sums[s] -
// c, as the uptime left does not cover steps j..s.
func (d *delays) search(s, c int64) int64 {
	target := d.sums[s] - c
	lo, hi := int64(1), s
	for lo < hi {
		mid := int64(uint64(lo+hi) >> 1)
		if d.sums[mid] < target {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return d.sums[lo] - d.sums[lo-1]
}

// payPastTable runs the reference loop over the steps past the table,
// from step s down with the credit c left. It returns the step and credit
// it ends with, and the delay of the step it stopped on, or 0 when it paid
// every step past the table (or reached step 1).
func (d *delays) payPastTable(s, c int64) (int64, int64, int64) {
	table, small := d.table(), d.small[:blockSize]
	h := uint64(s-1) / blockSize
	x := d.blockBase(h)
	for ; s > table && s > 1; s-- {
		e := uint64(s - 1)
		if e/blockSize != h {
			h = e / blockSize
			x = d.blockBase(h)
		}
		step := x.mul(small[e%blockSize]).floor(d.limit)
		if c < step {
			return s, c, step
		}
		c -= step
	}
	return s, c, 0
}

// firstCapped returns the first step that owes the limit, for a step n
// that does.
func (d *delays) firstCapped(n int64) int64 {
	t := d.table()
	if d.small == nil {
		return t + 1
	}
	// Past the table, found in the delays themselves, which never
	// decrease: a rare case (a multiplier close to 1, and more failures
	// than reach the limit), paid in logarithmic time.
	return t + 1 + int64(sort.Search(int(n-t), func(i int) bool { return d.at(t+1+int64(i)) >= d.limit }))
}
