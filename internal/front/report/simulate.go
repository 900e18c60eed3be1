package report

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/retrypolicy/retrypolicy/fleet"
	"github.com/retrypolicy/retrypolicy/internal/front/whatif"
	"github.com/retrypolicy/retrypolicy/internal/say"
	"github.com/retrypolicy/retrypolicy/internal/wire"
)

// SpreadText says how the first runs are spread.
func SpreadText(d time.Duration) string {
	if d == 0 {
		return "all at t = 0"
	}
	return "spread over " + say.Duration(d)
}

// TickText says when retries start.
func TickText(d time.Duration) string {
	if d == 0 {
		return "each retry exactly when due"
	}
	return "a controller checks every " + say.Duration(d)
}

// OutageJSON is one line of simulate --json for the outage.
func OutageJSON(name string, r fleet.OutageResult) []byte {
	b := []byte(`{"strategy":`)
	b = wire.AppendString(b, name)
	canonical, _ := r.Strategy.MarshalJSON()
	b = append(b, `,"descriptor":`...)
	b = append(b, canonical...)
	b = wire.AppendSeconds(append(b, `,"tick_secs":`...), r.Tick)
	b = fmt.Appendf(b, `,"runs":%d,"decisions":%d,"peak_runs_per_min":%d,"fatal":%d,"succeeded":%d,"unfinished":%d`,
		r.Runs, r.Decisions, r.Peak, r.Fatal, r.Succeeded, r.Unfinished)
	b = append(appendTruncated(b, r.Truncated, r.TruncatedBy), `,"recovery_secs":`...)
	b = appendPercentiles(b, r.Recovery, r.Succeeded > 0)
	b = appendInts(append(b, `,"runs_per_min":`...), r.Load)
	b = appendInts(append(b, `,"fatal_per_min":`...), r.FatalAt)
	return append(b, '}')
}

// appendPercentiles appends p as {"p50", "p99", "max"} in seconds when
// there are any (ok), else null.
func appendPercentiles(b []byte, p fleet.Percentiles, ok bool) []byte {
	if !ok {
		return append(b, "null"...)
	}
	b = wire.AppendSeconds(append(b, `{"p50":`...), p.P50)
	b = wire.AppendSeconds(append(b, `,"p99":`...), p.P99)
	b = wire.AppendSeconds(append(b, `,"max":`...), p.Max)
	return append(b, '}')
}

// appendInts appends ns as a JSON array.
func appendInts(b []byte, ns []int) []byte {
	b = append(b, '[')
	for i, n := range ns {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return append(b, ']')
}

// ContentionJSON is one line of simulate --json for the contention.
func ContentionJSON(r fleet.ContentionResult) []byte {
	b := []byte(`{"strategy":`)
	b = wire.AppendString(b, r.Name)
	b = fmt.Appendf(b, `,"calls":%s,"completion_ms":%s,"gave_up":%s,"runs":%d`,
		number(r.Calls), number(r.CompletionMs), number(r.GaveUp), r.Runs)
	return append(appendTruncated(b, r.Truncated, r.TruncatedBy), '}')
}

// number writes a mean with one decimal, as JSON.
func number(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "null"
	}
	return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64)
}

// The load chart's geometry, in pixels.
const (
	chartWidth, chartHeight = 1000.0, 460.0
	chartLeft, chartRight   = 70.0, 250.0
	chartTop, chartBottom   = 60.0, 50.0
)

var chartColors = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#393b79", "#7f7f7f"}

// chartDashes tell the lines apart where they run together: a line drawn
// over another leaves gaps that show the one under it.
var chartDashes = []string{"", "9 5", "3 4", "12 4 3 4", "6 3", "2 6", "15 5", "4 2 1 2", "1 3", "8 2 2 2"}

