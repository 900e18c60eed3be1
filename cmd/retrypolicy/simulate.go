package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/attemptlog"
	"github.com/retrypolicy/retrypolicy/fleet"
	"github.com/retrypolicy/retrypolicy/internal/front/report"
	"github.com/retrypolicy/retrypolicy/internal/front/whatif"
	"github.com/retrypolicy/retrypolicy/internal/say"
)

// simulateUsage and simulateHelp are simulate's usage line and its help.
const (
	simulateUsage = `simulate [--scenario outage|contention|layers|collapse|tail] [--jobs N | --clients N | --rate R] [--outage D]
       [--tick D] [--max-runs N] [--runs R] [--seed S] [--json] [--svg FILE] [STRATEGY.json|- …]`
	simulateHelp = `Simulates a fleet under one or more strategies side by side (files of descriptors, - for
standard input), every retry decided by the library. Each option belongs to one scenario.

outage: --jobs jobs share a provider that is down for --outage from t = 0; a run that starts
while it is down fails --fail-after later, one that starts after succeeds (beyond --capacity
runs a second, it fails). Each retry starts when due, at the first --tick at or after it
that comes after its failure. A simulation follows at most --max-runs runs, and stops when a
job has 100,000 failures in its window; one cut short says so (truncated).
Prints, for each strategy, the runs, the peak of runs a minute, the jobs FATAL, and the time
from recovery until each job succeeds. Without a strategy: the default and the retries
document's four examples. --svg draws the load over time.

contention: the model of AWS's "Exponential Backoff And Jitter" (2015): --clients clients
read a version and write it conditionally, each message |N(10, 2)| ms one way; a stale write
fails and waits. Prints the writes the server took (calls) and when the last client's write
succeeded (completion_ms), means over --runs runs. Without a strategy: the blog's none,
exponential and full_jitter (5 ms × 2^n, at most 2 s), and this library's
exponential_with_jitter.

layers: --rate requests a second (100) for --duration (5m) go down a chain of four layers (a
client, a gateway, a service, a database driver) to a bottom that is down for --outage (30s)
and then serves at most --capacity calls a second (150); every layer is a retry loop of its own. Prints, for each
chain, the requests, the calls the bottom saw and their amplification, the peak load over
capacity, the p99 latency and the recovery. Without a strategy: the four ways
of the general retry rules (every layer retrying, the client alone, a budget, a
breaker); with strategies, one a layer, top first. --budget-ratio and --budget-burst give
every layer a token budget, --budget-percent, --budget-interval, --budget-min-retries and
--budget-min-interval a windowed one (side by side when both are given, on the chain given or
every layer retrying); --outage-at gives the bottom a healthy stretch first. Prints too the
retries a second around the outage. A run follows at most --max-runs calls. --svg draws the
bottom's load.

collapse: a server of --workers workers (10), each serving a call in --service (100ms, fixed
or --exponential-service), with a FIFO queue of at most --queue calls (500; a call beyond is
refused at once). --rate calls a second (80: 0.8 of its capacity) arrive, Poisson, over
--clients clients (10), each call a retry loop whose attempts time out after --timeout (1s,
shorter than a full queue's wait); an attempt abandoned stays queued and is served anyway,
unless --check-deadlines. One trigger, from --trigger-at (1m) for --trigger-for (10s):
--spike times the load (3), --drop of the workers lost, or --fail-share of the attempts
served failing whatever the load; over --duration (5m). The same arrivals run under ten
policies: none (one attempt), strategy (the strategy given, else bounded 4 attempts with
exponential jitter from 1s, no budget), token (a token budget a client, --budget-ratio and
--budget-burst, by default the library's default budget), windowed (a windowed budget a
client, the windowed budget's options, 20%, 10s, 10 a second), default (what a retryhttp
transport does given only the strategy), and under a client-side throttle a client
(--throttle-k 2, --throttle-window 1s) throttle (one attempt), throttle-strategy (the
strategy, no budget) and throttle-default (the strategy, the default budget), a call the
throttle rejects not sent; and hedging in place of retrying, a second attempt once
--hedge-delay (150ms) has passed with no answer or at once on a failure, hedge (the default
budget) and hedge-unbudgeted. Prints the strategy, and for each policy how long
after the trigger's end goodput recovered (its 5s mean back above 90% of the 30s before the
trigger for 10s) and its load settled (attempts within 1.1x arrivals, on the same 5s mean,
for 10s), or "not judged" for a run cut short (--max-runs) or collapsed before its trigger;
the attempts over arrivals from the trigger on, the attempts served in vain (wasted), the
calls the throttle rejected, and the share of the trigger's calls that succeeded. At these
defaults, over seeds 1-10, none, token, default and the throttled policies recover every time
and strategy never does. --svg draws goodput over time.

tail: hedged calls against a slow tail. A server of --workers workers (50) serves each attempt
in a time lognormal about --median (10ms, --sigma 0.3), and --slow-share of attempts (2%)
--slow-extra longer (200ms), each attempt drawn apart (--slow-together: a slow call is slow on
every attempt). --rate calls a second (500) arrive, Poisson, over --clients clients (10) for
--duration (1m). The same arrivals run under four policies: none (one attempt), hedge (a
second attempt once --delay has passed with no answer, by default the service time's 95th
percentile, about 17.5ms; under the library's default budget a client, a hedge withdrawing a
token before it is sent), hedge-following (the delay the --quantile of the client's recent
answers, 0.95, from --min-delay 1ms) and hedge-unbudgeted (hedge with no budget); at most
--attempts attempts a call (2). The first answer wins and the others are cancelled: one still
queued is dropped, one in service keeps its worker. Prints for each policy the p50, p99 and
p99.9 from arrival to answer (nearest rank), the extra load (attempts over calls, minus one),
the workers' time a call and the hedges a budget refused. A run follows at most --max-runs
calls. --svg draws the quantiles.`
)

