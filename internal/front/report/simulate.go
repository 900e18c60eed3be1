package report

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/fleet"
	"github.com/retrypolicy/retrypolicy/internal/echo"
	"github.com/retrypolicy/retrypolicy/internal/say"
	"github.com/retrypolicy/retrypolicy/internal/wire"
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
	Down, FailAfter, Spread       Duration
	Seed                          uint64
	TickOption
	// Rate and Span are the layers' arrivals: requests a second, and for
	// how long (--rate, --duration).
	Rate WholeNumber
	Span Duration
	// MaxRuns is the most runs an outage follows in all (--max-runs).
	MaxRuns WholeNumber
	// MaxMessages is the most messages a contention follows in all; it is
	// not a flag, and zero is plan's default.
	MaxMessages int
	// DownAt is the layers' healthy stretch before the outage
	// (--outage-at).
	DownAt Duration
	// A budget for each layer: a token one (--budget-ratio,
	// --budget-burst), a windowed one after the Gateway API's fields
	// (--budget-percent, --budget-interval, --budget-min-retries a
	// --budget-min-interval), or both side by side.
	BudgetRatio, BudgetPercent        float64
	BudgetBurst, BudgetMinRetries     WholeNumber
	BudgetInterval, BudgetMinInterval Duration
	fs                                *flag.FlagSet // Define's, to tell the options set
}

// scenarioOptions names the scenarios that take each option that not all
// do, and the option that plays its part in the others, if any.
var scenarioOptions = map[string]struct {
	scenarios   []string
	counterpart map[string]string
}{
	"jobs":         {[]string{"outage"}, map[string]string{"contention": "clients", "layers": "rate"}},
	"clients":      {[]string{"contention"}, map[string]string{"outage": "jobs", "layers": "rate"}},
	"rate":         {[]string{"layers"}, map[string]string{"outage": "jobs", "contention": "clients"}},
	"outage":       {[]string{"outage", "layers"}, nil},
	"capacity":     {[]string{"outage", "layers"}, nil},
	"fail-after":   {[]string{"outage"}, nil},
	"spread":       {[]string{"outage"}, nil},
	"tick":         {[]string{"outage"}, nil},
	"max-runs":     {[]string{"outage", "layers"}, nil},
	"runs":         {[]string{"contention"}, nil},
	"duration":     {[]string{"layers"}, nil},
	"outage-at":    {[]string{"layers"}, nil},
	"budget-ratio": {[]string{"layers"}, nil}, "budget-burst": {[]string{"layers"}, nil},
	"budget-percent": {[]string{"layers"}, nil}, "budget-interval": {[]string{"layers"}, nil},
	"budget-min-retries": {[]string{"layers"}, nil}, "budget-min-interval": {[]string{"layers"}, nil},
}

// seedStrategies are the default strategy and Amp's four example
// strategies, as descriptors.
var seedStrategies = []struct{ name, doc string }{
	{"default", `null`},
	{"bounded-hour", `{"strategy":"bounded","max_attempts":5,"backoff":{"kind":"exponential","base_delay_secs":1,"max_delay_secs":60}}`},
	{"bounded-day", `{"strategy":"bounded","max_attempts":5,"window_secs":86400,"backoff":{"kind":"exponential","base_delay_secs":1,"max_delay_secs":600}}`},
	{"jitter-5m", `{"strategy":"unless_stopped","backoff":{"kind":"exponential_with_jitter","base_delay_secs":2,"max_delay_secs":300}}`},
	{"none", `{"strategy":"none"}`},
}