// LoadChart draws the runs a minute of each strategy over time, on a log
// scale with a row for minutes of no run, with the outage shaded and each
// minute in which jobs went FATAL marked with a cross on its strategy's
// line. Each line has its own color and dash; a strategy whose line is
// another's, minute for minute, says so in the legend.
func LoadChart(o fleet.Outage, strategies []whatif.Named, results []fleet.OutageResult) []byte {
	minutes, peak := int(o.Down/time.Minute)+1, 1
	loads := make([][]int, len(results))
	for i, r := range results {
		minutes, peak, loads[i] = max(minutes, len(r.Load)), max(peak, r.Peak), r.Load
	}
	c := newLoadChart(minutes, time.Minute, peak)
	c.start(fmt.Sprintf("%d jobs through a %s outage: runs a minute (log scale); %s", o.Jobs, say.Duration(o.Down), TickText(o.Tick)), o.Down, "provider down")
	for i, r := range results {
		c.line(i, r.Load, r.FatalAt)
		label, note := strategies[i].Name, ""
		if r.Fatal > 0 {
			label += fmt.Sprintf(" (%d FATAL)", r.Fatal)
		}
		if j := sameLoad(loads, i); j >= 0 {
			note = "its line is under " + strategies[j].Name + "'s"
		}
		c.legend(i, key{label, []string{note}})
	}
	return c.end()
}

// MaxChartPoints is the most points a load chart draws for a line,
// whatever the run's length: a longer run's units are taken in buckets,
// each drawn as its busiest unit, so that a chart stays a few hundred KB.
const MaxChartPoints = 2000

// loadChart is a load chart being drawn: its scales, over units of unit
// (minutes, seconds), drawn per units a point.
type loadChart struct {
	units        int
	unit         time.Duration
	per          int
	plotW, plotH float64
	height       float64 // the picture's: chartHeight unless taller
	decades      float64
	xLabel       string       // what the time axis counts from
	keyGap       float64      // the legend's keys' spacing, 0 for 32 pixels
	b            bytes.Buffer // the picture drawn so far
}

// tall makes the picture tall enough for n keys in its legend, each
// keyGap apart: its plot grows with it.
func (c *loadChart) tall(n int) {
	c.height = max(chartHeight, chartTop+c.keyGap*float64(n)+chartBottom)
	c.plotH = c.height - chartTop - chartBottom
}

// end closes the picture and returns it.
func (c *loadChart) end() []byte {
	c.b.WriteString("</svg>\n")
	return c.b.Bytes()
}

func newLoadChart(units int, unit time.Duration, peak int) *loadChart {
	units = min(max(units, 1), int(math.MaxInt64/int64(unit))) // their span fits a Duration: the axis's ticks stay few
	return &loadChart{units: units, unit: unit, per: (units + MaxChartPoints - 1) / MaxChartPoints,
		plotW: chartWidth - chartLeft - chartRight, plotH: chartHeight - chartTop - chartBottom, height: chartHeight,
		decades: math.Ceil(math.Log10(float64(max(peak, 1)))), xLabel: "time since the outage began"}
}

// bucket returns the busiest and the sum of counts over the units of
// point p.
func (c *loadChart) bucket(counts []int, p int) (most, sum int) {
	for u := p * c.per; u < min((p+1)*c.per, len(counts)); u++ {
		most, sum = max(most, counts[u]), sum+counts[u]
	}
	return most, sum
}

