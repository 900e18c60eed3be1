package queuekit

import (
	"strconv"
	"unsafe"

	"github.com/retrypolicy/retrypolicy"
)

// Seed is the jitter seed of the job with the numeric id:
// retrypolicy.SeedFromString of its decimal digits, so that a job's extra
// is the same whatever reads its id as text. It does not allocate.
func Seed(id int64) uint64 {
	var room [20]byte
	digits := strconv.AppendInt(room[:0], id, 10)
	// SeedFromString keeps nothing of its argument: the digits are read in
	// place, on the stack.
	return retrypolicy.SeedFromString(unsafe.String(&digits[0], len(digits)))
}
