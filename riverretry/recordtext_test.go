package riverretry

import (
	"encoding/base64"
	"encoding/binary"
	"slices"
)

// historyText writes failures (Unix milliseconds, in any order) as a
// record's "history", with an encoder of the test's own: version byte 3,
// unit byte 2 (milliseconds), the count and the first instant as varints,
// each gap as a uvarint, an uptime of 0, all base64url. It writes instants
// that nanoseconds cannot hold (year 9999), for records no client wrote.
func historyText(ms ...int64) string {
	asc := slices.Clone(ms)
	slices.Sort(asc)
	b := binary.AppendUvarint([]byte{3, 2}, uint64(len(asc)))
	for i, v := range asc {
		if i == 0 {
			b = binary.AppendVarint(b, v)
		} else {
			b = binary.AppendUvarint(b, uint64(v-asc[i-1]))
		}
	}
	return base64.RawURLEncoding.EncodeToString(binary.AppendUvarint(b, 0))
}

// historyFailures decodes a record's "history" with a decoder of the
// test's own: base64url, then a version byte 3 and a unit byte (0 to 3:
// 10^(3·unit) nanoseconds), the count and the first instant as varints,
// each gap as a uvarint, and an uptime, all in the unit. It returns the
// failures in Unix nanoseconds, newest first, or false.
func historyFailures(text string) ([]int64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil || len(b) < 2 || b[0] != 3 || b[1] > 3 {
		return nil, false
	}
	unit := int64(1)
	for range b[1] {
		unit *= 1000
	}
	b = b[2:]
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, false
	}
	b = b[k:]
	var asc []int64
	for i := range int(n) {
		var v int64
		if i == 0 {
			v, k = binary.Varint(b)
		} else {
			var gap uint64
			gap, k = binary.Uvarint(b)
			v = asc[i-1] + int64(gap)
		}
		if k <= 0 {
			return nil, false
		}
		asc = append(asc, v)
		b = b[k:]
	}
	if _, k = binary.Uvarint(b); k <= 0 || k != len(b) {
		return nil, false
	}
	out := make([]int64, len(asc))
	for i, v := range asc {
		out[len(asc)-1-i] = v * unit
	}
	return out, true
}
