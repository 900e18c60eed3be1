package vet

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAttemptCountsSaturate: 42 loops of 3 attempts nested in one another
// make more than 1,000,000,000 attempts, said so, never a negative count.
// Until counts saturated, they overflowed to -420491770248316829.
func TestAttemptCountsSaturate(t *testing.T) {
	n := 1
	for range 42 {
		n = times(n, 3)
		assert.Positive(t, n)
	}
	assert.Equal(t, "more than 1,000,000,000 attempts", attemptsText(n))
	assert.Equal(t, "more than 1,000,000,000×3 = more than 1,000,000,000 attempts", product(n, 3))
	assert.Equal(t, "3×3 = 9 attempts", product(3, 3))
	assert.Equal(t, "1000000000 attempts", attemptsText(times(1000, 1000000)), "the bound itself is a count")
	assert.Equal(t, "more than 1,000,000,000 attempts", attemptsText(times(1000, 1000001)))
	assert.Equal(t, unbounded, times(unbounded, 3))
	assert.Equal(t, unknown, times(unknown, unbounded))
	assert.Equal(t, "an unknown number of attempts (a strategy known only at run time), each layer's times the other's,", product(unknown, 3))
}
