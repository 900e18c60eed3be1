package main

import (
	"bytes"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/retrypolicy/retrypolicy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSimulateDefaults: the outage's default strategies parse.
func TestSimulateDefaults(t *testing.T) {
	for _, d := range seedStrategies {
		_, err := retrypolicy.Parse([]byte(d.doc))
		assert.NoError(t, err, d.name)
	}
}

// TestDocsLoadChartIsCurrent: the README's chart is the command's: a
// well-formed picture with a line for each default strategy, the outage
// shaded and a cross where jobs went FATAL, and a PNG of its size.
func TestDocsLoadChartIsCurrent(t *testing.T) {
	docs := filepath.Join("..", "..", "docs")
	path := filepath.Join(t.TempDir(), "outage.svg")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"simulate", "--svg", path}, nil, &stdout, &stderr), stderr.String())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	classes := map[string]int{}
	elements := parseSVG(t, data)
	for _, el := range elements {
		classes[el.attrs["class"]]++
	}
	assert.Equal(t, len(seedStrategies), classes["load"], "a line a strategy")
	assert.Equal(t, 1, classes["outage"])
	assert.Equal(t, 3, classes["fatal"], "bounded-hour's, bounded-day's and none's jobs each go FATAL in one minute")
	if *update {
		require.NoError(t, os.WriteFile(filepath.Join(docs, "simulate-outage.svg"), data, 0o644))
		rsvg, err := exec.LookPath("rsvg-convert")
		require.NoError(t, err, "-update draws the PNG with rsvg-convert")
		out, err := exec.Command(rsvg, "--format", "png", filepath.Join(docs, "simulate-outage.svg")).Output()
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(docs, "simulate-outage.png"), out, 0o644))
	}
	committed, err := os.ReadFile(filepath.Join(docs, "simulate-outage.svg"))
	require.NoError(t, err)
	assert.Equal(t, string(data), string(committed), "docs/simulate-outage.svg is stale: go test ./cmd/retrypolicy -run TestDocsLoadChartIsCurrent -update")
	f, err := os.Open(filepath.Join(docs, "simulate-outage.png"))
	require.NoError(t, err)
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	require.NoError(t, err)
	assert.Equal(t, int(attr(t, elements[0], "width")), cfg.Width)
	assert.Equal(t, int(attr(t, elements[0], "height")), cfg.Height)
}
