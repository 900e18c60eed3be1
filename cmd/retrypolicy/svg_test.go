package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrypolicy/retrypolicy/internal/front/report"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// svgElement is one element of a picture, with its attributes and text.
type svgElement struct {
	name  string
	attrs map[string]string
	text  string
}

// planPicture runs plan with --svg and returns the picture's bytes and its
// elements in document order.
func planPicture(t *testing.T, args ...string) ([]byte, []svgElement) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.svg")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(append([]string{"plan", "--svg", path}, args...), nil, &stdout, &stderr), stderr.String())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data, parseSVG(t, data)
}

// parseSVG reads an SVG picture's elements, checking that it is
// well-formed XML.
func parseSVG(t *testing.T, data []byte) []svgElement {
	t.Helper()
	var elements []svgElement
	var open []int // the elements not yet closed, innermost last
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "the SVG must be well-formed XML")
		switch tok := tok.(type) {
		case xml.StartElement:
			el := svgElement{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				el.attrs[a.Name.Local] = a.Value
			}
			open = append(open, len(elements))
			elements = append(elements, el)
		case xml.EndElement:
			open = open[:len(open)-1]
		case xml.CharData:
			if len(open) > 0 {
				elements[open[len(open)-1]].text += string(tok)
			}
		}
	}
	return elements
}

func attr(t *testing.T, el svgElement, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(el.attrs[name], 64)
	require.NoError(t, err, "%s %s=%q", el.name, name, el.attrs[name])
	return v
}

// TestPlanSVGAxis: the time axis starts at the first failure, as the
// table's times do, ends where the plan ends (the fatal failure, or the
// last retry's due time), and its ticks fall on round values.
func TestPlanSVGAxis(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		fatal bool
	}{
		{[]string{"--tick", "0", "--uptime", "5", "testdata/cli/strategy-bounded.json"}, true},
		{[]string{"--failures", "7"}, false},
		{[]string{"--uptime", "5", "testdata/cli/strategy-bounded.json"}, false}, // under the minute's tick: never fatal
		{[]string{"--uptime", "30", "--failures", "20", "testdata/cli/strategy-jitter.json"}, false},
		{[]string{"--uptime", "3600", "--failures", "30"}, false},
	} {
		_, elements := planPicture(t, tc.args...)
		var failures, waits []svgElement
		var ticks []svgElement
		end := 0.0 // where the axis ends: its line, the first of class tick
		for _, el := range elements {
			switch {
			case el.name == "line" && el.attrs["class"] == "tick" && end == 0:
				end = attr(t, el, "x2")
			case el.name == "circle" && el.attrs["class"] == "failure":
				failures = append(failures, el)
			case el.name == "rect" && el.attrs["class"] == "wait":
				waits = append(waits, el)
			case el.name == "text" && el.attrs["text-anchor"] == "middle":
				ticks = append(ticks, el)
			}
		}
		require.NotEmpty(t, failures, "%v", tc.args)
		require.GreaterOrEqual(t, len(ticks), 2, "%v", tc.args)
		assert.InDelta(t, report.SVGLeft, attr(t, failures[0], "cx"), 0.05, "%v: the axis starts at the first failure", tc.args)
		assert.Equal(t, "+0s", ticks[0].text, "%v", tc.args)
		assert.InDelta(t, report.SVGLeft, attr(t, ticks[0], "x"), 0.05, "%v", tc.args)
		if tc.fatal {
			assert.InDelta(t, end, attr(t, failures[len(failures)-1], "cx"), 0.05, "%v: the axis ends at the fatal failure", tc.args)
		} else {
			last := waits[len(waits)-1] // a wait of nothing is drawn 1 px wide
			x, width := attr(t, last, "x"), attr(t, last, "width")
			if width > 1 {
				assert.InDelta(t, end, x+width, 0.1, "%v: the axis ends when the last retry is due", tc.args)
			} else { // drawn wider than it is: the axis ends within it
				assert.InDelta(t, end, x+0.5, 0.6, "%v: the axis ends when the last retry is due", tc.args)
			}
		}
		step, err := time.ParseDuration(strings.TrimPrefix(ticks[1].text, "+"))
		require.NoError(t, err, "%q", ticks[1].text)
		assert.True(t, isRound(step), "%v: tick step %v", tc.args, step)
		for i, tick := range ticks {
			at, err := time.ParseDuration(strings.TrimPrefix(tick.text, "+"))
			require.NoError(t, err, "%q", tick.text)
			assert.Equal(t, time.Duration(i)*step, at, "%v: tick %d", tc.args, i)
			assert.LessOrEqual(t, attr(t, tick, "x"), end+0.05, "%v: no tick past the axis", tc.args)
		}
	}
}

// box is a rectangle of the picture, for the overlap test.
type box struct {
	what                     string
	left, top, right, bottom float64
}

func (a box) overlaps(b box) bool {
	const slack = 0.5 // pixels: boxes that touch do not overlap
	return a.left < b.right-slack && b.left < a.right-slack && a.top < b.bottom-slack && b.top < a.bottom-slack
}

