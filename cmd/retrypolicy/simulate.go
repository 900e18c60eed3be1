package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/wire"
	"github.com/retrypolicy/retrypolicy/plan"
)

// named is a strategy and what the output calls it.
type named struct {
	name string
	s    retrypolicy.Strategy
}

// seedStrategies are the outage's strategies when none is given: the
// default, and the retries document's four examples.
var seedStrategies = []struct{ name, doc string }{
	{"default", `null`},
	{"bounded-hour", `{"strategy":"bounded","max_attempts":5,"backoff":{"kind":"exponential","base_delay_secs":1,"max_delay_secs":60}}`},
	{"bounded-day", `{"strategy":"bounded","max_attempts":5,"window_secs":86400,"backoff":{"kind":"exponential","base_delay_secs":1,"max_delay_secs":600}}`},
	{"jitter-5m", `{"strategy":"unless_stopped","backoff":{"kind":"exponential_with_jitter","base_delay_secs":2,"max_delay_secs":300}}`},
	{"none", `{"strategy":"none"}`},
}

// duration is a flag of a Go duration (30m) or of seconds (90).
type duration time.Duration

func (v *duration) String() string { return time.Duration(*v).String() }

func (v *duration) Set(text string) error {
	var s seconds
	if err := s.Set(text); err != nil {
		return err
	}
	if s < 0 {
		return fmt.Errorf("must not be negative")
	}
	*v = duration(s)
	return nil
}

func runSimulate(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("simulate", `simulate [--scenario outage|contention] [--jobs N | --clients N] [--outage D] [--tick D]
       [--runs R] [--seed S] [--json] [--svg FILE] [STRATEGY.json …]`,
		`Simulates a fleet under one or more strategies side by side, every retry decided by the library.

outage: --jobs jobs share a provider that is down for --outage from t = 0; a run that starts
while it is down fails --fail-after later, one that starts after succeeds (beyond --capacity
runs a second, it fails). Each retry starts when due, at the first --tick at or after it.
Prints, for each strategy, the runs, the peak of runs a minute, the jobs FATAL, and the time
from recovery until each job succeeds. Without a strategy: the default and the retries
document's four examples. --svg draws the load over time.

contention: the model of AWS's "Exponential Backoff And Jitter" (2015): --clients clients
read a version and write it conditionally, each message |N(10, 2)| ms one way; a stale write
fails and waits. Prints the writes the server took (calls) and when the last client's write
succeeded (completion_ms), means over --runs runs. Without a strategy: the blog's none,
exponential and full_jitter (5 ms × 2^n, at most 2 s), and this library's
exponential_with_jitter.`, stderr)
	var o simulateOptions
	o.define(fs)
	asJSON := fs.Bool("json", false, "print one JSON object a strategy, a line each (for the outage, with its runs and its jobs FATAL in each minute)")
	svgPath := fs.String("svg", "", "outage: also draw the load over time to the SVG file `FILE`")
	positional, stop := parseArgs(fs, args, stdout, stderr, 64)
	if stop >= 0 {
		return stop
	}
	if errs := o.check(1_000_000, 100_000, 100_000); errs != nil {
		return flagErrors(stderr, "simulate", errs)
	}
	if *svgPath != "" && o.scenario != "outage" {
		return flagErrors(stderr, "simulate", []option{{"svg", "only the outage scenario draws"}})
	}
	var strategies []named
	for _, path := range positional {
		s, err := readStrategyFile(path)
		if err != nil {
			if code := printProblems(stderr, err); code == exitInvalid {
				fmt.Fprintf(stderr, "(in %s)\n", path)
				return code
			}
			return exitIO
		}
		strategies = append(strategies, named{strings.TrimSuffix(filepath.Base(path), ".json"), s})
	}
	if o.scenario == "contention" {
		return simulateContention(o.contention(), contenders(strategies), *asJSON, stdout, stderr)
	}
	if len(strategies) == 0 {
		for _, d := range seedStrategies {
			s, _ := retrypolicy.Parse([]byte(d.doc)) // valid: TestSimulateDefaults
			strategies = append(strategies, named{d.name, s})
		}
	}
	return simulateOutage(o.outage(), strategies, *asJSON, *svgPath, stdout, stderr)
}