// DocumentedStrategies returns the strategies simulate compares when given
// none, and the server's page offers to compare with: the default strategy
// and Amp's four example strategies, by name.
func DocumentedStrategies() []Named {
	out := make([]Named, len(seedStrategies))
	for i, d := range seedStrategies {
		s, err := retrypolicy.Parse([]byte(d.doc))
		if err != nil {
			panic("report: a seed strategy does not parse: " + err.Error()) // TestSimulateDefaults
		}
		out[i] = Named{Name: d.name, Strategy: s}
	}
	return out
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
	fs.StringVar(&o.Scenario, "scenario", "outage", "`outage`, contention or layers")
	o.Jobs, o.Clients, o.Runs, o.MaxRuns = 1000, 100, 100, fleet.DefaultMaxRuns
	o.Down = Duration(30 * time.Minute)
	fs.Var(&o.Jobs, "jobs", "outage: how many jobs, `N` from 1 to 1000000")
	fs.Var(&o.Clients, "clients", "contention: how many clients, `N` from 1 to 100000")
	fs.Var(&o.Down, "outage", "outage: how long the provider is down, a `DURATION` (30m) up to 30 days")
	fs.Var(&o.FailAfter, "fail-after", "outage: how long a run lasts before it fails while the provider is down, a `DURATION`")
	fs.Var(&o.Spread, "spread", "outage: the jobs' first runs spread over this `DURATION` (0: all at t = 0)")
	fs.Var(&o.Capacity, "capacity", "outage: the most runs a second the provider serves once up, `C` (0: no limit)")
	o.TickOption.Define(fs, "outage: ")
	fs.Var(&o.MaxRuns, "max-runs", "outage and layers: the most runs (layers: calls) followed in all, `N`; the simulation stops there and says it was truncated")
	fs.Var(&o.Runs, "runs", "contention: how many runs to average, `R` from 1 to 100000")
	o.Rate, o.Span = 100, Duration(5*time.Minute)
	fs.Var(&o.Rate, "rate", "layers: how many requests a second arrive at the top, `R` from 1 to 100000")
	fs.Var(&o.Span, "duration", "layers: how long requests arrive, a `DURATION` up to 24h (the outage and capacity: 30s and 150 unless given)")
	fs.Var(&o.DownAt, "outage-at", "layers: how long the bottom serves before its outage, a `DURATION` up to 24h (0: down from t = 0)")
	o.BudgetRatio, o.BudgetBurst = 0.1, 10
	o.BudgetPercent, o.BudgetInterval, o.BudgetMinRetries, o.BudgetMinInterval = 20, Duration(10*time.Second), 10, Duration(time.Second)
	fs.Float64Var(&o.BudgetRatio, "budget-ratio", o.BudgetRatio, "layers: a token budget for each layer, `R` retries a call (0 to 1000), with --budget-burst")
	fs.Var(&o.BudgetBurst, "budget-burst", "layers: a token budget for each layer, at most `N` tokens held (1 to 1e9)")
	fs.Float64Var(&o.BudgetPercent, "budget-percent", o.BudgetPercent, "layers: a windowed budget for each layer, `P` percent of the calls in its interval as retries (0 to 100)")
	fs.Var(&o.BudgetInterval, "budget-interval", "layers: the windowed budget's interval, a `DURATION` from 1ms to 1h")
	fs.Var(&o.BudgetMinRetries, "budget-min-retries", "layers: the windowed budget's minimum, `N` retries every --budget-min-interval")
	fs.Var(&o.BudgetMinInterval, "budget-min-interval", "layers: the interval of --budget-min-retries, a `DURATION` from 1ms")
	fs.Uint64Var(&o.Seed, "seed", 0, "the seed the jitter, the spread and the latencies are drawn from, `S`")
}

// budgets returns which kinds of budget the options set: a token one when
// --budget-ratio or --budget-burst is given, a windowed one when any of
// the windowed ones is.
func (o *SimulateOptions) budgets() (token, window bool) {
	if o.fs == nil {
		return false, false
	}
	o.fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "budget-ratio", "budget-burst":
			token = true
		case "budget-percent", "budget-interval", "budget-min-retries", "budget-min-interval":
			window = true
		}
	})
	return token, window
}

