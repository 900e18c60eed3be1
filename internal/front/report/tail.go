package report

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/retrypolicy/retrypolicy/fleet"
	"github.com/retrypolicy/retrypolicy/internal/say"
	"github.com/retrypolicy/retrypolicy/internal/wire"
)

// Ms writes d in milliseconds, to two decimals at most.
func Ms(d time.Duration) string {
	return strconv.FormatFloat(math.Round(float64(d)/1e4)/100, 'f', -1, 64)
}

// TailJSON is one line of simulate --json for the tail scenario: the
// policy's latency quantiles, the load it sent, and the settings it ran
// with.
func TailJSON(c fleet.Tail, r fleet.TailResult) []byte {
	b := []byte(`{"policy":`)
	b = wire.AppendString(b, r.Policy.String())
	b = fmt.Appendf(b, `,"p50_ms":%s,"p99_ms":%s,"p999_ms":%s,"extra_load":%s,"work_per_call_ms":%s`,
		Ms(r.P50), Ms(r.P99), Ms(r.P999), strconv.FormatFloat(r.ExtraLoad, 'f', -1, 64), Ms(r.WorkPerCall))
	b = fmt.Appendf(b, `,"calls":%d,"answered":%d,"attempts":%d,"hedges":%d,"refused":%d,"delay_ms":%s`,
		r.Calls, r.Answered, r.Attempts, r.Hedges, r.Refused, Ms(r.Delay))
	b = appendTruncated(b, r.Truncated, r.TruncatedBy)
	secs := func(d time.Duration) string { return string(wire.AppendSeconds(nil, d)) }
	b = fmt.Appendf(b, `,"settings":{"workers":%d,"median_secs":%s,"sigma":%s,"slow_share":%s,"slow_extra_secs":%s,"slow_together":%t,`+
		`"rate":%s,"clients":%d,"duration_secs":%s,"attempts":%d,"delay_secs":%s,"quantile":%s,"min_delay_secs":%s,"seed":%d}}`,
		c.Workers, secs(c.Median), Hundredths(c.Sigma), strconv.FormatFloat(c.SlowShare, 'f', -1, 64), secs(c.SlowExtra), c.SlowTogether,
		number(c.Rate), c.Clients, secs(c.Duration), c.Attempts, secs(c.Delay), Hundredths(c.Quantile), secs(c.MinDelay), c.Seed)
	return b
}

// TailSettings says in a line what c's server and hedges are.
func TailSettings(c fleet.Tail) string {
	together := "each attempt drawn apart"
	if c.SlowTogether {
		together = "every attempt of a slow call slow"
	}
	return fmt.Sprintf("tail: %s calls a second over %d clients for %s to %d workers; service lognormal about %s (sigma %s), %s%% of attempts %s slower (%s); hedged calls send at most %d attempts, at a fixed delay of %sms, or at the %s quantile of a client's recent answers from %s",
		number(c.Rate), c.Clients, say.Duration(c.Duration), c.Workers, say.Duration(c.Median), Hundredths(c.Sigma),
		strconv.FormatFloat(c.SlowShare*100, 'f', -1, 64), say.Duration(c.SlowExtra), together, c.Attempts, Ms(c.Delay), Hundredths(c.Quantile), say.Duration(c.MinDelay))
}

// TailChart draws each policy's p50, p99 and p99.9 as bars on a log scale
// of milliseconds, with its extra load beside them.
func TailChart(c fleet.Tail, results []fleet.TailResult) []byte {
	const left, right, top, row, bar = 150.0, 170.0, 60.0, 66.0, 16.0
	height := top + row*float64(len(results)) + 40
	top10 := 1.0
	for _, r := range results {
		for top10 < float64(r.P999)/1e6 {
			top10 *= 10
		}
	}
	decades := math.Log10(top10) + 1 // from 0.1 ms
	x := func(d time.Duration) float64 {
		ms := max(float64(d)/1e6, 0.1)
		return left + (chartWidth-left-right)*(math.Log10(ms)+1)/decades
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", chartWidth, height, chartWidth, height)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	fmt.Fprintf(&b, `<text x="10" y="22" font-size="15" font-weight="bold">%s</text>`+"\n",
		esc(fmt.Sprintf("%s calls a second, %s%% of attempts %s slower: latency from arrival to answer (ms, log scale)", number(c.Rate), strconv.FormatFloat(c.SlowShare*100, 'f', -1, 64), say.Duration(c.SlowExtra))))
	for ms := 0.1; ms <= top10*1.01; ms *= 10 {
		px := x(time.Duration(ms * 1e6))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#ddd"/><text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`+"\n",
			px, top-10, px, height-30, px, height-14, strconv.FormatFloat(ms, 'f', -1, 64))
	}
	for i, r := range results {
		y := top + row*float64(i)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end" font-weight="bold">%s</text>`+"\n", left-10, y+bar+4, esc(r.Policy.String()))
		for j, q := range []struct {
			name string
			d    time.Duration
		}{{"p50", r.P50}, {"p99", r.P99}, {"p99.9", r.P999}} {
			by := y + float64(j)*bar
			fmt.Fprintf(&b, `<rect class="quantile" x="%.0f" y="%.0f" width="%.1f" height="%.0f" fill="%s" fill-opacity="%.2f"><title>%s %s ms</title></rect>`+"\n",
				left, by, max(x(q.d)-left, 1), bar-3, chartColors[i%len(chartColors)], 1-0.3*float64(j), q.name, Ms(q.d))
			fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" font-size="11">%s %s ms</text>`+"\n", x(q.d)+4, by+bar-5, q.name, Ms(q.d))
		}
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%s</text>`+"\n", chartWidth-right+40, y+bar+4, esc(fmt.Sprintf("extra load %.1f%%", r.ExtraLoad*100)))
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">ms</text>`+"\n", left+(chartWidth-left-right)/2, height-2)
	b.WriteString("</svg>\n")
	return b.Bytes()
}