// start writes the picture's head: its title, the outage shaded, and the
// axes.
func (c *loadChart) start(title string, down time.Duration, downLabel string) {
	b := &c.b
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n",
		chartWidth, c.height, chartWidth, c.height)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	fmt.Fprintf(b, `<text x="10" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", esc(title))
	if downLabel != "" {
		c.shade(0, float64(down)/float64(c.unit), downLabel)
	}
	if c.per > 1 {
		fmt.Fprintf(b, `<text class="bucket" x="%.0f" y="%.0f" text-anchor="end" font-size="11" fill="#555">each point: the busiest %s of %s</text>`+"\n",
			chartLeft+c.plotW, chartTop-6, say.Duration(c.unit), say.Duration(time.Duration(c.per)*c.unit))
	}
	c.axes()
}

// shade shades the units from from to to, where the dependency is down,
// with label at its start.
func (c *loadChart) shade(from, to float64, label string) {
	b := &c.b
	from, to = max(from, 0), min(to, float64(c.units))
	fmt.Fprintf(b, `<rect class="outage" x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="#d62728" fill-opacity=".12"/>`+"\n",
		c.x(from), chartTop, max(c.x(to)-c.x(from), 1), c.plotH)
	if label != "" {
		fmt.Fprintf(b, `<text x="%.1f" y="%.0f" fill="#a02020">%s</text>`+"\n", c.x(from)+6, chartTop+c.plotH-22, esc(label))
	}
}

// x is where a unit is; y is where n runs are: 1 a step above the row of
// 0, which is the plot's floor.
func (c *loadChart) x(u float64) float64 { return chartLeft + c.plotW*u/float64(c.units) }

// mid is where point p is: the middle of its units.
func (c *loadChart) mid(p int) float64 { return c.x(float64(p*c.per) + float64(c.per)/2) }
func (c *loadChart) y(n int) float64 {
	if n <= 0 {
		return chartTop + c.plotH
	}
	return chartTop + c.plotH - c.plotH*(math.Log10(float64(n))+1)/(c.decades+1.25)
}

// axes draws the decades (0 at the floor), and the time on round ticks.
func (c *loadChart) axes() {
	b := &c.b
	fmt.Fprintf(b, `<text x="%.0f" y="%.1f" text-anchor="end">0</text>`+"\n", chartLeft-6, c.y(0)+4)
	for d := 0.0; d <= c.decades; d++ {
		n := int(math.Pow(10, d))
		fmt.Fprintf(b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#ddd"/><text x="%.0f" y="%.1f" text-anchor="end">%d</text>`+"\n",
			chartLeft, c.y(n), chartLeft+c.plotW, c.y(n), chartLeft-6, c.y(n)+4, n)
	}
	step := max(int(TickStep(time.Duration(c.units)*c.unit)/c.unit), 1)
	for u := 0; u <= c.units; u += step {
		fmt.Fprintf(b, `<text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`+"\n", c.x(float64(u)), chartTop+c.plotH+18, esc(tickLabel(time.Duration(u)*c.unit)))
	}
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`+"\n", chartLeft+c.plotW/2, c.height-10, esc(c.xLabel))
}

// line draws the i-th series: its count in each unit, and the units in
// which jobs went FATAL, if any.
func (c *loadChart) line(i int, load, fatalAt []int) {
	b := &c.b
	color, dash := chartColors[i%len(chartColors)], chartDashes[i%len(chartDashes)]
	n := (c.units + c.per - 1) / c.per
	points := make([]string, 0, n)
	for p := range n {
		most, _ := c.bucket(load, p)
		points = append(points, fmt.Sprintf("%.1f,%.1f", c.mid(p), c.y(most)))
	}
	fmt.Fprintf(b, `<polyline class="load" fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", color, dashAttr(dash), strings.Join(points, " "))
	for p := range (len(fatalAt) + c.per - 1) / c.per {
		if _, fatal := c.bucket(fatalAt, p); fatal > 0 {
			most, _ := c.bucket(load, p)
			cx, cy := c.mid(p), c.y(most)
			fmt.Fprintf(b, `<path class="fatal" stroke="%s" stroke-width="3" d="M%.1f %.1fl8 8m0-8l-8 8"><title>%d FATAL</title></path>`+"\n", color, cx-4, cy-4, fatal)
		}
	}
}

// key is a line's entry in the legend: its label, and the notes under it
// (an empty one is left out).
type key struct {
	label string
	notes []string
}

// legend writes the i-th line's key. Keys are keyGap apart (32 pixels
// unless set: a label and a note).
func (c *loadChart) legend(i int, k key) {
	b := &c.b
	color, dash := chartColors[i%len(chartColors)], chartDashes[i%len(chartDashes)]
	ly := chartTop + cmp.Or(c.keyGap, 32)*float64(i) + 10
	fmt.Fprintf(b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="%s" stroke-width="3"%s/><text x="%.0f" y="%.0f">%s</text>`+"\n",
		chartWidth-chartRight+10, ly, chartWidth-chartRight+34, ly, color, dashAttr(dash), chartWidth-chartRight+40, ly+4, esc(k.label))
	for _, note := range k.notes {
		if note == "" {
			continue
		}
		ly += 14
		fmt.Fprintf(b, `<text x="%.0f" y="%.0f" font-size="11" fill="#555">%s</text>`+"\n", chartWidth-chartRight+40, ly+4, esc(note))
	}
}

// dashAttr is the stroke-dasharray attribute of a dash, none for a solid
// line.
func dashAttr(dash string) string {
	if dash == "" {
		return ""
	}
	return ` stroke-dasharray="` + dash + `"`
}

// sameLoad returns the index of a series drawn after the i-th that is the
// i-th's unit for unit, so that it covers it; or -1.
func sameLoad(loads [][]int, i int) int {
	for j := len(loads) - 1; j > i; j-- {
		if slices.Equal(loads[i], loads[j]) {
			return j
		}
	}
	return -1
}