// WindowMinRetries is --budget-min-retries a --budget-min-interval
// converted to retries a --budget-interval, rounded down.
func (o *SimulateOptions) WindowMinRetries() int {
	if o.BudgetMinInterval <= 0 {
		return 0
	}
	n := float64(o.BudgetMinRetries) * float64(o.BudgetInterval) / float64(o.BudgetMinInterval)
	return int(min(n, 2e9))
}

// Budgeted returns chains with the budgets the options give each layer:
// chains as they are when none is given; each chain with a token budget
// and, beside it, with a windowed one, for those given.
func (o *SimulateOptions) Budgeted(chains []fleet.Chain) []fleet.Chain {
	token, window := o.budgets()
	if !token && !window {
		return chains
	}
	var out []fleet.Chain
	for _, c := range chains {
		if token {
			layers := slices.Clone(c.Layers)
			for i := range layers {
				layers[i].BudgetRatio, layers[i].BudgetBurst = o.BudgetRatio, int(o.BudgetBurst)
			}
			out = append(out, fleet.Chain{Name: c.Name + ", token budget", Layers: layers})
		}
		if window {
			layers := slices.Clone(c.Layers)
			for i := range layers {
				layers[i].BudgetPercent, layers[i].BudgetInterval, layers[i].BudgetMinRetries = o.BudgetPercent, time.Duration(o.BudgetInterval), o.WindowMinRetries()
			}
			out = append(out, fleet.Chain{Name: c.Name + ", windowed budget", Layers: layers})
		}
	}
	return out
}

// checkBudgets returns the budget options out of range.
func (o *SimulateOptions) checkBudgets() []Option {
	var errs []Option
	if !(o.BudgetRatio >= 0 && o.BudgetRatio <= 1000) {
		errs = append(errs, Option{"budget-ratio", "must be between 0 and 1000, got " + strconv.FormatFloat(o.BudgetRatio, 'g', -1, 64)})
	}
	if o.BudgetBurst < 1 || o.BudgetBurst > 1e9 {
		errs = append(errs, Option{"budget-burst", fmt.Sprintf("must be between 1 and 1000000000, got %d", o.BudgetBurst)})
	}
	if !(o.BudgetPercent >= 0 && o.BudgetPercent <= 100) {
		errs = append(errs, Option{"budget-percent", "must be between 0 and 100, got " + strconv.FormatFloat(o.BudgetPercent, 'g', -1, 64)})
	}
	if o.BudgetInterval < Duration(time.Millisecond) || o.BudgetInterval > Duration(time.Hour) {
		errs = append(errs, Option{"budget-interval", "must be between 1ms and 1h, got " + time.Duration(o.BudgetInterval).String()})
	}
	if o.BudgetMinRetries < 0 || o.BudgetMinRetries > 1e9 {
		errs = append(errs, Option{"budget-min-retries", fmt.Sprintf("must be between 0 and 1000000000, got %d", o.BudgetMinRetries)})
	}
	if o.BudgetMinInterval < Duration(time.Millisecond) {
		errs = append(errs, Option{"budget-min-interval", "must be at least 1ms, got " + time.Duration(o.BudgetMinInterval).String()})
	} else if o.WindowMinRetries() > 1e9 {
		errs = append(errs, Option{"budget-min-retries", fmt.Sprintf("must come to at most 1000000000 retries a --budget-interval, got %d", o.WindowMinRetries())})
	}
	return errs
}

