// Package histcode is the binary encoding of a job's failures, written once.
//
// The encoding is a version byte (3) and a unit byte, then the count of
// failures and the first instant as varints, each gap to the next as a
// uvarint, and the last run's uptime as a uvarint, every value in the unit:
// the coarsest of a second, a millisecond, a microsecond and a nanosecond
// that holds every instant and the uptime exactly, so that failures kept to
// the millisecond take a few bytes each. The root History's MarshalBinary
// writes it, and the queue kit's records hold it.
package histcode

import (
	"encoding/binary"
	"errors"
	"math"
	"time"
)

// Version is the first byte of what Append writes.
const Version = 3

// units are the units a unit byte names, from 0.
var units = [...]int64{1, 1e3, 1e6, 1e9}

// Append appends the encoding of ns, ascending Unix nanoseconds, and the
// uptime up.
func Append(b []byte, ns []int64, up time.Duration) []byte {
	up = max(up, 0)
	code := coarsest(ns, int64(up))
	b = append(b, Version, byte(code))
	b = binary.AppendUvarint(b, uint64(len(ns)))
	if len(ns) > 0 {
		b = binary.AppendVarint(b, ns[0]/units[code])
	}
	for i := 1; i < len(ns); i++ {
		b = binary.AppendUvarint(b, inUnit(uint64(ns[i]-ns[i-1]), code))
	}
	return binary.AppendUvarint(b, inUnit(uint64(up), code))
}

// coarsest returns the code of the coarsest unit that every instant of ns
// and up is a whole number of.
func coarsest(ns []int64, up int64) int {
	code := codeOf(up)
	for _, v := range ns {
		if code == 0 {
			break
		}
		code = min(code, codeOf(v))
	}
	return code
}

// codeOf returns the code of the coarsest unit v is a whole number of. Its
// divisors are constants, which the compiler turns into multiplications:
// a history of a thousand failures is encoded in microseconds.
func codeOf(v int64) int {
	switch {
	case v%1e9 == 0:
		return 3
	case v%1e6 == 0:
		return 2
	case v%1e3 == 0:
		return 1
	}
	return 0
}

// inUnit is v in the unit of code, as codeOf's constants divide it.
func inUnit(v uint64, code int) uint64 {
	switch code {
	case 3:
		return v / 1e9
	case 2:
		return v / 1e6
	case 1:
		return v / 1e3
	}
	return v
}

// Decode appends to room[:0] the failures data holds, ascending, and
// returns them with the uptime, or an error saying what is wrong (the
// caller names the history). It allocates only when room is too small.
func Decode(data []byte, room []int64) ([]int64, time.Duration, error) {
	unit, data, err := header(data)
	if err != nil {
		return nil, 0, err
	}
	n, k := binary.Uvarint(data)
	if k <= 0 || n > uint64(len(data)) { // every failure takes a byte at least
		return nil, 0, errors.New("bad count")
	}
	data = data[k:]
	ns := room[:0]
	if uint64(cap(ns)) < n {
		ns = make([]int64, 0, n)
	}
	for range int(n) {
		at, rest, err := next(data, unit, ns)
		if err != nil {
			return nil, 0, err
		}
		ns, data = append(ns, at), rest
	}
	up, k := binary.Uvarint(data)
	if k <= 0 || up > math.MaxInt64/uint64(unit) {
		return nil, 0, errors.New("bad uptime")
	}
	if len(data) > k {
		return nil, 0, errors.New("trailing data")
	}
	return ns, time.Duration(up) * time.Duration(unit), nil
}

// header reads the version and the unit, and returns the unit and the
// rest.
func header(data []byte) (int64, []byte, error) {
	if len(data) > 1 && data[0] == Version && int(data[1]) < len(units) {
		return units[data[1]], data[2:], nil
	}
	return 0, nil, errors.New("not a history encoding")
}

// next reads the instant after those of ns from data, in unit: the first
// as a varint, a later one as a uvarint gap. It returns the instant in
// nanoseconds and the rest of data.
func next(data []byte, unit int64, ns []int64) (int64, []byte, error) {
	if len(ns) == 0 {
		v, k := binary.Varint(data)
		if k <= 0 {
			return 0, nil, errors.New("truncated")
		}
		if v > math.MaxInt64/unit || v < math.MinInt64/unit {
			return 0, nil, errors.New("failure time out of range")
		}
		return v * unit, data[k:], nil
	}
	gap, k := binary.Uvarint(data)
	if k <= 0 {
		return 0, nil, errors.New("truncated")
	}
	prev := ns[len(ns)-1]
	if gap > uint64(math.MaxInt64-prev)/uint64(unit) {
		return 0, nil, errors.New("failure time out of range")
	}
	return prev + int64(gap)*unit, data[k:], nil
}