// boxes returns the boxes of a picture's texts (7 px a character, from the
// baseline 11 px up and 3 px down, placed by their anchor) and of its
// bars, dots and crosses; the window's band, behind everything, and the
// axis are left out.
func boxes(t *testing.T, elements []svgElement) (texts, marks []box) {
	for _, el := range elements {
		switch el.name {
		case "text":
			x, y := attr(t, el, "x"), attr(t, el, "y")
			w := 7 * float64(len([]rune(el.text)))
			switch el.attrs["text-anchor"] {
			case "end":
				x -= w
			case "middle":
				x -= w / 2
			}
			texts = append(texts, box{"text " + strconv.Quote(el.text), x, y - 11, x + w, y + 3})
		case "rect":
			if c := el.attrs["class"]; c == "window" || c == "" {
				continue
			}
			x, y := attr(t, el, "x"), attr(t, el, "y")
			marks = append(marks, box{el.attrs["class"] + " bar", x, y, x + attr(t, el, "width"), y + attr(t, el, "height")})
		case "circle":
			cx, cy, r := attr(t, el, "cx"), attr(t, el, "cy"), attr(t, el, "r")
			marks = append(marks, box{"failure dot", cx - r, cy - r, cx + r, cy + r})
		case "path":
			var x, y float64
			_, err := fmt.Sscanf(el.attrs["d"], "M%f %f", &x, &y)
			require.NoError(t, err, el.attrs["d"])
			marks = append(marks, box{"fatal cross", x, y, x + 10, y + 10})
		}
	}
	return texts, marks
}

// TestPlanSVGLabelsOverlapNothing: no label of the picture overlaps a bar,
// a dot, a cross or another label, and none leaves the picture, for plans
// that end fatal, that wait long at the end, with uptime credit, with
// jitter, with one failure and with many.
func TestPlanSVGLabelsOverlapNothing(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"--tick", "0", "--uptime", "5", "testdata/cli/strategy-bounded.json"},
		{"--uptime", "30", "--failures", "20", "testdata/cli/strategy-jitter.json"},
		{"--uptime", "3600", "--failures", "30"},
		{"--failures", "1"},
		{"--failures", "2"},
		{"--failures", "200"},
	} {
		_, elements := planPicture(t, args...)
		texts, marks := boxes(t, elements)
		require.NotEmpty(t, marks, "%v", args)
		for i, a := range texts {
			assert.GreaterOrEqual(t, a.left, 0.0, "%v: %s leaves the picture", args, a.what)
			assert.LessOrEqual(t, a.right, report.SVGWidth, "%v: %s leaves the picture", args, a.what)
			for _, b := range texts[i+1:] {
				assert.False(t, a.overlaps(b), "%v: %s overlaps %s", args, a.what, b.what)
			}
			for _, m := range marks {
				assert.False(t, a.overlaps(m), "%v: %s overlaps a %s at %.0f", args, a.what, m.what, m.left)
			}
		}
	}
}

// isRound reports whether d is a step a reader counts time in: 1, 2, 5,
// 10, 15 or 30 seconds or minutes, 1, 2, 3, 6 or 12 hours, 1, 2, 7, 14,
// 30, 60, 90 or 180 days, or 1, 2 or 5 × 10^k years.
func isRound(d time.Duration) bool {
	const day = 24 * time.Hour
	for _, unit := range []time.Duration{time.Second, time.Minute} {
		for _, n := range []time.Duration{1, 2, 5, 10, 15, 30} {
			if d == n*unit {
				return true
			}
		}
	}
	for _, n := range []time.Duration{1, 2, 3, 6, 12} {
		if d == n*time.Hour {
			return true
		}
	}
	for _, n := range []time.Duration{1, 2, 7, 14, 30, 60, 90, 180} {
		if d == n*day {
			return true
		}
	}
	if d%(365*day) != 0 {
		return false
	}
	n := d / (365 * day)
	for n%10 == 0 {
		n /= 10
	}
	return n == 1 || n == 2 || n == 5
}

// TestTicksOfAFixedBackoffAreRound: a fixed 30 s backoff's plan ticks
// every 30 s or minute, not every 50 s; an hour's every 10 minutes.
func TestTicksOfAFixedBackoffAreRound(t *testing.T) {
	assert.Equal(t, 30*time.Second, report.TickStep(300*time.Second), "10 failures 30 s apart")
	assert.Equal(t, time.Minute, report.TickStep(8*time.Minute))
	assert.Equal(t, 10*time.Minute, report.TickStep(time.Hour))
	assert.Equal(t, 3*time.Hour, report.TickStep(25*time.Hour))
	assert.Equal(t, 7*24*time.Hour, report.TickStep(60*24*time.Hour))
}

// TestTickStepIsRoundAndFew: for any span, the tick step is round and puts
// at most 11 ticks (both ends included) on the axis.
func TestTickStepIsRoundAndFew(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		span := time.Duration(rapid.Int64Range(int64(time.Second), 1<<63-1).Draw(t, "span"))
		step := report.TickStep(span)
		require.Greater(t, step, time.Duration(0))
		assert.True(t, isRound(step) || step == span, "step %v for span %v", step, span)
		assert.LessOrEqual(t, span/step, time.Duration(10), "step %v for span %v", step, span)
	})
}

