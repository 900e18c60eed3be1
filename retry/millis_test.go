package retry_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/retrypolicy/retrypolicy/retry"
)

// TestParseMillis: the one reading of a wait in milliseconds, for every
// layer: a decimal with no sign, space or exponent, a fraction rounded up,
// saturating; anything else invalid, whatever digits it holds.
func TestParseMillis(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"0": 0, "30": 30 * time.Millisecond, "20.001": 21 * time.Millisecond, "2.000": 2 * time.Millisecond,
		"9223372036854": 9223372036854 * time.Millisecond, "9223372036855": math.MaxInt64,
		"99999999999999999999": math.MaxInt64, "99999999999999999999.5": math.MaxInt64,
	} {
		got, ok := retry.ParseMillis(in)
		assert.True(t, ok, "%q", in)
		assert.Equal(t, want, got, "%q", in)
	}
	for _, in := range []string{"", "+30", "-1", " 30", "30 ", "1e3", "1.", ".5", "1.2.3", "0x1f", "99999999999999999999x", "1x", "３"} {
		_, ok := retry.ParseMillis(in)
		assert.False(t, ok, "%q", in)
	}
}
