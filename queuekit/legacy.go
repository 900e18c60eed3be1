package queuekit

import (
	"math"
	"time"
)

// The text riverretry wrote a record's failures in before this package:
// one token for the newest failure's Unix time in milliseconds, then one
// for each gap to the next older failure. A token is a little-endian run
// of 5-bit groups, each one character of the base64url alphabet: the
// first 32 ("A"…"f") end a token, the last 32 ("g"…"_") go on. It is read,
// so that a job failing across an upgrade keeps its failures, and never
// written.

const tokenDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// maxTokenLen is the longest token: 63 bits in 5-bit groups.
const maxTokenLen = 13

// digitValue is each byte's value in tokenDigits, or -1.
var digitValue = func() (v [256]int8) {
	for i := range v {
		v[i] = -1
	}
	for i := range len(tokenDigits) {
		v[tokenDigits[i]] = int8(i)
	}
	return v
}()

// nextToken decodes the token at the start of s and returns its value and
// length, or a length of 0 when s does not start with a whole token that
// fits 63 bits.
func nextToken(s []byte) (v uint64, n int) {
	for i := 0; i < len(s) && i < maxTokenLen; i++ {
		d := digitValue[s[i]]
		switch {
		case d < 0, i == maxTokenLen-1 && d&31 > 7: // 60 bits so far: room for 3
			return 0, 0
		case d < 32:
			return v | uint64(d)<<(5*i), i + 1
		}
		v |= uint64(d&31) << (5 * i)
	}
	return 0, 0
}

// decodeTokens returns the newest limit failures that enc holds, ascending
// Unix nanoseconds, in room[:0], and whether it holds more; ok is false
// when enc is not a list of tokens.
func decodeTokens(enc []byte, room []int64, limit int) (failures []int64, more, ok bool) {
	failures = room[:0]
	var ms int64
	for len(enc) > 0 {
		if len(failures) == limit {
			more = true
			break
		}
		v, n := nextToken(enc)
		if n == 0 {
			return room[:0], false, false
		}
		if len(failures) == 0 {
			ms = int64(v)
		} else {
			ms -= int64(min(v, uint64(ms))) // before 1970 is before any job
		}
		failures = append(failures, ms)
		enc = enc[n:]
	}
	// Newest first, in milliseconds: ascending, in nanoseconds. A time
	// past what nanoseconds hold is held at the last one, which no check
	// of a record trusts.
	for i, j := 0, len(failures)-1; i < j; i, j = i+1, j-1 {
		failures[i], failures[j] = failures[j], failures[i]
	}
	const lastMs = math.MaxInt64 / int64(time.Millisecond)
	for i, ms := range failures {
		failures[i] = min(ms, lastMs) * int64(time.Millisecond)
	}
	return failures, more, true
}
