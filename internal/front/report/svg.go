package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/say"
	"github.com/retrypolicy/retrypolicy/plan"
)

// The picture's geometry, in pixels. The plot's right margin is as wide as
// its widest wait label, so that every label fits beside its bar.
const (
	SVGWidth     = 1000.0
	SVGLeft      = 180.0
	svgRowHeight = 22.0
	svgWrapAt    = 120 // characters of the strategy's text a line
	// svgCharWidth is what a character of the 12 px font takes at most,
	// as the labels are placed (and their test checks them).
	svgCharWidth = 7.0
)

// labelWidth is the width text takes at most.
func labelWidth(text string) float64 { return svgCharWidth * float64(utf8.RuneCountInString(text)) }

// waitLabel is a row's label for its wait.
func waitLabel(st plan.Step) string { return "wait " + say.Duration(st.Retry.Sub(st.Failure)) }

// SVG draws the plan as a picture: one row per failure on a shared
// time axis that starts at the first failure, as the table's times do, and
// ends where the plan does, or at axis when that is longer (so that plans
// drawn one above the other share their axis); each run (green, the first
// clipped at the axis) and wait until the retry runs (blue: its delay,
// and under a tick until the tick after it) as bars, each
// failure as a red mark, the fatal point as a cross, and the failure
// window of the last failure as a band. The markup is compact, so that a
// thousand rows stay a few hundred KB.
func (p Plan) SVG(axis time.Duration) []byte {
	s, steps := p.Strategy, p.Steps
	t := newTimeline(s, steps, axis)
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n",
		SVGWidth, t.height, SVGWidth, t.height)
	b.WriteString(`<style>.run{fill:#3a9d5d}.wait{fill:#8fb8de}.failure{fill:#d62728}.fatal{stroke:#d62728;stroke-width:3}` +
		`.window{fill:#f2d16b;fill-opacity:.35}.note{fill:#555}.tick{stroke:#333}.mono{font-family:monospace;font-size:11px;fill:#555}</style>` + "\n")
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	fmt.Fprintf(&b, `<text x="10" y="22" font-size="15" font-weight="bold">%s</text>`+"\n",
		esc(fmt.Sprintf("A job whose runs last %s, %s (times since the first failure)", say.Duration(p.Uptime), TickText(p.Tick))))
	for i, line := range t.header {
		fmt.Fprintf(&b, `<text class="mono" x="10" y="%.0f" xml:space="preserve">%s</text>`+"\n", 40+14*float64(i), esc(line))
	}
	legend := []struct{ class, label string }{{"run", "run"}, {"wait", "wait for the retry"}, {"failure", "failure"}, {"window", "failure window"}}
	for i, l := range legend {
		fmt.Fprintf(&b, `<rect class="%s key" x="%d" y="%.0f" width="12" height="10"/><text x="%d" y="%.0f">%s</text>`+"\n",
			l.class, 10+i*160, t.top-22, 26+i*160, t.top-13, l.label)
	}
	if s.Kind != retrypolicy.None {
		t.window(&b, s)
	}
	for i, st := range steps {
		t.row(&b, i, st)
	}
	t.axis(&b)
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// timeline is a plan's picture being drawn: its steps and geometry.
type timeline struct {
	steps        []plan.Step
	origin, last time.Time
	span         time.Duration
	plot         float64 // the plot's width
	header       []string
	top, rows    float64 // where the rows start, and their height in all
	height       float64
}

// newTimeline lays out the picture of steps on an axis of at least axis.
func newTimeline(s retrypolicy.Strategy, steps []plan.Step, axis time.Duration) *timeline {
	t := &timeline{steps: steps, origin: steps[0].Failure, last: steps[len(steps)-1].Failure}
	end := t.last
	if d := steps[len(steps)-1].Decision; d.Action != retrypolicy.Fatal {
		end = steps[len(steps)-1].Retry
	}
	t.span = max(end.Sub(t.origin), axis, time.Second)
	right := 40.0
	for _, st := range steps {
		if st.Decision.Action != retrypolicy.Fatal {
			right = max(right, labelWidth(waitLabel(st))+20)
		}
	}
	t.plot = SVGWidth - SVGLeft - right
	canonical, _ := s.MarshalJSON()
	t.header = Wrap(string(canonical), svgWrapAt)
	t.top = 70 + 14*float64(len(t.header))
	t.rows = svgRowHeight * float64(len(steps))
	t.height = t.top + t.rows + 56
	return t
}

// x is where an instant is on the axis.
func (t *timeline) x(at time.Time) float64 {
	return SVGLeft + t.plot*float64(max(at.Sub(t.origin), 0))/float64(t.span)
}

