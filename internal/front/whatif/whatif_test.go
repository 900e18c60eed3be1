package whatif

import (
	"context"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/fleet"
)

// parse defines o's flags on a new flag set and parses args.
func parse(t *testing.T, define func(*flag.FlagSet), args ...string) error {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	define(fs)
	return fs.Parse(args)
}

// TestFlagValues: seconds or a Go duration, whole numbers, and what each
// refuses.
func TestFlagValues(t *testing.T) {
	var s Seconds
	require.NoError(t, s.Set("1.5"))
	assert.Equal(t, Seconds(1500*time.Millisecond), s)
	require.NoError(t, s.Set("1m30s"))
	assert.Equal(t, "1m30s", s.String())
	assert.EqualError(t, s.Set("2e9"), "must be between 0 and 1e9 seconds")
	assert.EqualError(t, s.Set("soon"), "must be seconds (90, 1.5) or a duration (1m30s)")
	assert.Error(t, s.Set("NaN"))
	var zero Seconds
	assert.Equal(t, "0", zero.String())

	var d Duration
	require.NoError(t, d.Set("90"))
	assert.Equal(t, Duration(90*time.Second), d)
	assert.EqualError(t, d.Set("-1s"), "must not be negative")

	var n WholeNumber
	require.NoError(t, n.Set("12"))
	assert.Equal(t, "12", n.String())
	assert.EqualError(t, n.Set("1.5"), "must be a whole number")
}

// TestPlanOptionsDefaultsAndRanges: plan's defaults are in range; each
// option out of its range is named with its rule.
func TestPlanOptionsDefaultsAndRanges(t *testing.T) {
	var o PlanOptions
	require.NoError(t, parse(t, o.Define))
	assert.Empty(t, o.Check())
	assert.Equal(t, WholeNumber(12), o.Count)
	assert.Equal(t, Duration(time.Minute), o.Tick, "the controller's minute")
	require.NoError(t, parse(t, o.Define, "-failures", "0", "-tick", "25h", "-uptime", "-1"))
	assert.Equal(t, []Option{
		{"tick", "must be from 0 to 24h, got 25h0m0s"},
		{"uptime", "must be between 0 and 1e9 seconds, got -1s"},
		{"failures", "must be between 1 and 1000, got 0"},
	}, o.Check())
	o = PlanOptions{}
	require.NoError(t, parse(t, o.Define, "-failures", "3"))
	steps, report, err := o.Run(context.Background(), retrypolicy.Default())
	require.NoError(t, err)
	require.Len(t, steps, 3)
	assert.Equal(t, 2*time.Minute, steps[2].Failure.Sub(steps[0].Failure), "failures a tick apart")
	assert.NotEmpty(t, report.Findings)
}

// TestSimulateOptionsDefaultsAndRanges: simulate's defaults are in range
// for the command's limits; out of range, each option is named, the
// budget's flags by their names; an option of another scenario is named
// with the option that plays its part.
func TestSimulateOptionsDefaultsAndRanges(t *testing.T) {
	var o SimulateOptions
	require.NoError(t, parse(t, o.Define))
	assert.Empty(t, o.Check(CommandLimits))

	require.NoError(t, parse(t, o.Define, "-scenario", "layers", "-budget-ratio", "-1", "-budget-burst", "0",
		"-budget-percent", "101", "-budget-interval", "2h", "-budget-min-retries", "-1", "-rate", "0"))
	assert.Equal(t, []Option{
		{"rate", "must be between 1 and 100000, got 0"},
		{"budget-ratio", "must be between 0 and 1000, got -1"},
		{"budget-burst", "must be between 1 and 1000000000, got 0"},
		{"budget-percent", "must be between 0 and 100, got 101"},
		{"budget-interval", "must be between 1ms and 1h, got 2h0m0s"},
		{"budget-min-retries", "must be between 0 and 1000000000, got -1"},
	}, o.Check(CommandLimits))

	require.NoError(t, parse(t, o.Define, "-scenario", "contention", "-jobs", "5"))
	assert.Equal(t, []Option{{"jobs", "only the outage scenario takes it; in the contention scenario, clients plays its part"}}, o.Check(CommandLimits))
	require.NoError(t, parse(t, o.Define, "-scenario", "storm"))
	assert.Equal(t, []Option{{"scenario", `must be outage, contention, layers, collapse or tail, got "storm"`}}, o.Check(CommandLimits))
	require.NoError(t, parse(t, o.Define, "-jobs", "2000000", "-outage", "0"))
	assert.Equal(t, []Option{{"jobs", "must be between 1 and 1000000, got 2000000"}, {"outage", "must be more than 0"}}, o.Check(CommandLimits))
}