func runSimulate(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("simulate", simulateUsage, simulateHelp, stderr)
	var o whatif.SimulateOptions
	o.Define(fs)
	asJSON := fs.Bool("json", false, "print one JSON object a strategy, a line each (for the outage, with its runs and its jobs FATAL in each minute)")
	svgPath := fs.String("svg", "", "outage, layers, collapse and tail: also draw the load (collapse: the goodput; tail: the latency's\nquantiles) to the SVG file `FILE`")
	logPath := fs.String("log", "", "outage, one strategy: also write the run's attempts to `FILE` as an attempt log (JSON Lines,\nas retrypolicy replay reads), t = 0 at 2026-01-01T00:00:00Z, jobs job-1 … job-N with their jitter seeds")
	positional, stop := parseArgs(fs, args, stdout, stderr, 64)
	if stop >= 0 {
		return stop
	}
	if errs := o.Check(whatif.CommandLimits); errs != nil {
		return flagErrors(stderr, "simulate", errs)
	}
	if *svgPath != "" && o.Scenario == "contention" {
		return flagErrors(stderr, "simulate", []whatif.Option{{Name: "svg", Rule: "only the outage, layers, collapse and tail scenarios draw"}})
	}
	if *logPath != "" && (o.Scenario != "outage" || len(positional) != 1) {
		return flagErrors(stderr, "simulate", []whatif.Option{{Name: "log", Rule: "only the outage scenario of one strategy writes a log"}})
	}
	for _, path := range []string{*svgPath, *logPath} {
		if err := checkOutput(path); err != nil {
			fmt.Fprintln(stderr, "retrypolicy:", err)
			return exitIO
		}
	}
	strategies, code := readStrategies(positional, stdin, stderr, fs)
	if code >= 0 {
		return code
	}
	out := output{asJSON: *asJSON, svgPath: *svgPath, stdout: stdout, stderr: stderr}
	if *logPath != "" {
		return out.writeLog(*logPath, o.Outage(), strategies[0])
	}
	return out.scenario(&o, strategies)
}

