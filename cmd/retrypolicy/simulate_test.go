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
	docsPicture(t, "simulate-outage", data, elements)
}

// TestLoadChartRendersToPNG renders the outage's chart with rsvg-convert
// and checks the image: the picture's size, a white ground, and the lines
// of the default (blue), bounded-day (green) and the FATAL crosses (in
// their strategies' colours).
func TestLoadChartRendersToPNG(t *testing.T) {
	rsvg, err := exec.LookPath("rsvg-convert")
	if err != nil {
		t.Skip("rsvg-convert is not installed (Debian: librsvg2-bin; .ci/run installs it): not rendering the picture")
	}
	path := filepath.Join(t.TempDir(), "outage.svg")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"simulate", "--svg", path}, nil, &stdout, &stderr), stderr.String())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	elements := parseSVG(t, data)
	cmd := exec.Command(rsvg, "--format", "png")
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(out))
	require.NoError(t, err)
	assert.Equal(t, int(attr(t, elements[0], "width")), img.Bounds().Dx())
	assert.Equal(t, int(attr(t, elements[0], "height")), img.Bounds().Dy())
	counts := colourCounts(img)
	total := img.Bounds().Dx() * img.Bounds().Dy()
	assert.Greater(t, counts["white"], total/3, "a white ground")
	assert.Greater(t, counts["blue"], 300, "the default's line")
	assert.Greater(t, counts["green"], 30, "bounded-day's line")
}
