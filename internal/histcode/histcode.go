// Package histcode is the binary encoding of a job's failures, written once.
//
// The encoding is a version byte, the count of failures and the first
// instant (Unix nanoseconds) as varints, each gap to the next as a uvarint,
// then the last run's uptime in nanoseconds as a uvarint. The root
// History's MarshalBinary writes it, and the queue kit's records hold it.
package histcode

import (
	"encoding/binary"
	"errors"
	"math"
	"time"
)

// Version is the encoding's first byte.
const Version = 2

// Append appends the encoding of ns, ascending Unix nanoseconds, and the
// uptime up.
func Append(b []byte, ns []int64, up time.Duration) []byte {
	b = append(b, Version)
	b = binary.AppendUvarint(b, uint64(len(ns)))
	if len(ns) > 0 {
		b = binary.AppendVarint(b, ns[0])
	}
	for i := 1; i < len(ns); i++ {
		b = binary.AppendUvarint(b, uint64(ns[i]-ns[i-1]))
	}
	return binary.AppendUvarint(b, uint64(max(up, 0)))
}

// Decode appends to room[:0] the failures data holds, ascending, and
// returns them with the uptime, or an error saying what is wrong (the
// caller names the history). It allocates only when room is too small.
func Decode(data []byte, room []int64) ([]int64, time.Duration, error) {
	if len(data) == 0 || data[0] != Version {
		return nil, 0, errors.New("not a history encoding")
	}
	data = data[1:]
	n, k := binary.Uvarint(data)
	if k <= 0 || n > uint64(len(data)) { // every failure takes a byte at least
		return nil, 0, errors.New("bad count")
	}
	data = data[k:]
	ns := room[:0]
	if uint64(cap(ns)) < n {
		ns = make([]int64, 0, n)
	}
	for i := range int(n) {
		var at int64
		if i == 0 {
			at, k = binary.Varint(data)
		} else {
			var gap uint64
			gap, k = binary.Uvarint(data)
			prev := ns[i-1]
			if gap > uint64(math.MaxInt64-prev) {
				return nil, 0, errors.New("failure time out of range")
			}
			at = prev + int64(gap)
		}
		if k <= 0 {
			return nil, 0, errors.New("truncated")
		}
		ns = append(ns, at)
		data = data[k:]
	}
	up, k := binary.Uvarint(data)
	if k <= 0 || up > math.MaxInt64 {
		return nil, 0, errors.New("bad uptime")
	}
	if len(data) > k {
		return nil, 0, errors.New("trailing data")
	}
	return ns, time.Duration(up), nil
}
