package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestControllerModes(t *testing.T) {
	tick, err := simulate(120, 6*time.Hour, everyMinute)
	require.NoError(t, err)
	due, err := simulate(120, 6*time.Hour, untilDue)
	require.NoError(t, err)
	require.Positive(t, tick.retries)
	require.Positive(t, due.retries)
	// Sleeping until due retries on time; a one-minute tick is up to a
	// minute late, and late on average.
	assert.Equal(t, time.Duration(0), due.late)
	mean := tick.late / time.Duration(tick.retries)
	assert.Greater(t, mean, time.Duration(0))
	assert.LessOrEqual(t, mean, time.Minute)
	for _, j := range tick.jobs {
		assert.LessOrEqual(t, j.lateness, time.Duration(j.retries)*time.Minute, j.id)
	}
}

func TestControllerCoversEveryKindOfJob(t *testing.T) {
	sim, err := simulate(40, 12*time.Hour, untilDue)
	require.NoError(t, err)
	seen := map[behaviour]bool{}
	fatalPermanent := 0
	for _, j := range sim.jobs {
		seen[j.kind] = true
		require.True(t, strings.HasSuffix(j.log[0], "created"), j.log[0])
		if j.kind == permanent && strings.Contains(strings.Join(j.log, "\n"), "failed_fatally") {
			fatalPermanent++
		}
		if j.kind == onTrigger {
			assert.Contains(t, strings.Join(j.log, "\n"), "trigger_fired")
		}
	}
	assert.Len(t, seen, 5)
	assert.Positive(t, fatalPermanent)
}

func TestControllerOutputIsDeterministic(t *testing.T) {
	var a, b, errOut strings.Builder
	require.Equal(t, 0, run([]string{"-jobs", "30", "-hours", "2"}, &a, &errOut), errOut.String())
	require.Equal(t, 0, run([]string{"-jobs", "30", "-hours", "2"}, &b, &errOut), errOut.String())
	assert.Equal(t, a.String(), b.String())
	assert.Contains(t, a.String(), "== summary (one-minute tick): 30 jobs")
	assert.Contains(t, a.String(), "== summary (sleep until due): 30 jobs")
	assert.Equal(t, 2, run([]string{"-jobs", "0"}, &a, &errOut))
}

// TestControllerPrintsAScreenfulByDefault: the default run prints the
// summaries and a few jobs' first events, -all every event.
func TestControllerPrintsAScreenfulByDefault(t *testing.T) {
	var short, all, errOut strings.Builder
	require.Equal(t, 0, run(nil, &short, &errOut), errOut.String())
	assert.LessOrEqual(t, strings.Count(short.String(), "\n"), 60)
	assert.Contains(t, short.String(), "more events (-all prints them)")
	require.Equal(t, 0, run([]string{"-all", "-jobs", "20", "-hours", "1"}, &all, &errOut), errOut.String())
	assert.NotContains(t, all.String(), "more events")
	assert.Equal(t, 2, strings.Count(all.String(), "job-019 ("), "every job, in both modes")
}
