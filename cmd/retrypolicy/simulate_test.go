package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/retrypolicy/retrypolicy"
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
	assert.Equal(t, 5, classes["load"], "a line a policy")
	assert.Equal(t, 1, classes["outage"], "the trigger")
	docsPicture(t, "simulate-collapse", data, elements)
}