// Check returns the options out of range, or beyond the limits.
func (o *SimulateOptions) Check(limits Limits) []Option {
	errs := o.TickOption.Check()
	if o.Scenario != "outage" && o.Scenario != "contention" && o.Scenario != "layers" {
		errs = append(errs, Option{"scenario", "must be outage, contention or layers, got " + echo.Quote(o.Scenario)})
	}
	for _, c := range []struct {
		name        string
		value       WholeNumber
		least, most int
	}{{"jobs", o.Jobs, 1, limits.Jobs}, {"clients", o.Clients, 1, limits.Clients}, {"runs", o.Runs, 1, limits.Runs},
		{"capacity", o.Capacity, 0, math.MaxInt32}, {"max-runs", o.MaxRuns, 1, limits.MaxRuns}, {"rate", o.Rate, 1, 100_000}} {
		if int(c.value) < c.least || int(c.value) > c.most {
			errs = append(errs, Option{c.name, fmt.Sprintf("must be between %d and %d, got %d", c.least, c.most, c.value)})
		}
	}
	limitsOf := []struct {
		name       string
		value, top Duration
	}{{"outage", o.Down, Duration(30 * 24 * time.Hour)}, {"spread", o.Spread, Duration(30 * 24 * time.Hour)}, {"fail-after", o.FailAfter, Duration(24 * time.Hour)}, {"duration", o.Span, Duration(24 * time.Hour)}}
	for _, l := range limitsOf {
		if l.value > l.top {
			top, got := say.GoDuration(time.Duration(l.top)), say.GoDuration(time.Duration(l.value))
			if got == top { // rounded to the same text: say it exactly
				got = time.Duration(l.value).String()
			}
			errs = append(errs, Option{l.name, fmt.Sprintf("must be at most %s, got %s", top, got)})
		}
	}
	if o.Down == 0 {
		errs = append(errs, Option{"outage", "must be more than 0"})
	}
	if o.DownAt > Duration(24*time.Hour) {
		errs = append(errs, Option{"outage-at", "must be at most 24h, got " + time.Duration(o.DownAt).String()})
	}
	errs = append(errs, o.checkBudgets()...)
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
		if !ok || slices.Contains(opt.scenarios, o.Scenario) || (o.Scenario != "outage" && o.Scenario != "contention" && o.Scenario != "layers") {
			return
		}
		rule := "only the " + strings.Join(opt.scenarios, " and ") + " scenario"
		if len(opt.scenarios) > 1 {
			rule += "s take it"
		} else {
			rule += " takes it"
		}
		if c := opt.counterpart[o.Scenario]; c != "" {
			rule += "; in the " + o.Scenario + " scenario, " + c + " plays its part"
		}
		errs = append(errs, Option{f.Name, rule})
	})
	return errs
}

// Outage is the outage the options describe.
func (o *SimulateOptions) Outage() fleet.Outage {
	return fleet.Outage{Jobs: int(o.Jobs), Down: time.Duration(o.Down), FailAfter: time.Duration(o.FailAfter), Spread: time.Duration(o.Spread),
		Capacity: int(o.Capacity), Tick: time.Duration(o.Tick), Seed: o.Seed, MaxRuns: int(o.MaxRuns)}
}

// Layers is the call chain through an outage the options describe, its
// chain to be set: the outage and capacity are 30 s and 150 a second
// unless given, the outage scenario's defaults suiting a fleet's.
func (o *SimulateOptions) Layers() fleet.Layers {
	l := fleet.Layers{Rate: float64(o.Rate), Duration: time.Duration(o.Span), Down: 30 * time.Second, DownAt: time.Duration(o.DownAt),
		Capacity: 150, Seed: o.Seed, MaxCalls: int(o.MaxRuns)}
	if o.fs != nil {
		o.fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "outage":
				l.Down = time.Duration(o.Down)
			case "capacity":
				l.Capacity = int(o.Capacity)
			}
		})
	}
	return l
}

// Contention is the contention the options describe.
func (o *SimulateOptions) Contention() fleet.Contention {
	return fleet.Contention{Clients: int(o.Clients), Runs: int(o.Runs), Seed: o.Seed, MaxMessages: o.MaxMessages}
}

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

var chartColors = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"}

// chartDashes tell the lines apart where they run together: a line drawn
// over another leaves gaps that show the one under it.
var chartDashes = []string{"", "9 5", "3 4", "12 4 3 4", "6 3", "2 6", "15 5", "4 2 1 2"}

