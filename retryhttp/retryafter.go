package retryhttp

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// httpDates are the three forms of an HTTP-date (RFC 9110, 5.6.7).
var httpDates = [...]string{
	"Mon, 02 Jan 2006 15:04:05 GMT",  // IMF-fixdate
	"Monday, 02-Jan-06 15:04:05 GMT", // obsolete RFC 850
	time.ANSIC,                       // asctime
}

// ParseRetryAfter reads an HTTP Retry-After value (RFC 9110, 10.2.3):
// delay-seconds, or an HTTP-date, which counts from now. A date in the
// past is a wait of 0; seconds past the longest Duration saturate. It
// returns false for anything else.
func ParseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0, false // no header: nothing to parse, and no errors made
	}
	if strings.Trim(value, "0123456789") == "" {
		secs, err := strconv.ParseUint(value, 10, 64)
		if err != nil || secs > uint64(math.MaxInt64/int64(time.Second)) {
			return math.MaxInt64, true
		}
		return time.Duration(secs) * time.Second, true
	}
	for i, layout := range httpDates {
		if t, err := time.Parse(layout, value); err == nil {
			if i == 1 { // RFC 850's two digits: this century's year, the last one's if over 50 years ahead
				y := now.Year() - now.Year()%100 + t.Year()%100
				if y > now.Year()+50 {
					y -= 100
				}
				t = t.AddDate(y-t.Year(), 0, 0)
			}
			return max(t.Sub(now), 0), true
		}
	}
	return 0, false
}
