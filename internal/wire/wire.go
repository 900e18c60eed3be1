// Package wire holds the small pieces of the wire forms written once.
//
// The library, the command and the River adapter share them.
package wire

import (
	"bytes"
	"strconv"
	"time"
)

// MaxProblems is the most problems an error about one document lists.
const MaxProblems = 20

// Problems are what is wrong with one document: the first MaxProblems, and
// a count of the rest.
type Problems[T any] struct {
	List []T
	More int
}

// Add keeps p, or counts it once MaxProblems are kept.
func (ps *Problems[T]) Add(p T) {
	if ps.Full() {
		ps.More++
		return
	}
	ps.List = append(ps.List, p)
}

// Full reports whether MaxProblems are kept: what comes now is only
// counted.
func (ps *Problems[T]) Full() bool { return len(ps.List) >= MaxProblems }

// Reset empties ps, keeping its List's room.
func (ps *Problems[T]) Reset() { ps.List, ps.More = ps.List[:0], 0 }

// AndMore says how many problems were left out: "and 3 more".
func AndMore(n int) string { return "and " + strconv.Itoa(n) + " more" }

// utf8BOM is the byte-order mark some editors write at the start of a file.
var utf8BOM = []byte("\xef\xbb\xbf")

// TrimBOM returns doc without a leading byte-order mark, and how many bytes
// it skipped.
func TrimBOM(doc []byte) ([]byte, int) {
	if bytes.HasPrefix(doc, utf8BOM) {
		return doc[len(utf8BOM):], len(utf8BOM)
	}
	return doc, 0
}

// AppendSeconds appends d as exact decimal seconds: 8, 1.5, 0.000000001.
func AppendSeconds(b []byte, d time.Duration) []byte {
	u := uint64(d)
	if d < 0 {
		b, u = append(b, '-'), -u
	}
	b = strconv.AppendUint(b, u/uint64(time.Second), 10)
	ns := u % uint64(time.Second)
	if ns == 0 {
		return b
	}
	b = append(b, '.')
	for div := uint64(time.Second / 10); ns > 0; div /= 10 {
		b = append(b, byte('0'+ns/div))
		ns %= div
	}
	return b
}

// Seed is the 64-bit FNV-1a hash of bytes added one at a time: a job's
// jitter seed from its identity.
type Seed uint64

// NewSeed returns the hash of no bytes.
func NewSeed() Seed { return 14695981039346656037 }

// Add adds the byte c.
func (h *Seed) Add(c byte) { *h = (*h ^ Seed(c)) * 1099511628211 }
