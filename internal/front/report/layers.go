package report

import (
	"fmt"
	"math"
	"time"

	"github.com/retrypolicy/retrypolicy/fleet"
	"github.com/retrypolicy/retrypolicy/internal/say"
	"github.com/retrypolicy/retrypolicy/internal/wire"
)

// LayersJSON is one line of simulate --json for the layers scenario.
func LayersJSON(name string, r fleet.LayersResult) []byte {
	b := []byte(`{"chain":`)
	b = wire.AppendString(b, name)
	b = fmt.Appendf(b, `,"requests":%d,"succeeded":%d,"failed":%d,"bottom_calls":%d,"amplification":%s,"decisions":%d,"peak_load":%s,"metastable":%t`,
		r.Requests, r.Succeeded, r.Failed, r.BottomCalls, number(r.Amplification), r.Decisions, number(r.PeakLoad), r.Metastable)
	b = appendTruncated(b, r.Truncated, r.TruncatedBy)
	b = appendInts(append(b, `,"attempts":`...), r.Attempts)
	b = append(b, `,"recovery_secs":`...)
	if r.Metastable {
		b = append(b, "null"...)
	} else {
		b = wire.AppendSeconds(b, r.Recovery)
	}
	b = appendPercentiles(append(b, `,"latency_secs":`...), r.Latency, r.Succeeded > 0)
	b = appendInts(append(b, `,"calls_per_sec":`...), r.Load)
	b = appendInts(append(b, `,"retries_per_sec":`...), r.Retries)
	return append(b, '}')
}

// Retries are a layers run's retries a second, all layers together: in
// the 10 s before the outage (or as many as it has), its first 5 s (means),
// the most in one second while the bottom is down, and the 10 s after.
type Retries struct {
	Before, First, After float64
	Height               int
}

// RetriesOf returns r's retries a second around l's outage.
func RetriesOf(l fleet.Layers, r fleet.LayersResult) Retries {
	at := func(s int) int {
		if s >= 0 && s < len(r.Retries) {
			return r.Retries[s]
		}
		return 0
	}
	mean := func(from, n int) float64 {
		if n <= 0 {
			return 0
		}
		sum := 0
		for s := from; s < from+n; s++ {
			sum += at(s)
		}
		return float64(sum) / float64(n)
	}
	down := int(l.DownAt / time.Second)
	end := down + int(min(l.Down, 24*time.Hour)/time.Second)
	f := Retries{Before: mean(max(down-10, 0), min(down, 10)), First: mean(down, min(5, end-down)), After: mean(end, 10)}
	for s := down; s < end; s++ {
		f.Height = max(f.Height, at(s))
	}
	return f
}

// LayersChart draws the calls a second the bottom receives under each
// chain, on a log scale, against its capacity (a dashed line), with the
// outage shaded.
func LayersChart(l fleet.Layers, chains []fleet.Chain, results []fleet.LayersResult) []byte {
	span := l.Duration + l.Down
	if span < l.Duration {
		span = math.MaxInt64 // the longest Down: the sum saturates
	}
	secs, peak := int(span/time.Second)+1, max(l.Capacity, 1)
	loads := make([][]int, len(results))
	for i, r := range results {
		secs, loads[i] = max(secs, len(r.Load)), r.Load
		for _, n := range r.Load {
			peak = max(peak, n)
		}
	}
	c := newLoadChart(secs, time.Second, peak)
	c.start(fmt.Sprintf("%s requests a second through %d layers: calls a second at the bottom (log scale), a %s outage", number(l.Rate), len(chains[0].Layers), say.Duration(l.Down)), l.Down, "bottom down")
	if l.Capacity > 0 {
		y := c.y(l.Capacity)
		fmt.Fprintf(&c.b, `<line class="capacity" x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#d62728" stroke-width="1.5" stroke-dasharray="6 4"/><text x="%.0f" y="%.1f" fill="#a02020" text-anchor="end">capacity %d/s</text>`+"\n",
			chartLeft, y, chartLeft+c.plotW, y, chartLeft+c.plotW-4, y-6, l.Capacity)
	}
	for i, r := range results {
		c.line(i, r.Load, nil)
		label, note := chains[i].Name+fmt.Sprintf(" (%.2fx)", r.Amplification), ""
		if j := sameLoad(loads, i); j >= 0 {
			note = "its line is under " + chains[j].Name + "'s"
		} else if r.Metastable {
			note = "never back within capacity"
		}
		c.legend(i, key{label, []string{note}})
	}
	return c.end()
}