// simulateOptions are simulate's options: flags of the command, query
// parameters of the server's /v1/simulate.
type simulateOptions struct {
	scenario                      string
	jobs, clients, runs, capacity wholeNumber
	down, failAfter, spread, tick duration
	seed                          uint64
}

func (o *simulateOptions) define(fs *flag.FlagSet) {
	fs.StringVar(&o.scenario, "scenario", "outage", "`outage` or contention")
	o.jobs, o.clients, o.runs = 1000, 100, 100
	o.down, o.tick = duration(30*time.Minute), duration(time.Minute)
	fs.Var(&o.jobs, "jobs", "outage: how many jobs, `N` from 1 to 1000000")
	fs.Var(&o.clients, "clients", "contention: how many clients, `N` from 1 to 100000")
	fs.Var(&o.down, "outage", "outage: how long the provider is down, a `DURATION` (30m) up to 30 days")
	fs.Var(&o.failAfter, "fail-after", "outage: how long a run lasts before it fails while the provider is down, a `DURATION`")
	fs.Var(&o.spread, "spread", "outage: the jobs' first runs spread over this `DURATION` (0: all at t = 0)")
	fs.Var(&o.capacity, "capacity", "outage: the most runs a second the provider serves once up, `C` (0: no limit)")
	fs.Var(&o.tick, "tick", "outage: the controller's check, a `DURATION`; 0 retries exactly when due (the in-process loop)")
	fs.Var(&o.runs, "runs", "contention: how many runs to average, `R` from 1 to 100000")
	fs.Uint64Var(&o.seed, "seed", 0, "the seed the jitter, the spread and the latencies are drawn from, `S`")
}

// check returns the options out of range, with at most jobs jobs, clients
// clients and runs runs.
func (o *simulateOptions) check(jobs, clients, runs int) []option {
	var errs []option
	if o.scenario != "outage" && o.scenario != "contention" {
		errs = append(errs, option{"scenario", "must be outage or contention, got " + strconv.Quote(o.scenario)})
	}
	for _, c := range []struct {
		name        string
		value       wholeNumber
		least, most int
	}{{"jobs", o.jobs, 1, jobs}, {"clients", o.clients, 1, clients}, {"runs", o.runs, 1, runs}, {"capacity", o.capacity, 0, math.MaxInt32}} {
		if int(c.value) < c.least || int(c.value) > c.most {
			errs = append(errs, option{c.name, fmt.Sprintf("must be between %d and %d, got %d", c.least, c.most, c.value)})
		}
	}
	limits := []struct {
		name       string
		value, top duration
	}{{"outage", o.down, duration(30 * 24 * time.Hour)}, {"spread", o.spread, duration(30 * 24 * time.Hour)}, {"fail-after", o.failAfter, duration(24 * time.Hour)}, {"tick", o.tick, duration(24 * time.Hour)}}
	for _, l := range limits {
		if l.value > l.top {
			errs = append(errs, option{l.name, fmt.Sprintf("must be at most %s, got %s", brief(time.Duration(l.top)), brief(time.Duration(l.value)))})
		}
	}
	if o.down == 0 {
		errs = append(errs, option{"outage", "must be more than 0"})
	}
	return errs
}

func (o *simulateOptions) outage() plan.Outage {
	return plan.Outage{Jobs: int(o.jobs), Down: time.Duration(o.down), FailAfter: time.Duration(o.failAfter), Spread: time.Duration(o.spread),
		Capacity: int(o.capacity), Tick: time.Duration(o.tick), Seed: o.seed}
}

func (o *simulateOptions) contention() plan.Contention {
	return plan.Contention{Clients: int(o.clients), Runs: int(o.runs), Seed: o.seed}
}

// contenders are the contention's contenders: the published ones, or
// the strategies given.
func contenders(strategies []named) []plan.Contender {
	if len(strategies) == 0 {
		return plan.PublishedContenders()
	}
	var out []plan.Contender
	for _, n := range strategies {
		out = append(out, plan.Contender{Name: n.name, Strategy: n.s})
	}
	return out
}

// readStrategyFile reads one strategy descriptor from path.
func readStrategyFile(path string) (retrypolicy.Strategy, error) {
	in, err := os.Open(path)
	if err != nil {
		return retrypolicy.Strategy{}, err
	}
	defer in.Close()
	return parseStrategy(in)
}

