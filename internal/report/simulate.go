package report

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/echo"
	"github.com/retrypolicy/retrypolicy/internal/wire"
	"github.com/retrypolicy/retrypolicy/plan"
)

// Named is a strategy and what the output calls it.
type Named struct {
	Name     string
	Strategy retrypolicy.Strategy
}

// Duration is a flag of a Go duration (30m) or of seconds (90).
type Duration time.Duration

// String returns the duration.
func (v *Duration) String() string { return time.Duration(*v).String() }

// Set reads seconds or a Go duration, not negative.
func (v *Duration) Set(text string) error {
	var s Seconds
	if err := s.Set(text); err != nil {
		return err
	}
	if s < 0 {
		return fmt.Errorf("must not be negative")
	}
	*v = Duration(s)
	return nil
}

// SimulateOptions are simulate's options: flags of the command, query
// parameters of the server's /v1/simulate.
type SimulateOptions struct {
	Scenario                      string
	Jobs, Clients, Runs, Capacity WholeNumber
	Down, FailAfter, Spread, Tick Duration
	Seed                          uint64
	// MaxRuns is the most runs an outage follows in all (--max-runs).
	MaxRuns WholeNumber
	// MaxMessages is the most messages a contention follows in all; it is
	// not a flag, and zero is plan's default.
	MaxMessages int
	fs          *flag.FlagSet // Define's, to tell the options set
}

// scenarioOptions names the scenario of each option that only one takes,
// and the other scenario's option that plays its part, if any.
var scenarioOptions = map[string]struct{ scenario, counterpart string }{
	"jobs": {"outage", "clients"}, "outage": {"outage", ""}, "fail-after": {"outage", ""}, "spread": {"outage", ""},
	"capacity": {"outage", ""}, "tick": {"outage", ""}, "max-runs": {"outage", ""},
	"clients": {"contention", "jobs"}, "runs": {"contention", ""},
}

// Limits are the most that simulate's options may ask for.
type Limits struct {
	Jobs, Clients, Runs, MaxRuns int
}

// CommandLimits are the command's: what one machine simulates in seconds
// to a minute.
var CommandLimits = Limits{Jobs: 1_000_000, Clients: 100_000, Runs: 100_000, MaxRuns: 100_000_000}

// Define defines the options as flags of fs, with their defaults.
func (o *SimulateOptions) Define(fs *flag.FlagSet) {
	o.fs = fs
	fs.StringVar(&o.Scenario, "scenario", "outage", "`outage` or contention")
	o.Jobs, o.Clients, o.Runs, o.MaxRuns = 1000, 100, 100, plan.DefaultMaxRuns
	o.Down, o.Tick = Duration(30*time.Minute), Duration(time.Minute)
	fs.Var(&o.Jobs, "jobs", "outage: how many jobs, `N` from 1 to 1000000")
	fs.Var(&o.Clients, "clients", "contention: how many clients, `N` from 1 to 100000")
	fs.Var(&o.Down, "outage", "outage: how long the provider is down, a `DURATION` (30m) up to 30 days")
	fs.Var(&o.FailAfter, "fail-after", "outage: how long a run lasts before it fails while the provider is down, a `DURATION`")
	fs.Var(&o.Spread, "spread", "outage: the jobs' first runs spread over this `DURATION` (0: all at t = 0)")
	fs.Var(&o.Capacity, "capacity", "outage: the most runs a second the provider serves once up, `C` (0: no limit)")
	fs.Var(&o.Tick, "tick", "outage: the controller's check, a `DURATION`; 0 retries exactly when due (the in-process loop)")
	fs.Var(&o.MaxRuns, "max-runs", "outage: the most runs followed in all, `N`; the simulation stops there and says it was truncated")
	fs.Var(&o.Runs, "runs", "contention: how many runs to average, `R` from 1 to 100000")
	fs.Uint64Var(&o.Seed, "seed", 0, "the seed the jitter, the spread and the latencies are drawn from, `S`")
}