// LoadChart draws the runs a minute of each strategy over time, on a log
// scale with a row for minutes of no run, with the outage shaded and each
// minute in which jobs went FATAL marked with a cross on its strategy's
// line. Each line has its own color and dash; a strategy whose line is
// another's, minute for minute, says so in the legend.
func LoadChart(o fleet.Outage, strategies []Named, results []fleet.OutageResult) []byte {
	minutes, peak := int(o.Down/time.Minute)+1, 1
	loads := make([][]int, len(results))
	for i, r := range results {
		minutes, peak, loads[i] = max(minutes, len(r.Load)), max(peak, r.Peak), r.Load
	}
	c := newLoadChart(minutes, time.Minute, peak)
	var b bytes.Buffer
	c.start(&b, fmt.Sprintf("%d jobs through a %s outage: runs a minute (log scale); %s", o.Jobs, say.Duration(o.Down), TickText(o.Tick)), o.Down, "provider down")
	for i, r := range results {
		c.line(&b, i, r.Load, r.FatalAt)
		label, note := strategies[i].Name, ""
		if r.Fatal > 0 {
			label += fmt.Sprintf(" (%d FATAL)", r.Fatal)
		}
		if j := sameLoad(loads, i); j >= 0 {
			note = "its line is under " + strategies[j].Name + "'s"
		}
		c.legend(&b, i, label, note)
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
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
	decades      float64
	xLabel       string // what the time axis counts from
}

func newLoadChart(units int, unit time.Duration, peak int) *loadChart {
	units = min(max(units, 1), int(math.MaxInt64/int64(unit))) // their span fits a Duration: the axis's ticks stay few
	return &loadChart{units: units, unit: unit, per: (units + MaxChartPoints - 1) / MaxChartPoints,
		plotW: chartWidth - chartLeft - chartRight, plotH: chartHeight - chartTop - chartBottom,
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
func (c *loadChart) start(b *bytes.Buffer, title string, down time.Duration, downLabel string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n",
		chartWidth, chartHeight, chartWidth, chartHeight)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	fmt.Fprintf(b, `<text x="10" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", esc(title))
	if downLabel != "" {
		c.shade(b, 0, float64(down)/float64(c.unit), downLabel)
	}
	if c.per > 1 {
		fmt.Fprintf(b, `<text class="bucket" x="%.0f" y="%.0f" text-anchor="end" font-size="11" fill="#555">each point: the busiest %s of %s</text>`+"\n",
			chartLeft+c.plotW, chartTop-6, say.Duration(c.unit), say.Duration(time.Duration(c.per)*c.unit))
	}
	c.axes(b)
}

// shade shades the units from from to to, where the dependency is down,
// with label at its start.
func (c *loadChart) shade(b *bytes.Buffer, from, to float64, label string) {
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
func (c *loadChart) axes(b *bytes.Buffer) {
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
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`+"\n", chartLeft+c.plotW/2, chartHeight-10, esc(c.xLabel))
}

// line draws the i-th series: its count in each unit, and the units in
// which jobs went FATAL, if any.
func (c *loadChart) line(b *bytes.Buffer, i int, load, fatalAt []int) {
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

// legend writes the i-th strategy's key, with a note under it if any.
func (c *loadChart) legend(b *bytes.Buffer, i int, label, note string) {
	color, dash := chartColors[i%len(chartColors)], chartDashes[i%len(chartDashes)]
	ly := chartTop + 32*float64(i) + 10
	fmt.Fprintf(b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="%s" stroke-width="3"%s/><text x="%.0f" y="%.0f">%s</text>`+"\n",
		chartWidth-chartRight+10, ly, chartWidth-chartRight+34, ly, color, dashAttr(dash), chartWidth-chartRight+40, ly+4, esc(label))
	if note != "" {
		fmt.Fprintf(b, `<text x="%.0f" y="%.0f" font-size="11" fill="#555">%s</text>`+"\n", chartWidth-chartRight+40, ly+18, esc(note))
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