// TestTheWindowedBudgetsMinimum: --budget-min-retries a
// --budget-min-interval is converted to retries a --budget-interval,
// rounded down; the layers' budgets are the options given, side by side.
func TestTheWindowedBudgetsMinimum(t *testing.T) {
	var o SimulateOptions
	require.NoError(t, parse(t, o.Define, "-scenario", "layers", "-budget-min-retries", "3", "-budget-min-interval", "4s", "-budget-interval", "10s", "-budget-percent", "20"))
	assert.Equal(t, 7, o.WindowMinRetries(), "3 every 4 s is 7.5 every 10 s, rounded down")
	assert.Empty(t, o.Budgeted(nil))
	base := ChainOf("every layer", []retrypolicy.Strategy{retrypolicy.Default(), retrypolicy.Default()})
	out := o.Budgeted([]fleet.Chain{base})
	require.Len(t, out, 1, "a windowed budget only: one chain")
	assert.Equal(t, "every layer, windowed budget", out[0].Name)
	assert.Equal(t, 20.0, out[0].Layers[1].BudgetPercent)
	assert.Equal(t, 7, out[0].Layers[1].BudgetMinRetries)
	assert.Equal(t, 10*time.Second, out[0].Layers[0].BudgetInterval)

	require.NoError(t, parse(t, o.Define, "-scenario", "layers"))
	out = o.Budgeted([]fleet.Chain{base})
	require.Len(t, out, 1, "no budget option: the chain as it is")
	assert.Equal(t, "every layer", out[0].Name)
}

// TestDocumentedStrategies: the default and Amp's four, by name, each
// valid.
func TestDocumentedStrategies(t *testing.T) {
	var names []string
	for _, n := range DocumentedStrategies() {
		names = append(names, n.Name)
		assert.NoError(t, n.Strategy.Validate(), n.Name)
	}
	assert.Equal(t, []string{"default", "bounded-hour", "bounded-day", "jitter-5m", "none"}, names)
}

// TestReplayOptions: max-runs within its bound, the tick's range.
func TestReplayOptions(t *testing.T) {
	var o ReplayOptions
	require.NoError(t, parse(t, o.Define))
	assert.Empty(t, o.Check(int(o.MaxRuns)))
	require.NoError(t, parse(t, o.Define, "-max-runs", "0", "-tick", "25h"))
	assert.Equal(t, []Option{{"tick", "must be from 0 to 24h, got 25h0m0s"}, {"max-runs", "must be between 1 and 100, got 0"}}, o.Check(100))
}

// TestCollapseOptions: the collapse takes its own options, and --rate,
// --clients, --duration and the budgets' when given; its defaults
// otherwise (80 calls a second over 10 clients for 5m, not the layers' or
// the contention's); an option out of range is named as its flag.
func TestCollapseOptions(t *testing.T) {
	parse := func(args ...string) (*SimulateOptions, []Option) {
		var o SimulateOptions
		fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
		o.Define(fs)
		require.NoError(t, fs.Parse(append([]string{"--scenario", "collapse"}, args...)))
		return &o, o.Check(CommandLimits)
	}
	o, errs := parse()
	assert.Empty(t, errs)
	c := o.CollapseOf(nil)
	assert.Equal(t, 80.0, c.Rate)
	assert.Equal(t, 10, c.Clients)
	assert.Equal(t, 5*time.Minute, c.Duration)
	assert.Equal(t, 100, c.BudgetMinRetries, "10 a second over 10 s")
	assert.Equal(t, 4, c.Strategy.MaxAttempts)

	o, errs = parse("--rate", "50", "--clients", "3", "--duration", "2m", "--drop", "0.5", "--workers", "4", "--check-deadlines")
	assert.Empty(t, errs)
	c = o.CollapseOf(nil)
	assert.Equal(t, 50.0, c.Rate)
	assert.Equal(t, 3, c.Clients)
	assert.Equal(t, 2*time.Minute, c.Duration)
	assert.Equal(t, 0.0, c.Spike, "the drop is the trigger")
	assert.Equal(t, 0.5, c.Drop)
	assert.Equal(t, 4, c.Workers)
	assert.True(t, c.CheckDeadlines)

	_, errs = parse("--workers", "0")
	assert.Equal(t, []Option{{"workers", "must be between 1 and 10000, got 0"}}, errs)
	_, errs = parse("--jobs", "5")
	assert.Equal(t, []Option{{"jobs", "only the outage scenario takes it; in the collapse scenario, rate plays its part"}}, errs)

	o, errs = parse("--fail-share", "0.9")
	assert.Empty(t, errs)
	c = o.CollapseOf(nil)
	assert.Equal(t, 0.0, c.Spike, "the random failures are the trigger")
	assert.Equal(t, 0.9, c.FailShare)
	_, errs = parse("--fail-share", "1")
	assert.Equal(t, []Option{{"fail-share", "must be above 0 and below 1, got 1"}}, errs)
	_, errs = parse("--fail-share", "0.5", "--drop", "0.5")
	assert.Equal(t, []Option{{"spike", "one trigger, --spike, --drop or --fail-share, not two or none"}}, errs)
}

