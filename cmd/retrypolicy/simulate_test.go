package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/fleet"
	"github.com/retrypolicy/retrypolicy/internal/front/whatif"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSimulateDefaults: the outage's default strategies are the default
// and Amp's four example strategies.
func TestSimulateDefaults(t *testing.T) {
	var names []string
	for _, n := range whatif.DocumentedStrategies() {
		names = append(names, n.Name)
	}
	assert.Equal(t, []string{"default", "bounded-hour", "bounded-day", "jitter-5m", "none"}, names)
	assert.Equal(t, retrypolicy.Default(), whatif.DocumentedStrategies()[0].Strategy)
}

// TestDocsLoadChartIsCurrent: the README's chart is the command's: a
// well-formed picture with a line for each default strategy, the outage
// shaded and a cross where jobs went FATAL, and a PNG of its size.
func TestDocsLoadChartIsCurrent(t *testing.T) {
	data, elements := loadPicture(t)
	classes := map[string]int{}
	for _, el := range elements {
		classes[el.attrs["class"]]++
	}
	assert.Equal(t, len(whatif.DocumentedStrategies()), classes["load"], "a line a strategy")
	assert.Equal(t, 1, classes["outage"])
	assert.Equal(t, 3, classes["fatal"], "bounded-hour's, bounded-day's and none's jobs each go FATAL in one minute")
	docsPicture(t, "simulate-outage", data, elements)
}

// TestLoadChartShowsEveryLine: a minute of no runs has its own label (0)
// at the floor of the log scale; every line has its own dash; and a line
// that another covers minute for minute says so in the legend, so that
// the legend names no line nobody can see.
func TestLoadChartShowsEveryLine(t *testing.T) {
	data, elements := loadPicture(t)
	text := string(data)
	assert.Contains(t, text, `text-anchor="end">0</text>`, "the floor is labelled 0")
	dashes := map[string]bool{}
	for _, el := range elements {
		if el.attrs["class"] == "load" {
			dash := el.attrs["stroke-dasharray"]
			assert.False(t, dashes[dash], "two lines share the dash %q", dash)
			dashes[dash] = true
		}
	}
	assert.Contains(t, text, "its line is under bounded-day&#39;s", "bounded-hour's load is bounded-day's minute for minute")
}

// TestLoadChartRendersToPNG renders the outage's chart with rsvg-convert
// and checks the image: the picture's size, a white ground, and the lines
// of the default (blue), bounded-day (green) and the FATAL crosses (in
// their strategies' colours).
func TestLoadChartRendersToPNG(t *testing.T) {
	data, elements := loadPicture(t)
	counts, total := rendered(t, data, elements)
	assert.Greater(t, counts["white"], total/3, "a white ground")
	assert.Greater(t, counts["blue"], 300, "the default's line")
	assert.Greater(t, counts["green"], 30, "bounded-day's line")
}

// loadPicture runs simulate --svg with args and returns the picture and
// its elements.
func loadPicture(t *testing.T, args ...string) ([]byte, []svgElement) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "outage.svg")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(append([]string{"simulate", "--svg", path}, args...), nil, &stdout, &stderr), stderr.String())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data, parseSVG(t, data)
}

// TestDocsLayersChartIsCurrent: the README's picture of the layers is the
// command's: a line for each of the four ways of the general retry
// rules, the capacity drawn, and a PNG of its size.
func TestDocsLayersChartIsCurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "layers.svg")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"simulate", "--scenario", "layers", "--duration", "2m", "--svg", path}, nil, &stdout, &stderr), stderr.String())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	elements := parseSVG(t, data)
	classes := map[string]int{}
	for _, el := range elements {
		classes[el.attrs["class"]]++
	}
	assert.Equal(t, 4, classes["load"], "a line a way")
	assert.Equal(t, 1, classes["capacity"])
	docsPicture(t, "simulate-layers", data, elements)
}

// TestDocsCollapseChartIsCurrent: the collapse's picture in docs/ is what
// simulate --scenario collapse --seed 1 --svg draws: a line of goodput a
// policy, and the trigger shaded.
func TestDocsCollapseChartIsCurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "collapse.svg")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"simulate", "--scenario", "collapse", "--seed", "1", "--svg", path}, nil, &stdout, &stderr), stderr.String())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	elements := parseSVG(t, data)
	classes := map[string]int{}
	for _, el := range elements {
		classes[el.attrs["class"]]++
	}
	assert.Equal(t, len(fleet.CollapsePolicies()), classes["load"], "a line a policy")
	assert.Equal(t, 1, classes["outage"], "the trigger")
	// none's, token's and default's lines lie on each other: the legend
	// says so of the two drawn under the third.
	assert.Equal(t, 2, strings.Count(string(data), "its line is under default&#39;s"))
	docsPicture(t, "simulate-collapse", data, elements)
}

// TestDocsTailChartIsCurrent: the tail's picture in docs/ is what
// simulate --scenario tail --seed 1 --svg draws: three bars a policy, its
// p50, p99 and p99.9.
func TestDocsTailChartIsCurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tail.svg")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"simulate", "--scenario", "tail", "--seed", "1", "--svg", path}, nil, &stdout, &stderr), stderr.String())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	elements := parseSVG(t, data)
	classes := map[string]int{}
	for _, el := range elements {
		classes[el.attrs["class"]]++
	}
	assert.Equal(t, 3*len(fleet.TailPolicies()), classes["quantile"], "three bars a policy")
	docsPicture(t, "simulate-tail", data, elements)
}

// TestCollapseSaysWhatItJudged: a collapse run cut short before its
// trigger (--max-runs 1000) judges no policy, in the table (no "yes", no
// time after the trigger) and in --json (every verdict null), and exits
// 0 as a truncated run of the other scenarios does; with
// --check-deadlines, the strategy's goodput is back at once, but its row
// shows that its load settled only 20 s and more after the trigger, while
// it still sent 1.7 attempts a call.
func TestCollapseSaysWhatItJudged(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"simulate", "--scenario", "collapse", "--max-runs", "1000"}, nil, &stdout, &stderr), stderr.String())
	assert.NotContains(t, stdout.String(), "yes")
	assert.Equal(t, len(fleet.CollapsePolicies()), strings.Count(stdout.String(), "not judged     not judged"), stdout.String())
	assert.Equal(t, len(fleet.CollapsePolicies()), strings.Count(stdout.String(), "truncated at --max-runs calls"))

	stdout.Reset()
	require.Equal(t, 0, run([]string{"simulate", "--scenario", "collapse", "--max-runs", "1000", "--json"}, nil, &stdout, &stderr), stderr.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.Len(t, lines, len(fleet.CollapsePolicies()))
	for _, l := range lines {
		assert.Contains(t, l, `"judged":false,"recovered":null,"recovery_secs":null,"settled":null,"settled_secs":null`)
	}

	stdout.Reset()
	require.Equal(t, 0, run([]string{"simulate", "--scenario", "collapse", "--seed", "1", "--check-deadlines"}, nil, &stdout, &stderr), stderr.String())
	var row []string
	for _, l := range strings.Split(stdout.String(), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "strategy" {
			row = f
		}
	}
	require.Len(t, row, 7, stdout.String())
	assert.Equal(t, "0s", row[1], "its goodput recovered at once")
	settled, err := time.ParseDuration(row[2])
	require.NoError(t, err, "settled after: %q", row[2])
	assert.GreaterOrEqual(t, settled, 20*time.Second, "not while it still retries hard")
	assert.Equal(t, "1.72", row[3])
}