// scenario runs the scenario the options name under strategies.
func (out output) scenario(o *whatif.SimulateOptions, strategies []whatif.Named) int {
	switch o.Scenario {
	case "contention":
		return out.contention(o.Contention(), contenders(strategies))
	case "layers":
		return out.layers(o.Layers(), chains(o, strategies))
	case "collapse":
		return out.collapse(o, strategies)
	case "tail":
		return out.tail(o, strategies)
	}
	if len(strategies) == 0 {
		strategies = whatif.DocumentedStrategies()
	}
	return out.outage(o.Outage(), strategies)
}

// writeLog runs the outage under one strategy, writes its attempts to
// path as an attempt log and prints its result, as a table or JSON.
func (out output) writeLog(path string, o fleet.Outage, s whatif.Named) int {
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(out.stderr, "retrypolicy:", err)
		return exitIO
	}
	w := bufio.NewWriterSize(f, 64<<10)
	var line []byte
	o.Log = func(a attemptlog.Attempt) {
		line = a.AppendLine(line[:0])
		w.Write(line)
	}
	r, err := o.Run(context.Background(), s.Strategy) // bounded by o.MaxRuns
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintln(out.stderr, "retrypolicy:", strings.TrimPrefix(err.Error(), "fleet: "))
		return exitIO
	}
	strategies, results := []whatif.Named{s}, []fleet.OutageResult{r}
	return out.emit(printout{1, func(int) []byte { return report.OutageJSON(s.Name, r) },
		outageTable{o, strategies, results}.write,
		func() []byte { return report.LoadChart(o, strategies, results) }})
}

// output is where simulate writes, and how: a JSON line a run, or a table;
// and the chart, when --svg names a file.
type output struct {
	asJSON         bool
	svgPath        string
	stdout, stderr io.Writer
}

// printout is how a scenario's n runs print: line(i) is run i's JSON,
// table writes their table, chart draws their picture (nil for none).
type printout struct {
	n     int
	line  func(i int) []byte
	table func(w io.Writer)
	chart func() []byte
}

// emit writes p's runs: a JSON line each with --json, else the table;
// then the picture, when there is one and --svg asks for it.
func (out output) emit(p printout) int {
	if out.asJSON {
		for i := range p.n {
			fmt.Fprintf(out.stdout, "%s\n", p.line(i))
		}
	} else {
		p.table(out.stdout)
	}
	if p.chart != nil && out.svgPath != "" {
		if err := os.WriteFile(out.svgPath, p.chart(), 0o644); err != nil {
			fmt.Fprintln(out.stderr, "retrypolicy:", err)
			return exitIO
		}
	}
	return exitOK
}

// refused says why a simulation would not run.
func (out output) refused(err error) int {
	fmt.Fprintln(out.stderr, "retrypolicy: simulate:", strings.TrimPrefix(err.Error(), "fleet: "))
	return exitInvalid
}

// chains are the layers scenario's chains: the four ways of the general retry rules, or one
// chain with a strategy a layer, as given, top first. With budget options,
// the chain given, or every layer retrying, with each budget given.
func chains(o *whatif.SimulateOptions, strategies []whatif.Named) []fleet.Chain {
	if len(strategies) == 0 {
		documented := fleet.DocumentedChains()
		if budgeted := o.Budgeted(documented[:1]); len(budgeted) > 1 || budgeted[0].Name != documented[0].Name {
			return budgeted
		}
		return documented
	}
	given := make([]retrypolicy.Strategy, len(strategies))
	for i, n := range strategies {
		given[i] = n.Strategy
	}
	return o.Budgeted([]fleet.Chain{whatif.ChainOf("given", given)})
}

// layers runs the layers scenario for each chain.
func (out output) layers(l fleet.Layers, chains []fleet.Chain) int {
	results := make([]fleet.LayersResult, len(chains))
	for i, c := range chains {
		l.Layers = c.Layers
		r, err := l.Run(context.Background()) // bounded by l.MaxCalls
		if err != nil {
			return out.refused(err)
		}
		results[i] = r
	}
	return out.emit(printout{len(results), func(i int) []byte { return report.LayersJSON(chains[i].Name, results[i]) },
		layersTable{l, chains, results}.write,
		func() []byte { return report.LayersChart(l, chains, results) }})
}