// TestThrottleAndTailOptions: the throttle's options reach the collapse
// and are refused, by the throttle's own ranges, named as flags (0 too,
// which the collapse would take as its default); the tail takes
// --workers, --rate, --clients and --duration when given, its own
// defaults (50, 500, 10, 1m) when not, and names a setting out of range
// by its flag.
func TestThrottleAndTailOptions(t *testing.T) {
	parse := func(scenario string, args ...string) (*SimulateOptions, []Option) {
		var o SimulateOptions
		fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
		o.Define(fs)
		require.NoError(t, fs.Parse(append([]string{"--scenario", scenario}, args...)))
		return &o, o.Check(CommandLimits)
	}
	o, errs := parse("collapse", "--throttle-k", "3", "--throttle-window", "5s", "--hedge-delay", "300ms")
	assert.Empty(t, errs)
	c := o.CollapseOf(nil)
	assert.Equal(t, 3.0, c.ThrottleK)
	assert.Equal(t, 5*time.Second, c.ThrottleWindow)
	assert.Equal(t, 300*time.Millisecond, c.HedgeDelay)
	_, errs = parse("collapse", "--throttle-k", "0")
	assert.Equal(t, []Option{{"throttle-k", "must be between 1 and 10, got 0"}}, errs)
	_, errs = parse("collapse", "--throttle-window", "20m")
	assert.Equal(t, []Option{{"throttle-window", "must be between 100ms and 10m, got 20m0s"}}, errs)

	o, errs = parse("tail")
	assert.Empty(t, errs)
	tail := o.TailOf()
	assert.Equal(t, []any{50, 500.0, 10, time.Minute}, []any{tail.Workers, tail.Rate, tail.Clients, tail.Duration})
	o, errs = parse("tail", "--workers", "7", "--rate", "100", "--clients", "2", "--duration", "10s", "--slow-together", "--delay", "20ms")
	assert.Empty(t, errs)
	tail = o.TailOf()
	assert.Equal(t, []any{7, 100.0, 2, 10 * time.Second, true, 20 * time.Millisecond},
		[]any{tail.Workers, tail.Rate, tail.Clients, tail.Duration, tail.SlowTogether, tail.Delay})
	_, errs = parse("tail", "--sigma", "4")
	assert.Equal(t, []Option{{"sigma", "must be between 0 and 3, got 4"}}, errs)
	_, errs = parse("tail", "--duration", "500ms")
	assert.Equal(t, []Option{{"duration", "must be between 1s and 24h, got 500ms"}}, errs)
}

// TestTheWindowedBudgetDoesNotBurst pins the pace of the windowed budget
// in the run docs/what-if.md shows (the gateway's numbers: 20% over 10 s,
// at least 10 retries a second): every layer retrying through a minute's
// outage at 2 min, its retries in any second of the outage are at most
// 1.5x their mean over the outage. Unpaced, the retries granted in a
// window's first second aged out together, and the window granted them
// again all at once (7.7x the bottom's capacity at the peak).
func TestTheWindowedBudgetDoesNotBurst(t *testing.T) {
	var o SimulateOptions
	require.NoError(t, parse(t, o.Define, "-scenario", "layers", "-duration", "5m", "-outage-at", "2m", "-outage", "1m",
		"-budget-percent", "20", "-budget-interval", "10s", "-budget-min-retries", "10", "-budget-min-interval", "1s"))
	chains := o.Budgeted(fleet.DocumentedChains()[:1])
	require.Len(t, chains, 1)
	l := o.Layers()
	l.Layers = chains[0].Layers
	r, err := l.Run(context.Background())
	require.NoError(t, err)
	outage := r.Retries[120:180]
	total, most := 0, 0
	for _, n := range outage {
		total += n
		most = max(most, n)
	}
	require.Positive(t, total, "retries during the outage")
	mean := float64(total) / float64(len(outage))
	assert.LessOrEqual(t, float64(most), 1.5*mean, "the most retries in a second of the outage, beside the mean %.1f", mean)
}

