package riverretry

import (
	"encoding/base64"
	"encoding/binary"
	"strings"
)

// legacyFailures writes failures (Unix milliseconds, newest first) as the
// policy wrote a record's failures before it kept them in the History's
// encoding: a token for the newest, then one for each gap to the next
// older, each token a little-endian run of 5-bit groups in base64url
// characters, the first 32 ending a token. The test's own encoder, so
// that records an earlier version left are read as they were.
func legacyFailures(ms ...int64) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	var b strings.Builder
	for i, v := range ms {
		if i > 0 {
			v = ms[i-1] - v
		}
		u := uint64(max(v, 0))
		for u >= 32 {
			b.WriteByte(alphabet[32|u&31])
			u >>= 5
		}
		b.WriteByte(alphabet[u])
	}
	return b.String()
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