func simulateOutage(o plan.Outage, strategies []named, asJSON bool, svgPath string, stdout, stderr io.Writer) int {
	results := make([]plan.OutageResult, len(strategies))
	for i, n := range strategies {
		r, err := o.Run(n.s)
		if err != nil {
			fmt.Fprintln(stderr, "retrypolicy: simulate:", strings.TrimPrefix(err.Error(), "plan: "))
			return exitInvalid
		}
		results[i] = r
	}
	if asJSON {
		for i, r := range results {
			fmt.Fprintf(stdout, "%s\n", outageJSON(strategies[i].name, r))
		}
	} else {
		fmt.Fprintf(stdout, "outage: %d jobs; the provider is down for %s from t = 0; runs fail after %s; first runs %s; %s\n\n",
			o.Jobs, brief(o.Down), brief(o.FailAfter), spreadText(o.Spread), tickText(o.Tick))
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "strategy\truns\tpeak/min\tFATAL\tunfinished\trecovery p50\tp99\tmax\t")
		for i, r := range results {
			rec := []string{"-", "-", "-"}
			if r.Succeeded > 0 {
				rec = []string{brief(r.Recovery.P50), brief(r.Recovery.P99), brief(r.Recovery.Max)}
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t\n", strategies[i].name, r.Runs, r.Peak, r.Fatal, r.Unfinished, strings.Join(rec, "\t"))
		}
		tw.Flush()
	}
	if svgPath != "" {
		if err := os.WriteFile(svgPath, loadChart(o, strategies, results), 0o644); err != nil {
			fmt.Fprintln(stderr, "retrypolicy:", err)
			return exitIO
		}
	}
	return exitOK
}

func spreadText(d time.Duration) string {
	if d == 0 {
		return "all at t = 0"
	}
	return "spread over " + brief(d)
}

func tickText(d time.Duration) string {
	if d == 0 {
		return "each retry exactly when due"
	}
	return "a controller checks every " + brief(d)
}

// outageJSON is one line of simulate --json for the outage.
func outageJSON(name string, r plan.OutageResult) []byte {
	b := []byte(`{"strategy":`)
	b = strconv.AppendQuote(b, name)
	canonical, _ := r.Strategy.MarshalJSON()
	b = append(b, `,"descriptor":`...)
	b = append(b, canonical...)
	b = fmt.Appendf(b, `,"runs":%d,"decisions":%d,"peak_runs_per_min":%d,"fatal":%d,"succeeded":%d,"unfinished":%d,"recovery_secs":`,
		r.Runs, r.Decisions, r.Peak, r.Fatal, r.Succeeded, r.Unfinished)
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

func simulateContention(c plan.Contention, contenders []plan.Contender, asJSON bool, stdout, stderr io.Writer) int {
	results := make([]plan.ContentionResult, len(contenders))
	for i, who := range contenders {
		r, err := c.Run(who)
		if err != nil {
			return printProblems(stderr, err)
		}
		results[i] = r
	}
	if asJSON {
		for _, r := range results {
			fmt.Fprintf(stdout, "%s\n", contentionJSON(r))
		}
		return exitOK
	}
	clients, runs := c.Clients, c.Runs
	fmt.Fprintf(stdout, "contention: %d clients, means over %d runs\n\n", clients, runs)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tcalls\tcompletion_ms\tgave up\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t\n", r.Name, r.Calls, r.CompletionMs, r.GaveUp)
	}
	tw.Flush()
	return exitOK
}

// contentionJSON is one line of simulate --json for the contention.
func contentionJSON(r plan.ContentionResult) []byte {
	b := []byte(`{"strategy":`)
	b = strconv.AppendQuote(b, r.Name)
	return fmt.Appendf(b, `,"calls":%s,"completion_ms":%s,"gave_up":%s}`, number(r.Calls), number(r.CompletionMs), number(r.GaveUp))
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

// loadChart draws the runs a minute of each strategy over time, on a log
// scale, with the outage shaded and each minute in which jobs went FATAL
// marked with a cross on its strategy's line.
func loadChart(o plan.Outage, strategies []named, results []plan.OutageResult) []byte {
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
		esc(fmt.Sprintf("%d jobs through a %s outage: runs a minute (log scale); %s", o.Jobs, brief(o.Down), tickText(o.Tick))))
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
		label := strategies[i].name
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
