package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
	"time"

	"github.com/retrypolicy/retrypolicy"
)

// timeline draws a plan as an SVG chart: one row per failure on a shared
// time axis, the run (green) and the wait before the retry (blue) as bars,
// each failure as a red mark, the fatal point as a cross, and the failure
// window of the last failure as a shaded band.
func timeline(s retrypolicy.Strategy, uptime time.Duration, steps []step) []byte {
	const (
		width, left, right = 1000.0, 130.0, 30.0
		top, rowH          = 84.0, 24.0
	)
	plot := width - left - right
	end := steps[len(steps)-1].failure
	if d := steps[len(steps)-1].decision; d.Action != retrypolicy.Fatal {
		end = d.Due
	}
	span := end.Sub(planStart)
	if span <= 0 {
		span = time.Second
	}
	span += span / 3 // room on the right for the last labels
	x := func(t time.Time) float64 { return left + plot*float64(t.Sub(planStart))/float64(span) }
	height := top + rowH*float64(len(steps)) + 50

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	canonical, _ := s.MarshalJSON()
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", esc(fmt.Sprintf("A job whose runs last %v, retried when due", uptime)))
	// The descriptor on two lines: the strategy, then its backoff.
	desc, backoff, _ := strings.Cut(string(canonical), `,"backoff":`)
	if backoff != "" {
		backoff = `  "backoff":` + backoff
	}
	fmt.Fprintf(&b, `<text x="10" y="36" fill="#555" font-size="11" font-family="monospace">%s</text>`+"\n", esc(desc))
	fmt.Fprintf(&b, `<text x="10" y="50" fill="#555" font-size="11" font-family="monospace">%s</text>`+"\n", esc(backoff))
	legend := []struct{ color, label string }{{"#3a9d5d", "run"}, {"#8fb8de", "wait for the retry"}, {"#d62728", "failure"}, {"#f2d16b", "failure window"}}
	for i, l := range legend {
		fmt.Fprintf(&b, `<rect x="%d" y="60" width="12" height="10" fill="%s"/><text x="%d" y="69">%s</text>`+"\n", 10+i*150, l.color, 26+i*150, l.label)
	}

	// The window of the last failure, behind everything else.
	last := steps[len(steps)-1]
	window := time.Hour // unless_stopped's backoff window
	if s.Kind == retrypolicy.Bounded {
		window = s.Window
	}
	if s.Kind != retrypolicy.None {
		from := last.failure.Add(-window)
		note := ""
		if from.Before(planStart) {
			from, note = planStart, ", from before the first run"
		}
		fmt.Fprintf(&b, `<rect class="window" x="%.2f" y="%.0f" width="%.2f" height="%.0f" fill="#f2d16b" fill-opacity="0.35"/>`+"\n",
			x(from), top-4, x(last.failure)-x(from), rowH*float64(len(steps))+8)
		fmt.Fprintf(&b, `<text x="%.2f" y="%.0f" fill="#8a6d00" text-anchor="end">%s</text>`+"\n", x(last.failure)-4, top+rowH*float64(len(steps))+18, esc("window of failure "+fmt.Sprint(len(steps))+": "+window.String()+note))
	}

	for i, st := range steps {
		y := top + rowH*float64(i)
		d := st.decision
		label := fmt.Sprintf("#%d  %d in window", i+1, d.Failures)
		fmt.Fprintf(&b, `<text x="10" y="%.0f">%s</text>`+"\n", y+14, esc(label))
		fmt.Fprintf(&b, `<rect class="run" x="%.2f" y="%.0f" width="%.2f" height="10" fill="#3a9d5d"/>`+"\n", x(st.run), y+5, max(x(st.failure)-x(st.run), 1))
		if d.Action == retrypolicy.Fatal {
			cx, cy := x(st.failure), y+10
			fmt.Fprintf(&b, `<circle class="failure" cx="%.2f" cy="%.0f" r="4" fill="#d62728"/>`+"\n", cx, cy)
			fmt.Fprintf(&b, `<path class="fatal" d="M%.2f %.0f l12 12 m0 -12 l-12 12" stroke="#d62728" stroke-width="3" transform="translate(%.2f 0)"/>`+"\n", cx-6, cy-6, 8.0)
			fmt.Fprintf(&b, `<text x="%.2f" y="%.0f" fill="#d62728" font-weight="bold">FATAL (%s)</text>`+"\n", cx+24, y+14, esc(d.Reason.String()))
			continue
		}
		fmt.Fprintf(&b, `<rect class="wait" x="%.2f" y="%.0f" width="%.2f" height="10" fill="#8fb8de"/>`+"\n", x(st.failure), y+5, max(x(d.Due)-x(st.failure), 1))
		fmt.Fprintf(&b, `<circle class="failure" cx="%.2f" cy="%.0f" r="4" fill="#d62728"/>`+"\n", x(st.failure), y+10)
		fmt.Fprintf(&b, `<text x="%.2f" y="%.0f" fill="#333">%s</text>`+"\n", min(x(d.Due)+6, width-right-60), y+14, esc("wait "+show(d.Credited+d.Jitter)))
	}

	// The time axis, with five ticks.
	axisY := top + rowH*float64(len(steps)) + 30
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#333"/>`+"\n", left, axisY, width-right, axisY)
	for i := 0; i <= 4; i++ {
		t := planStart.Add(span * time.Duration(i) / 4)
		anchor := map[int]string{0: "start", 4: "end"}[i]
		if anchor == "" {
			anchor = "middle"
		}
		fmt.Fprintf(&b, `<line x1="%.2f" y1="%.0f" x2="%.2f" y2="%.0f" stroke="#333"/><text x="%.2f" y="%.0f" text-anchor="%s">%s</text>`+"\n",
			x(t), axisY, x(t), axisY+5, x(t), axisY+18, anchor, esc("+"+show(t.Sub(planStart).Round(time.Second))))
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// esc escapes text for XML.
func esc(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
