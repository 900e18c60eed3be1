package retryhttp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		value string
		want  time.Duration
		ok    bool
	}{
		{"120", 2 * time.Minute, true},
		{" 0 ", 0, true},
		{"99999999999999999999999", time.Duration(1<<63 - 1), true},
		{"Mon, 02 Nov 2026 15:00:30 GMT", 30 * time.Second, true},
		{"Monday, 02-Nov-26 15:01:00 GMT", time.Minute, true},
		{"Mon Nov  2 15:00:10 2026", 10 * time.Second, true},
		{"Mon, 02 Nov 2026 14:00:00 GMT", 0, true}, // in the past
		// RFC 850's two-digit years (RFC 9110, 5.6.7): this century's,
		// unless that is more than 50 years ahead.
		{"Tuesday, 01-Jan-69 00:00:10 GMT", time.Date(2069, 1, 1, 0, 0, 10, 0, time.UTC).Sub(now), true},
		{"Friday, 01-Jan-99 00:00:00 GMT", 0, true}, // 1999: 2099 is 73 years ahead
		{"-5", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"", 0, false},
	} {
		got, ok := ParseRetryAfter(tc.value, now)
		assert.Equal(t, tc.ok, ok, tc.value)
		assert.Equal(t, tc.want, got, tc.value)
	}
}
