package report

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy/attemptlog"
	"github.com/retrypolicy/retrypolicy/fleet"
	"github.com/retrypolicy/retrypolicy/internal/front/whatif"
)

// TestTruncatedNamesTheBound: the line for a cut run names the bound that
// cut it as a user knows it; a layers run cut by its calls in flight does
// not blame --max-runs.
func TestTruncatedNamesTheBound(t *testing.T) {
	for b, want := range map[fleet.Bound]string{
		fleet.BoundMaxRuns:       "x: truncated at --max-runs runs: f\n",
		fleet.BoundMaxCalls:      "x: truncated at --max-runs calls, all layers counted: f\n",
		fleet.BoundCallsInFlight: "x: truncated at a million calls in flight at once: f\n",
		fleet.BoundEvents:        "x: truncated at its events (attempts, hops, timeouts and arrivals: 4 for each of --max-runs calls): f\n",
		fleet.BoundPendingEvents: "x: truncated at 2000000 events waiting at once: f\n",
		fleet.BoundHeldFailures:  "x: truncated at 10000000 failures held in all: f\n",
		fleet.BoundJobFailures:   "x: truncated at a job with 100000 failures in its window: f\n",
		fleet.BoundMaxMessages:   "x: truncated at its messages in all: f\n",
		fleet.BoundContext:       "x: truncated at its time budget: f\n",
	} {
		assert.Equal(t, want, Truncated("x", b, "f"))
	}
}

// TestJSONSaysTheBound: a cut run's JSON line names its bound in
// truncated_by; a run that was not cut has no such field.
func TestJSONSaysTheBound(t *testing.T) {
	var m map[string]any
	require.NoError(t, json.Unmarshal(LayersJSON("c", fleet.LayersResult{Truncated: true, TruncatedBy: fleet.BoundCallsInFlight}), &m))
	assert.Equal(t, "calls in flight", m["truncated_by"])
	m = nil
	require.NoError(t, json.Unmarshal(ContentionJSON(fleet.ContentionResult{Name: "c", Runs: 1}), &m))
	assert.NotContains(t, m, "truncated_by")
	assert.Equal(t, false, m["truncated"])
}

// TestJSONLinesTakeAnyName: a strategy's or a chain's name (a file's base
// name) with a control character or invalid UTF-8 still makes a JSON line
// that reads back, the name with U+FFFD for the invalid byte.
func TestJSONLinesTakeAnyName(t *testing.T) {
	name := "bell\a\xff"
	for _, line := range [][]byte{
		LayersJSON(name, fleet.LayersResult{}),
		OutageJSON(name, fleet.OutageResult{}),
		ContentionJSON(fleet.ContentionResult{Name: name}),
		ReplayJSON(name, fleet.ReplayResult{}, true),
	} {
		var m map[string]any
		require.NoError(t, json.Unmarshal(line, &m), "%s", line)
		assert.Contains(t, []any{m["strategy"], m["chain"]}, "bell\a\uFFFD", "%s", line)
	}
}

// TestLayersChartOfTheLongestOutage: a chart of a run whose bottom is down
// for the longest Duration is drawn (its span saturates, not wraps), at
// most MaxChartPoints points a line.
func TestLayersChartOfTheLongestOutage(t *testing.T) {
	l := fleet.Layers{Duration: time.Minute, Down: math.MaxInt64}
	svg := string(LayersChart(l, []fleet.Chain{{Name: "c", Layers: fleet.DefaultLayers(3)}}, []fleet.LayersResult{{Load: []int{5, 5}}}))
	i := strings.Index(svg, `points="`)
	require.Positive(t, i)
	points := strings.Fields(svg[i+len(`points="`) : i+strings.Index(svg[i:], `"/>`)])
	assert.LessOrEqual(t, len(points), MaxChartPoints)
	assert.GreaterOrEqual(t, len(points), MaxChartPoints/2)
}

// TestAFlappingLogsChartStaysSmall (N7): a dependency that flaps every
// minute for 100,000 minutes is drawn as at most one shaded stretch a
// point, not one a flap.
func TestAFlappingLogsChartStaysSmall(t *testing.T) {
	var attempts []attemptlog.Attempt
	t0 := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	for i := range 100_000 {
		at := t0.Add(time.Duration(i) * time.Minute)
		attempts = append(attempts, attemptlog.Attempt{Job: "j", Start: at, End: at, Succeeded: i%2 == 1})
	}
	log, err := fleet.NewLog(attempts)
	require.NoError(t, err)
	require.Len(t, log.Down(), 50_000)
	svg := Replay{Log: log, Replayed: whatif.Replayed{Names: []string{"recorded"}, Results: []fleet.ReplayResult{log.Recorded()}}}.Chart()
	assert.LessOrEqual(t, strings.Count(string(svg), `class="outage"`), MaxChartPoints+1)
	assert.Less(t, len(svg), 400<<10, "a few hundred KB at most")
}
