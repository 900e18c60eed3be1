package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTheChainIsWhatTheSimulationSays: with the bottom down for the whole
// run, the chain of real interceptors on loopback makes at each layer the
// calls fleet.Layers simulates for the same chain and strategies: 1, 1, 1
// and 3 a call with the rule, 3, 9, 27 and 81 without. The calls arrive
// all at once, so that no pace depends on the machine.
func TestTheChainIsWhatTheSimulationSays(t *testing.T) {
	s := settings{rate: 1e6, duration: 5 * time.Microsecond, down: time.Hour}
	for rule, want := range map[bool][]int{true: {1, 1, 1, 3}, false: {3, 9, 27, 81}} {
		real, err := runChain(s, rule)
		require.NoError(t, err)
		sim, err := simulate(s, rule)
		require.NoError(t, err)
		require.Equal(t, 5, real.calls)
		for i := range want {
			want[i] *= real.calls
		}
		assert.Equal(t, want, real.layers, "rule %v: the calls each layer received", rule)
		assert.Equal(t, sim.Attempts, real.layers, "rule %v: as simulated", rule)
		assert.Zero(t, real.succeeded)
	}
}

// TestItPrints: the program's table names both runs and both sides.
func TestItPrints(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(&out, settings{rate: 1e6, duration: 3 * time.Microsecond, down: time.Hour}))
	for _, want := range []string{"one layer (default)", "every layer retrying", "real", "simulated", "1.00 1.00 1.00 3.00", "3.00 9.00 27.00 81.00"} {
		assert.Contains(t, out.String(), want)
	}
}