// Check returns the options out of range, or beyond the limits.
func (o *SimulateOptions) Check(limits Limits) []Option {
	var errs []Option
	if o.Scenario != "outage" && o.Scenario != "contention" {
		errs = append(errs, Option{"scenario", "must be outage or contention, got " + echo.Quote(o.Scenario)})
	}
	for _, c := range []struct {
		name        string
		value       WholeNumber
		least, most int
	}{{"jobs", o.Jobs, 1, limits.Jobs}, {"clients", o.Clients, 1, limits.Clients}, {"runs", o.Runs, 1, limits.Runs},
		{"capacity", o.Capacity, 0, math.MaxInt32}, {"max-runs", o.MaxRuns, 1, limits.MaxRuns}} {
		if int(c.value) < c.least || int(c.value) > c.most {
			errs = append(errs, Option{c.name, fmt.Sprintf("must be between %d and %d, got %d", c.least, c.most, c.value)})
		}
	}
	limitsOf := []struct {
		name       string
		value, top Duration
	}{{"outage", o.Down, Duration(30 * 24 * time.Hour)}, {"spread", o.Spread, Duration(30 * 24 * time.Hour)}, {"fail-after", o.FailAfter, Duration(24 * time.Hour)}, {"tick", o.Tick, Duration(24 * time.Hour)}}
	for _, l := range limitsOf {
		if l.value > l.top {
			top, got := Brief(time.Duration(l.top)), Brief(time.Duration(l.value))
			if got == top { // rounded to the same text: say it exactly
				got = time.Duration(l.value).String()
			}
			errs = append(errs, Option{l.name, fmt.Sprintf("must be at most %s, got %s", top, got)})
		}
	}
	if o.Down == 0 {
		errs = append(errs, Option{"outage", "must be more than 0"})
	}
	return append(errs, o.otherScenario()...)
}

// otherScenario returns the options set that belong to the scenario not
// chosen, each naming the one that plays its part in the chosen one.
func (o *SimulateOptions) otherScenario() []Option {
	var errs []Option
	if o.fs == nil {
		return nil
	}
	o.fs.Visit(func(f *flag.Flag) {
		opt, ok := scenarioOptions[f.Name]
		if !ok || opt.scenario == o.Scenario || (o.Scenario != "outage" && o.Scenario != "contention") {
			return
		}
		rule := "only the " + opt.scenario + " scenario takes it"
		if opt.counterpart != "" {
			rule += "; in the " + o.Scenario + " scenario, " + opt.counterpart + " plays its part"
		}
		errs = append(errs, Option{f.Name, rule})
	})
	return errs
}

// Outage is the outage the options describe.
func (o *SimulateOptions) Outage() plan.Outage {
	return plan.Outage{Jobs: int(o.Jobs), Down: time.Duration(o.Down), FailAfter: time.Duration(o.FailAfter), Spread: time.Duration(o.Spread),
		Capacity: int(o.Capacity), Tick: time.Duration(o.Tick), Seed: o.Seed, MaxRuns: int(o.MaxRuns)}
}

// Contention is the contention the options describe.
func (o *SimulateOptions) Contention() plan.Contention {
	return plan.Contention{Clients: int(o.Clients), Runs: int(o.Runs), Seed: o.Seed, MaxMessages: o.MaxMessages}
}

// SpreadText says how the first runs are spread.
func SpreadText(d time.Duration) string {
	if d == 0 {
		return "all at t = 0"
	}
	return "spread over " + Brief(d)
}

// TickText says when retries start.
func TickText(d time.Duration) string {
	if d == 0 {
		return "each retry exactly when due"
	}
	return "a controller checks every " + Brief(d)
}

