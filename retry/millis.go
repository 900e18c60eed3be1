package retry

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseMillis reads a wait a server asked for in milliseconds, the one
// reading of that form for every layer (HTTP's Retry-After-Ms, gRPC's
// pushback trailer): a decimal number, digits with at most one point and
// digits after it ("1500", "20.5"), with no sign, space or exponent. A
// fraction of a millisecond is rounded up to a whole one, and a wait past
// the longest Duration saturates. It returns false for anything else,
// whatever digits it holds ("+30", " 5", "99999999999999999999x").
func ParseMillis(value string) (time.Duration, bool) {
	whole, frac, dotted := strings.Cut(value, ".")
	if whole == "" || !digits(whole) || dotted && (frac == "" || !digits(frac)) {
		return 0, false
	}
	const most = uint64(math.MaxInt64 / int64(time.Millisecond))
	ms, err := strconv.ParseUint(whole, 10, 64)
	if err != nil || ms > most {
		return math.MaxInt64, true // digits past uint64's range: saturate
	}
	if strings.Trim(frac, "0") != "" {
		ms++ // rounded up to a whole millisecond
	}
	if ms > most {
		return math.MaxInt64, true
	}
	return time.Duration(ms) * time.Millisecond, true
}

// digits reports whether s is made of ASCII digits only.
func digits(s string) bool { return strings.Trim(s, "0123456789") == "" }