// collapse runs the collapse scenario's policies side by side, under the
// strategy given, if one is.
func (out output) collapse(o *whatif.SimulateOptions, strategies []whatif.Named) int {
	if len(strategies) > 1 {
		fmt.Fprintln(out.stderr, "retrypolicy: simulate: the collapse scenario takes one strategy (the strategy policy's), got", len(strategies))
		return exitInvalid
	}
	t := collapseTable{strategy: "the scenario's default"}
	var given *retrypolicy.Strategy
	if len(strategies) == 1 {
		given, t.strategy = &strategies[0].Strategy, strategies[0].Name
	}
	t.c = o.CollapseOf(given)
	var err error
	t.results, err = t.c.Run(context.Background()) // bounded by c.MaxCalls
	if err != nil {
		return out.refused(err)
	}
	return out.emit(printout{len(t.results), func(i int) []byte { return report.CollapseJSON(t.c, t.results[i]) },
		t.write, func() []byte { return report.CollapseChart(t.c, t.results) }})
}

// tail runs the tail scenario's policies side by side.
func (out output) tail(o *whatif.SimulateOptions, strategies []whatif.Named) int {
	if len(strategies) > 0 {
		fmt.Fprintln(out.stderr, "retrypolicy: simulate: the tail scenario takes no strategy (hedged calls send at most --attempts), got", len(strategies))
		return exitInvalid
	}
	c := o.TailOf()
	results, err := c.Run(context.Background()) // bounded by c.MaxCalls
	if err != nil {
		return out.refused(err)
	}
	c = c.Filled() // as Run ran it, for the settings shown
	return out.emit(printout{len(results), func(i int) []byte { return report.TailJSON(c, results[i]) },
		func(w io.Writer) { writeTail(w, c, results) }, func() []byte { return report.TailChart(c, results) }})
}

// writeTail prints the tail scenario's table, and a line for each policy
// cut short.
func writeTail(w io.Writer, c fleet.Tail, results []fleet.TailResult) {
	fmt.Fprintf(w, "%s\n\n", report.TailSettings(c))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tp50\tp99\tp99.9\textra load\twork a call\thedges refused\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%sms\t%sms\t%sms\t%.1f%%\t%sms\t%d\t\n", r.Policy, report.Ms(r.P50), report.Ms(r.P99), report.Ms(r.P999),
			r.ExtraLoad*100, report.Ms(r.WorkPerCall), r.Refused)
	}
	tw.Flush()
	for _, r := range results {
		if r.Truncated {
			fmt.Fprint(w, report.Truncated(r.Policy.String(), r.TruncatedBy, fmt.Sprintf("after %d calls, its figures are over the calls answered", r.Calls)))
		}
	}
}

// collapseTable is the collapse scenario's run, to be printed: its
// settings, the name of its strategy, and each policy's result.
type collapseTable struct {
	c        fleet.Collapse
	strategy string
	results  []fleet.CollapseResult
}