// OutageJSON is one line of simulate --json for the outage.
func OutageJSON(name string, r plan.OutageResult) []byte {
	b := []byte(`{"strategy":`)
	b = strconv.AppendQuote(b, name)
	canonical, _ := r.Strategy.MarshalJSON()
	b = append(b, `,"descriptor":`...)
	b = append(b, canonical...)
	b = fmt.Appendf(b, `,"runs":%d,"decisions":%d,"peak_runs_per_min":%d,"fatal":%d,"succeeded":%d,"unfinished":%d,"truncated":%t,"recovery_secs":`,
		r.Runs, r.Decisions, r.Peak, r.Fatal, r.Succeeded, r.Unfinished, r.Truncated)
	if r.Succeeded == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"p50":`...)
		b = wire.AppendSeconds(b, r.Recovery.P50)
		b = append(b, `,"p99":`...)
		b = wire.AppendSeconds(b, r.Recovery.P99)
		b = append(b, `,"max":`...)
		b = wire.AppendSeconds(b, r.Recovery.Max)
		b = append(b, '}')
	}
	b = appendInts(append(b, `,"runs_per_min":`...), r.Load)
	b = appendInts(append(b, `,"fatal_per_min":`...), r.FatalAt)
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
func ContentionJSON(r plan.ContentionResult) []byte {
	b := []byte(`{"strategy":`)
	b = strconv.AppendQuote(b, r.Name)
	return fmt.Appendf(b, `,"calls":%s,"completion_ms":%s,"gave_up":%s,"runs":%d,"truncated":%t}`,
		number(r.Calls), number(r.CompletionMs), number(r.GaveUp), r.Runs, r.Truncated)
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

var chartColors = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"}

// LoadChart draws the runs a minute of each strategy over time, on a log
// scale, with the outage shaded and each minute in which jobs went FATAL
// marked with a cross on its strategy's line.
func LoadChart(o plan.Outage, strategies []Named, results []plan.OutageResult) []byte {
	minutes, peak := int(o.Down/time.Minute)+1, 1
	for _, r := range results {
		minutes, peak = max(minutes, len(r.Load)), max(peak, r.Peak)
	}
	plotW, plotH := chartWidth-chartLeft-chartRight, chartHeight-chartTop-chartBottom
	decades := math.Ceil(math.Log10(float64(peak)))
	x := func(minute float64) float64 { return chartLeft + plotW*minute/float64(minutes) }
	y := func(n int) float64 {
		if n <= 0 {
			return chartTop + plotH
		}
		return chartTop + plotH - plotH*(math.Log10(float64(n))+1)/(decades+1.25) // 0.1 at the axis: 1 stands above it
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n",
		chartWidth, chartHeight, chartWidth, chartHeight)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	fmt.Fprintf(&b, `<text x="10" y="22" font-size="15" font-weight="bold">%s</text>`+"\n",
		esc(fmt.Sprintf("%d jobs through a %s outage: runs a minute (log scale); %s", o.Jobs, Brief(o.Down), TickText(o.Tick))))
	fmt.Fprintf(&b, `<rect class="outage" x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="#d62728" fill-opacity=".12"/>`+"\n",
		x(0), chartTop, x(o.Down.Minutes())-x(0), plotH)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" fill="#a02020">provider down</text>`+"\n", x(0)+6, chartTop+plotH-8)
	for d := 0.0; d <= decades; d++ {
		n := int(math.Pow(10, d))
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#ddd"/><text x="%.0f" y="%.1f" text-anchor="end">%d</text>`+"\n",
			chartLeft, y(n), chartLeft+plotW, y(n), chartLeft-6, y(n)+4, n)
	}
	step := 1
	for _, m := range []int{1, 2, 5, 10, 15, 30, 60, 120, 240, 360, 720, 1440, 2880, 7200, 14400, 43200} {
		if step = m; minutes/m <= 10 {
			break
		}
	}
	for m := 0; m <= minutes; m += step {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`+"\n", x(float64(m)), chartTop+plotH+18, esc(tickLabel(time.Duration(m)*time.Minute)))
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">time since the outage began</text>`+"\n", chartLeft+plotW/2, chartHeight-10)
	for i, r := range results {
		color := chartColors[i%len(chartColors)]
		var points []string
		for m := range minutes {
			n := 0
			if m < len(r.Load) {
				n = r.Load[m]
			}
			points = append(points, fmt.Sprintf("%.1f,%.1f", x(float64(m)+0.5), y(n)))
		}
		fmt.Fprintf(&b, `<polyline class="load" fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", color, strings.Join(points, " "))
		for m, n := range r.FatalAt {
			if n > 0 {
				cx, cy := x(float64(m)+0.5), y(r.Load[m])
				fmt.Fprintf(&b, `<path class="fatal" stroke="%s" stroke-width="3" d="M%.1f %.1fl8 8m0-8l-8 8"><title>%d FATAL</title></path>`+"\n", color, cx-4, cy-4, n)
			}
		}
		label := strategies[i].Name
		if r.Fatal > 0 {
			label += fmt.Sprintf(" (%d FATAL)", r.Fatal)
		}
		ly := chartTop + 20*float64(i) + 10
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="%s" stroke-width="3"/><text x="%.0f" y="%.0f">%s</text>`+"\n",
			chartWidth-chartRight+14, ly, chartWidth-chartRight+34, ly, color, chartWidth-chartRight+40, ly+4, esc(label))
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}