// TestHelpStatesEachScenariosDefaults: every default the flags' help
// states, for each scenario that takes the flag, is what that scenario
// runs when the flag is not given: a default written "SCENARIO … (default
// X)" in the usage is that scenario's, the flag's own (printed after its
// usage) every other's that takes it. A flag whose default a scenario
// runs but no help states fails, as a stated default it does not run.
func TestHelpStatesEachScenariosDefaults(t *testing.T) {
	var o SimulateOptions
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.Define(fs)
	require.NoError(t, fs.Parse(nil))
	c, tail := o.CollapseOf(nil), o.TailOf()
	runs := map[string]map[string]any{ // flag, scenario: what it runs
		"jobs":            {"outage": o.Outage().Jobs},
		"outage":          {"outage": o.Outage().Down, "layers": o.Layers().Down},
		"capacity":        {"outage": o.Outage().Capacity, "layers": o.Layers().Capacity},
		"tick":            {"outage": o.Outage().Tick},
		"max-runs":        {"outage": o.Outage().MaxRuns, "layers": o.Layers().MaxCalls, "collapse": c.MaxCalls, "tail": tail.MaxCalls},
		"clients":         {"contention": o.Contention().Clients, "collapse": c.Clients, "tail": tail.Clients},
		"runs":            {"contention": o.Contention().Runs},
		"rate":            {"layers": o.Layers().Rate, "collapse": c.Rate, "tail": tail.Rate},
		"duration":        {"layers": o.Layers().Duration, "collapse": c.Duration, "tail": tail.Duration},
		"budget-ratio":    {"collapse": c.BudgetRatio},
		"budget-burst":    {"collapse": c.BudgetBurst},
		"budget-percent":  {"collapse": c.BudgetPercent},
		"budget-interval": {"collapse": c.BudgetInterval},
		"workers":         {"collapse": c.Workers, "tail": tail.Workers}, "service": {"collapse": c.Service}, "queue": {"collapse": c.Queue},
		"median": {"tail": tail.Median}, "sigma": {"tail": tail.Sigma}, "slow-share": {"tail": tail.SlowShare},
		"slow-extra": {"tail": tail.SlowExtra}, "attempts": {"tail": tail.Attempts}, "quantile": {"tail": tail.Quantile},
		"min-delay": {"tail": tail.MinDelay},
		"timeout":   {"collapse": c.Timeout}, "spike": {"collapse": c.Spike},
		"trigger-at": {"collapse": c.TriggerAt}, "trigger-for": {"collapse": c.TriggerFor},
	}
	stated := regexp.MustCompile(`\b(outage|contention|layers|collapse|tail)\b[^;()]*\(default ([^)]+)\)`)
	for name, scenarios := range runs {
		f := fs.Lookup(name)
		require.NotNil(t, f, name)
		for scenario, ran := range scenarios {
			says := ""
			for _, m := range stated.FindAllStringSubmatch(f.Usage, -1) {
				if m[1] == scenario {
					says = m[2]
				}
			}
			if says == "" {
				says = f.DefValue // the flag's own, printed after its usage
			}
			assert.Equal(t, fmt.Sprint(ran), normalize(t, says, ran), "--%s in the %s scenario", name, scenario)
		}
	}
}

// normalize reads a default as the help states it into ran's type, and
// writes it as fmt.Sprint does ran: "30m" as 30m0s.
func normalize(t *testing.T, says string, ran any) string {
	t.Helper()
	switch ran.(type) {
	case time.Duration:
		d, err := time.ParseDuration(says)
		require.NoError(t, err, says)
		return fmt.Sprint(d)
	case float64:
		f, err := strconv.ParseFloat(says, 64)
		require.NoError(t, err, says)
		return fmt.Sprint(f)
	}
	return says
}
