package budgetrange

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestTheRangesEnds: each setting's ends are in range and the values just
// past them, and NaN, are not, each named with its rule.
func TestTheRangesEnds(t *testing.T) {
	assert.Empty(t, Token(0, 1))
	assert.Empty(t, Token(1000, 1e9))
	assert.Equal(t, []Problem{{"ratio", "must be between 0 and 1000, got -1"}, {"burst", "must be between 1 and 1000000000, got 0"}}, Token(-1, 0))
	assert.Equal(t, []Problem{{"ratio", "must be between 0 and 1000, got NaN"}}, Token(math.NaN(), 10))
	assert.Equal(t, []Problem{{"burst", "must be between 1 and 1000000000, got 1000000001"}}, Token(0.1, 1e9+1))
	assert.Empty(t, Window(0, time.Millisecond, 0))
	assert.Empty(t, Window(100, time.Hour, 1e9))
	assert.Equal(t, []Problem{
		{"percent", "must be between 0 and 100, got 100.5"},
		{"interval", "must be between 1ms and 1h, got 999µs"},
		{"minRetries", "must be between 0 and 1000000000, got -1"},
	}, Window(100.5, time.Millisecond-time.Microsecond, -1))
	assert.Equal(t, []Problem{{"interval", "must be between 1ms and 1h, got 1h0m0.000000001s"}}, Window(20, time.Hour+1, 10))
}