// window draws the window of the last failure, behind the rows.
func (t *timeline) window(b *bytes.Buffer, s retrypolicy.Strategy) {
	window := time.Hour // unless_stopped counts its backoff over an hour
	if s.Kind == retrypolicy.Bounded {
		window = s.Window
	}
	from := t.last.Add(-window)
	fmt.Fprintf(b, `<rect class="window" x="%.1f" y="%.0f" width="%.1f" height="%.0f"/>`+"\n", t.x(from), t.top-4, t.x(t.last)-t.x(from), t.rows+8)
	note := fmt.Sprintf("window of failure %d: %s", len(t.steps), say.Duration(window))
	if from.Before(t.origin) {
		note += ", from before the first failure"
	}
	fmt.Fprintf(b, `<text class="note" x="%.1f" y="%.0f" text-anchor="end">%s</text>`+"\n", max(t.x(t.last)-4, SVGLeft+240), t.top+t.rows+16, esc(note))
}

// row draws the i-th failure: its run, its mark, and its wait or its end.
func (t *timeline) row(b *bytes.Buffer, i int, st plan.Step) {
	y := t.top + svgRowHeight*float64(i)
	d := st.Decision
	fmt.Fprintf(b, `<text x="10" y="%.0f">failure %d (%d counted)</text>`+"\n", y+14, i+1, d.InWindow)
	fmt.Fprintf(b, `<rect class="run" x="%.1f" y="%.0f" width="%.1f" height="10"/>`, t.x(st.Start), y+5, max(t.x(st.Failure)-t.x(st.Start), 1))
	fx := t.x(st.Failure)
	if d.Action == retrypolicy.Fatal {
		fmt.Fprintf(b, `<circle class="failure" cx="%.1f" cy="%.0f" r="4"/><path class="fatal" d="M%.1f %.0fl10 10m0-10l-10 10"/>`, fx, y+10, fx+6, y+5)
		label, lx, anchor := "FATAL ("+d.Reason.String()+")", fx+22, "start"
		if lx+labelWidth(label) > SVGWidth-4 { // no room on the right: before the run
			lx, anchor = t.x(st.Start)-8, "end"
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%.0f" fill="#d62728" font-weight="bold" text-anchor="%s">%s</text>`+"\n", lx, y+14, anchor, esc(label))
		return
	}
	fmt.Fprintf(b, `<rect class="wait" x="%.1f" y="%.0f" width="%.1f" height="10"/><circle class="failure" cx="%.1f" cy="%.0f" r="4"/>`,
		fx, y+5, max(t.x(st.Retry)-fx, 1), fx, y+10)
	// Right of the bar and clear of the failure's dot: the margin holds it.
	fmt.Fprintf(b, `<text x="%.1f" y="%.0f">%s</text>`+"\n", max(t.x(st.Retry), fx+4)+6, y+14, esc(waitLabel(st)))
}

// axis draws the time axis, with ticks on round values.
func (t *timeline) axis(b *bytes.Buffer) {
	axisY := t.top + t.rows + 28
	fmt.Fprintf(b, `<line class="tick" x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f"/>`+"\n", SVGLeft, axisY, SVGLeft+t.plot, axisY)
	step := TickStep(t.span)
	for i := range t.span/step + 1 { // i×step ≤ span: no overflow
		at := i * step
		tx := SVGLeft + t.plot*float64(at)/float64(t.span)
		fmt.Fprintf(b, `<line class="tick" x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f"/><text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`+"\n",
			tx, axisY, tx, axisY+5, tx, axisY+18, esc(tickLabel(at)))
	}
}

// roundSteps are the steps a reader counts time in, shortest first.
var roundSteps = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
	day, 2 * day, 7 * day, 14 * day, 30 * day, 60 * day, 90 * day, 180 * day, year,
}

const (
	day  = 24 * time.Hour
	year = 365 * day
)

// TickStep returns the round step that puts at most 10 ticks on span: one
// of roundSteps (30 s, 1 m, 15 m, 6 h, 7 days …), or 1, 2 or 5 × 10^k
// years beyond them; span itself past the longest Duration.
func TickStep(span time.Duration) time.Duration {
	for _, step := range roundSteps {
		if span/step <= 10 {
			return step
		}
	}
	for scale := year; scale <= time.Duration(1<<63-1)/5; scale *= 10 {
		for _, m := range []time.Duration{1, 2, 5} {
			if step := m * scale; span/step <= 10 {
				return step
			}
		}
	}
	return span
}

// tickLabel writes an offset from the first failure without the zero
// parts: +30s, +2m, +1h30m.
func tickLabel(d time.Duration) string { return "+" + say.Duration(d) }

// Wrap breaks text into lines of at most width characters, after commas
// where it can, keeping every character: the lines joined are the text.
func Wrap(text string, width int) []string {
	var lines []string
	for len(text) > width {
		cut := strings.LastIndexByte(text[:width], ',') + 1
		if cut <= 0 {
			cut = width
		}
		lines = append(lines, text[:cut])
		text = text[cut:]
	}
	return append(lines, text)
}

// esc escapes text for XML.
func esc(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