// write prints the collapse scenario's table, and a line for each policy
// cut short or not judged.
func (t collapseTable) write(w io.Writer) {
	c := t.c
	deadlines := "serves abandoned calls"
	if c.CheckDeadlines {
		deadlines = "drops calls past their deadline"
	}
	descriptor, _ := c.Strategy.MarshalJSON() // a strategy Run validated
	fmt.Fprintf(w, "collapse: %g calls a second over %d clients to %d workers of %s, a queue of %d (it %s), attempts timing out after %s; %s for %s from t = %s\n",
		c.Rate, c.Clients, c.Workers, say.Duration(c.Service), c.Queue, deadlines, say.Duration(c.Timeout), report.CollapseTrigger(c), say.Duration(c.TriggerFor), say.Duration(c.TriggerAt))
	fmt.Fprintf(w, "strategy (%s): %s\n\n", t.strategy, descriptor)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\trecovered after\tsettled after\tattempts a call\twasted\tthrottled\ttrigger's calls that succeeded\t")
	for _, r := range t.results {
		recovered, settled := report.CollapseVerdict(r)
		wasted, throttled := 0, 0
		for s := range r.Wasted {
			wasted, throttled = wasted+r.Wasted[s], throttled+r.Throttled[s]
		}
		succeeded := "-"
		if r.TriggerArrivals > 0 {
			succeeded = fmt.Sprintf("%.0f%%", 100*float64(r.TriggerSucceeded)/float64(r.TriggerArrivals))
		}
		amplification := "-" // no call arrived from the trigger on
		if r.Amplification > 0 {
			amplification = fmt.Sprintf("%.2f", r.Amplification)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t\n", r.Policy, recovered, settled, amplification, wasted, throttled, succeeded)
	}
	tw.Flush()
	for _, r := range t.results {
		fmt.Fprint(w, report.CollapseNotJudged(r))
	}
}

// layersTable is the layers scenario's run, to be printed: its settings,
// its chains and each one's result.
type layersTable struct {
	l       fleet.Layers
	chains  []fleet.Chain
	results []fleet.LayersResult
}

// write prints the layers scenario's table.
func (t layersTable) write(w io.Writer) {
	l, chains, results := t.l, t.chains, t.results
	from := "0"
	if l.DownAt > 0 {
		from = say.Duration(l.DownAt)
	}
	fmt.Fprintf(w, "layers: %v requests a second for %s through %d layers; the bottom is down for %s from t = %s, then serves at most %d calls a second\n\n",
		l.Rate, say.Duration(l.Duration), len(chains[0].Layers), say.Duration(l.Down), from, l.Capacity)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "chain\trequests\tsucceeded\tbottom calls\tper request\tpeak/capacity\tp99 latency\trecovery\t")
	for i, r := range results {
		recovery, p99 := "never", "-"
		if !r.Metastable {
			recovery = say.Duration(r.Recovery)
		}
		if r.Succeeded > 0 {
			p99 = say.Duration(r.Latency.P99)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.2f\t%.1fx\t%s\t%s\t\n", chains[i].Name, r.Requests, r.Succeeded, r.BottomCalls, r.Amplification, r.PeakLoad, p99, recovery)
	}
	tw.Flush()
	t.retries(w)
	for i, r := range results {
		if r.Truncated {
			fmt.Fprint(w, report.Truncated(chains[i].Name, r.TruncatedBy, "its counts are lower bounds"))
		}
	}
}

// retries prints the retries a second the chains' layers made at the
// outage's start, at its height and after it.
func (t layersTable) retries(w io.Writer) {
	l, chains, results := t.l, t.chains, t.results
	fmt.Fprintln(w, "\nretries a second, all layers:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "chain\tbefore the outage\tits first 5s\tits height\tthe 10s after\t")
	for i, r := range results {
		f := report.RetriesOf(l, r)
		before := "-"        // no healthy second before it
		if l.DownAt >= 1e9 { // a second
			before = fmt.Sprintf("%.1f", f.Before)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%d\t%.1f\t\n", chains[i].Name, before, f.First, f.Height, f.After)
	}
	tw.Flush()
}

// contenders are the contention's contenders: the published ones, or
// the strategies given.
func contenders(strategies []whatif.Named) []fleet.Contender {
	if len(strategies) == 0 {
		return fleet.PublishedContenders()
	}
	var out []fleet.Contender
	for _, n := range strategies {
		out = append(out, fleet.Contender{Name: n.Name, Strategy: n.Strategy})
	}
	return out
}

// readStrategies reads the strategy descriptors of paths ("-", at most
// once, for standard input), each named by its file's base name. It
// returns the exit status to stop with, or -1.
func readStrategies(paths []string, stdin io.Reader, stderr io.Writer, fs *flag.FlagSet) ([]whatif.Named, int) {
	var strategies []whatif.Named
	if i := slices.Index(paths, "-"); i >= 0 && slices.Contains(paths[i+1:], "-") {
		fmt.Fprintln(stderr, "retrypolicy: simulate: - (standard input) given more than once")
		return nil, exitInvalid
	}
	for _, path := range paths {
		in, err := openInput([]string{path}, stdin, stderr, fs)
		var s retrypolicy.Strategy
		if err == nil {
			s, err = parseStrategy(in)
			in.Close()
		}
		if err != nil {
			if code := printProblems(stderr, err); code == exitInvalid {
				fmt.Fprintf(stderr, "(in %s)\n", path)
				return nil, code
			}
			return nil, exitIO
		}
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		if path == "-" {
			name = "stdin"
		}
		strategies = append(strategies, whatif.Named{Name: name, Strategy: s})
	}
	return strategies, -1
}

// outage runs the outage scenario for each strategy.
func (out output) outage(o fleet.Outage, strategies []whatif.Named) int {
	results := make([]fleet.OutageResult, len(strategies))
	for i, n := range strategies {
		r, err := o.Run(context.Background(), n.Strategy) // bounded by o.MaxRuns
		if err != nil {
			return out.refused(err)
		}
		results[i] = r
	}
	return out.emit(printout{len(results), func(i int) []byte { return report.OutageJSON(strategies[i].Name, results[i]) },
		outageTable{o, strategies, results}.write,
		func() []byte { return report.LoadChart(o, strategies, results) }})
}

// outageTable is the outage scenario's run, to be printed: its settings,
// its strategies and each one's result.
type outageTable struct {
	o          fleet.Outage
	strategies []whatif.Named
	results    []fleet.OutageResult
}

// write prints the outage scenario's table.
func (t outageTable) write(w io.Writer) {
	o, strategies, results := t.o, t.strategies, t.results
	fmt.Fprintf(w, "outage: %d jobs; the provider is down for %s from t = 0; runs fail after %s; first runs %s; %s\n\n",
		o.Jobs, say.Duration(o.Down), say.Duration(o.FailAfter), report.SpreadText(o.Spread), report.TickText(o.Tick))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\truns\tpeak/min\tFATAL\tunfinished\trecovery p50\tp99\tmax\t")
	for i, r := range results {
		rec := []string{"-", "-", "-"}
		if r.Succeeded > 0 {
			rec = []string{say.Duration(r.Recovery.P50), say.Duration(r.Recovery.P99), say.Duration(r.Recovery.Max)}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t\n", strategies[i].Name, r.Runs, r.Peak, r.Fatal, r.Unfinished, strings.Join(rec, "\t"))
	}
	tw.Flush()
	for i, r := range results {
		if r.Truncated {
			fmt.Fprint(w, report.Truncated(strategies[i].Name, r.TruncatedBy, fmt.Sprintf("after %d runs, its counts are lower bounds", r.Runs)))
		}
	}
}

// contention runs the contention scenario for each contender.
func (out output) contention(c fleet.Contention, contenders []fleet.Contender) int {
	results := make([]fleet.ContentionResult, len(contenders))
	for i, who := range contenders {
		r, err := c.Run(context.Background(), who) // bounded by its MaxMessages
		if err != nil {
			return printProblems(out.stderr, err)
		}
		results[i] = r
	}
	return out.emit(printout{len(results), func(i int) []byte { return report.ContentionJSON(results[i]) },
		func(w io.Writer) { writeContention(w, c, results) }, nil})
}

// writeContention prints the contention scenario's table.
func writeContention(w io.Writer, c fleet.Contention, results []fleet.ContentionResult) {
	fmt.Fprintf(w, "contention: %d clients, means over %d runs\n\n", c.Clients, c.Runs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tcalls\tcompletion_ms\tgave up\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t\n", r.Name, r.Calls, r.CompletionMs, r.GaveUp)
	}
	tw.Flush()
	for _, r := range results {
		if r.Truncated {
			fmt.Fprint(w, report.Truncated(r.Name, r.TruncatedBy, fmt.Sprintf("within run %d, its means are over the runs begun", r.Runs)))
		}
	}
}
