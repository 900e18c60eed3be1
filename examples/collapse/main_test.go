package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestItPrints: a short run prints a row of goodput a second for each
// way, a whole number each second. What the numbers are depends on the
// machine (real servers, real time): retryhttp's collapse test pins the
// behaviour on a fake clock.
func TestItPrints(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, settings{rate: 40, spikeAt: time.Second, duration: 2 * time.Second}))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 5)
	for i, name := range []string{"no budget", "the default budget"} {
		fields := strings.Fields(strings.TrimPrefix(lines[3+i], name))
		assert.True(t, strings.HasPrefix(lines[3+i], name), lines[3+i])
		assert.Len(t, fields, 2, "a number a second: %q", lines[3+i])
	}
}