// TestWrapKeepsEveryCharacter: the wrapped lines, joined, are the text,
// and none is longer than the width.
func TestWrapKeepsEveryCharacter(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := rapid.StringOf(rapid.RuneFrom([]rune(`ab,{}":`))).Draw(t, "text")
		width := rapid.IntRange(1, 40).Draw(t, "width")
		lines := report.Wrap(text, width)
		assert.Equal(t, text, strings.Join(lines, ""))
		for _, line := range lines {
			assert.LessOrEqual(t, len(line), width)
		}
	})
}

// TestPlanSVGSizeIsBounded: the largest plan allowed, over the longest
// runs allowed, draws a picture of at most a few hundred KB.
func TestPlanSVGSizeIsBounded(t *testing.T) {
	for _, args := range [][]string{
		{"--failures", "1000"},
		{"--failures", "1000", "--uptime", "1e9"},
		{"--failures", "1000", "--uptime", "0.001", "testdata/cli/strategy-jitter.json"},
	} {
		data, _ := planPicture(t, args...)
		assert.Less(t, len(data), 400<<10, "%v", args)
	}
}

// TestPlanSVGRendersToPNG renders a plan's picture with rsvg-convert and
// checks the image: the picture's size, and marks of the plan's colours
// on a white ground.
func TestPlanSVGRendersToPNG(t *testing.T) {
	data, elements := planPicture(t, "--tick", "0", "--uptime", "5", "testdata/cli/strategy-bounded.json")
	counts, total := rendered(t, data, elements)
	assert.Greater(t, counts["white"], total/2, "a white ground")
	assert.Greater(t, counts["other"], total/50, "not blank")
	assert.Greater(t, counts["red"], 20, "failure marks")
	assert.Greater(t, counts["green"], 200, "runs")
	assert.Greater(t, counts["blue"], 200, "waits")
}

// rendered renders a picture with rsvg-convert, or skips without it; it
// checks that the image has the picture's size and returns its pixels'
// counts by rough colour, and how many there are.
func rendered(t *testing.T, data []byte, elements []svgElement) (map[string]int, int) {
	t.Helper()
	rsvg, err := exec.LookPath("rsvg-convert")
	if err != nil {
		t.Skip("rsvg-convert is not installed (Debian: librsvg2-bin; .ci/run installs it): not rendering the picture")
	}
	cmd := exec.Command(rsvg, "--format", "png")
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(out))
	require.NoError(t, err)
	assert.Equal(t, int(attr(t, elements[0], "width")), img.Bounds().Dx())
	assert.Equal(t, int(attr(t, elements[0], "height")), img.Bounds().Dy())
	return colourCounts(img), img.Bounds().Dx() * img.Bounds().Dy()
}

// colourCounts counts an image's pixels by rough colour.
func colourCounts(img image.Image) map[string]int {
	counts := map[string]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			switch {
			case r > 245 && g > 245 && bl > 245:
				counts["white"]++
			case r > 180 && g < 80 && bl < 80:
				counts["red"]++
			case g > r+60 && g > bl+40:
				counts["green"]++
			case bl > r+50 && bl > g+10:
				counts["blue"]++
			}
			if !(r > 245 && g > 245 && bl > 245) {
				counts["other"]++
			}
		}
	}
	return counts
}

// TestDocsPictureIsCurrent: the picture the README shows is what plan
// draws today (-update redraws docs/plan-bounded.svg and, with
// rsvg-convert, docs/plan-bounded.png), and the PNG has the picture's size.
func TestDocsPictureIsCurrent(t *testing.T) {
	data, elements := planPicture(t, "--tick", "0", "--uptime", "5", filepath.Join("..", "..", "docs", "bounded-strategy.json"))
	docsPicture(t, "plan-bounded", data, elements)
}

// docsPicture checks that docs/NAME.svg is data, which -update writes
// there with its PNG, and that docs/NAME.png has the picture's size.
func docsPicture(t *testing.T, name string, data []byte, elements []svgElement) {
	t.Helper()
	svg, pngPath := filepath.Join("..", "..", "docs", name+".svg"), filepath.Join("..", "..", "docs", name+".png")
	if *update {
		require.NoError(t, os.WriteFile(svg, data, 0o644))
		rsvg, err := exec.LookPath("rsvg-convert")
		require.NoError(t, err, "-update draws the PNG with rsvg-convert")
		out, err := exec.Command(rsvg, "--format", "png", svg).Output()
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(pngPath, out, 0o644))
	}
	committed, err := os.ReadFile(svg)
	require.NoError(t, err)
	assert.Equal(t, string(data), string(committed), "docs/%s.svg is stale: go test ./cmd/retrypolicy -run 'TestDocs' -update", name)
	f, err := os.Open(pngPath)
	require.NoError(t, err)
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	require.NoError(t, err)
	assert.Equal(t, int(attr(t, elements[0], "width")), cfg.Width)
	assert.Equal(t, int(attr(t, elements[0], "height")), cfg.Height)
}
