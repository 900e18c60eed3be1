package queuekit

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCacheIsBounded: 100,000 distinct strategies keep the cache within
// its bounds, a working set of 1,000 among them keeps hitting, and a
// rejected strategy is never kept.
func TestCacheIsBounded(t *testing.T) {
	var c strategyCache
	strategy := func(i int) []byte {
		return fmt.Appendf(nil, `{"strategy":"bounded","max_attempts":%d}`, i+1)
	}
	for i := range 100000 {
		_, err := c.get(strategy(i))
		require.NoError(t, err)
		if i%1000 == 0 {
			_, err := c.get(fmt.Appendf(nil, `{"strategy":"bounded","max_attempts":%d,"x":1}`, i))
			require.Error(t, err)
		}
	}
	assert.LessOrEqual(t, len(c.entries), MaxCachedStrategies)
	assert.LessOrEqual(t, c.bytes, MaxCachedBytes)
	for key := range c.entries {
		assert.NotContains(t, key, `"x"`, "a rejected strategy is cached")
	}

	// A working set of 1,000 hits once warm, however many others pass by.
	working := func(i int) []byte { return strategy(200000 + i) }
	for i := range 1000 {
		_, err := c.get(working(i))
		require.NoError(t, err)
	}
	for round := range 5 {
		for i := range 1000 {
			_, err := c.get(strategy(300000 + round*1000 + i%50)) // others, now and then
			require.NoError(t, err)
			e, ok := c.entries[string(working(i))]
			require.True(t, ok, "round %d: working strategy %d was evicted", round, i)
			_, err = c.get(working(i))
			require.NoError(t, err)
			assert.Same(t, e.policy, c.entries[string(working(i))].policy)
		}
	}
	assert.Less(t, math.Abs(float64(c.bytes-len(c.entries)*policyBytes)), float64(len(c.entries)*64), "bytes counts each entry")
}
