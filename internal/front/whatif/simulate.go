package whatif

import (
	"flag"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/fleet"
	"github.com/retrypolicy/retrypolicy/internal/budgetrange"
	"github.com/retrypolicy/retrypolicy/internal/echo"
	"github.com/retrypolicy/retrypolicy/internal/say"
	"github.com/retrypolicy/retrypolicy/retry"
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
	// The collapse's server, trigger and clients (--workers, --service,
	// --exponential-service, --queue, --check-deadlines, --timeout,
	// --spike, --drop, --fail-share, --trigger-at, --trigger-for); --rate,
	// --clients and --duration are its arrivals.
	Collapse fleet.Collapse
	// The tail's server and hedges (--median, --sigma, --slow-share,
	// --slow-extra, --slow-together, --attempts, --delay, --quantile,
	// --min-delay); --workers, --rate, --clients and --duration are its
	// server and arrivals.
	Tail fleet.Tail
	fs   *flag.FlagSet // Define's, to tell the options set
}

// scenarioOptions names the scenarios that take each option that not all
// do, and the option that plays its part in the others, if any.
var scenarioOptions = map[string]struct {
	scenarios   []string
	counterpart map[string]string
}{
	"jobs":         {[]string{"outage"}, map[string]string{"contention": "clients", "layers": "rate", "collapse": "rate"}},
	"clients":      {[]string{"contention", "collapse", "tail"}, map[string]string{"outage": "jobs", "layers": "rate"}},
	"rate":         {[]string{"layers", "collapse", "tail"}, map[string]string{"outage": "jobs", "contention": "clients"}},
	"outage":       {[]string{"outage", "layers"}, nil},
	"capacity":     {[]string{"outage", "layers"}, nil},
	"fail-after":   {[]string{"outage"}, nil},
	"spread":       {[]string{"outage"}, nil},
	"tick":         {[]string{"outage"}, nil},
	"max-runs":     {[]string{"outage", "layers", "collapse", "tail"}, nil},
	"runs":         {[]string{"contention"}, nil},
	"duration":     {[]string{"layers", "collapse", "tail"}, nil},
	"outage-at":    {[]string{"layers"}, nil},
	"budget-ratio": {budgeted, nil}, "budget-burst": {budgeted, nil},
	"budget-percent": {budgeted, nil}, "budget-interval": {budgeted, nil},
	"budget-min-retries": {budgeted, nil}, "budget-min-interval": {budgeted, nil},
	"workers": {[]string{"collapse", "tail"}, nil}, "service": {collapseOnly, nil}, "exponential-service": {collapseOnly, nil},
	"queue": {collapseOnly, nil}, "check-deadlines": {collapseOnly, nil}, "timeout": {collapseOnly, nil},
	"spike": {collapseOnly, nil}, "drop": {collapseOnly, nil}, "fail-share": {collapseOnly, nil},
	"trigger-at": {collapseOnly, nil}, "trigger-for": {collapseOnly, nil},
	"throttle-k": {collapseOnly, nil}, "throttle-window": {collapseOnly, nil}, "hedge-delay": {collapseOnly, nil},
	"median": {tailOnly, nil}, "sigma": {tailOnly, nil}, "slow-share": {tailOnly, nil}, "slow-extra": {tailOnly, nil},
	"slow-together": {tailOnly, nil}, "attempts": {tailOnly, nil}, "delay": {tailOnly, nil}, "quantile": {tailOnly, nil},
	"min-delay": {tailOnly, nil},
}

// The scenarios that take the budgets' options, the collapse's own and
// the tail's.
var budgeted, collapseOnly, tailOnly = []string{"layers", "collapse"}, []string{"collapse"}, []string{"tail"}

// Scenarios are simulate's scenarios.
var Scenarios = []string{"outage", "contention", "layers", "collapse", "tail"}

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
	fs.StringVar(&o.Scenario, "scenario", "outage", "`outage`, contention, layers, collapse or tail")
	o.Jobs, o.Clients, o.Runs, o.MaxRuns = 1000, 100, 100, fleet.DefaultMaxRuns
	o.Down = Duration(30 * time.Minute)
	fs.Var(&o.Jobs, "jobs", "outage: how many jobs, `N` from 1 to 1000000")
	fs.Var(&o.Clients, "clients", "how many clients, `N` from 1 to 100000: contention, contending (default 100); collapse, the calls spread\nover them, each with its budgets (default 10); tail, the same (default 10)")
	fs.Var(&o.Down, "outage", "how long the dependency is down, a `DURATION` up to 30 days: outage, the provider (default 30m);\nlayers, the bottom (default 30s)")
	fs.Var(&o.FailAfter, "fail-after", "outage: how long a run lasts before it fails while the provider is down, a `DURATION`")
	fs.Var(&o.Spread, "spread", "outage: the jobs' first runs spread over this `DURATION` (0: all at t = 0)")
	fs.Var(&o.Capacity, "capacity", "the most a second the dependency serves once up, `C` (0: no limit): outage, runs the provider\nserves (default 0); layers, calls the bottom serves (default 150)")
	o.TickOption.Define(fs, "outage: ")
	fs.Var(&o.MaxRuns, "max-runs", "outage, layers, collapse and tail: the most runs (layers, collapse and tail: calls, each policy's)\nfollowed in all, `N`; the simulation stops there and says it was truncated")
	fs.Var(&o.Runs, "runs", "contention: how many runs to average, `R` from 1 to 100000")
	o.Rate, o.Span = 100, Duration(5*time.Minute)
	fs.Var(&o.Rate, "rate", "how many calls a second arrive, `R` from 1 to 100000: layers, requests at the top (default 100);\ncollapse, calls at the server (default 80); tail, the same (default 500)")
	fs.Var(&o.Span, "duration", "a `DURATION` up to 24h: layers, how long requests arrive; collapse, how long the run lasts; tail,\nhow long calls arrive (default 1m)")
	fs.Var(&o.DownAt, "outage-at", "layers: how long the bottom serves before its outage, a `DURATION` up to 24h (0: down from t = 0)")
	o.BudgetRatio, o.BudgetBurst = retry.DefaultBudgetRatio, retry.DefaultBudgetBurst
	o.BudgetPercent, o.BudgetInterval, o.BudgetMinRetries, o.BudgetMinInterval = 20, Duration(10*time.Second), 10, Duration(time.Second)
	fs.Float64Var(&o.BudgetRatio, "budget-ratio", o.BudgetRatio, "layers (a token budget for each layer, when given) and collapse (the token policy's, a client):\n`R` retries a call that ended well (0 to 1000)")
	fs.Var(&o.BudgetBurst, "budget-burst", "layers and collapse: the token budget's burst, at most `N` tokens held (1 to 1e9)")
	fs.Float64Var(&o.BudgetPercent, "budget-percent", o.BudgetPercent, "layers (a windowed budget for each layer, when given) and collapse (the windowed policy's, a\nclient): `P` percent of the calls in its interval as retries (0 to 100)")
	fs.Var(&o.BudgetInterval, "budget-interval", "layers and collapse: the windowed budget's interval, a `DURATION` from 1ms to 1h")
	fs.Var(&o.BudgetMinRetries, "budget-min-retries", "layers and collapse: the windowed budget's minimum, `N` retries every --budget-min-interval")
	fs.Var(&o.BudgetMinInterval, "budget-min-interval", "layers and collapse: the interval of --budget-min-retries, a `DURATION` from 1ms")
	fs.Uint64Var(&o.Seed, "seed", 0, "the seed the jitter, the spread and the latencies are drawn from, `S`")
	o.defineCollapse(fs)
	o.defineTail(fs)
	// Their defaults are the scenario's, each stated in its usage.
	for name, zero := range map[string]string{"rate": "0", "clients": "0", "outage": "0s", "capacity": "0", "workers": "0"} {
		fs.Lookup(name).DefValue = zero
	}
}

// defineCollapse defines the collapse's own options, with its defaults.
func (o *SimulateOptions) defineCollapse(fs *flag.FlagSet) {
	d := fleet.DefaultCollapse()
	o.Collapse = d
	fs.IntVar(&o.Collapse.Workers, "workers", d.Workers, "the server's workers, `N` from 1 to 10000: collapse (default 10); tail (default 50)")
	fs.DurationVar(&o.Collapse.Service, "service", d.Service, "collapse: a call's service time, a `DURATION` up to 1m")
	fs.BoolVar(&o.Collapse.ExponentialService, "exponential-service", false, "collapse: service times exponential about --service (else fixed)")
	fs.IntVar(&o.Collapse.Queue, "queue", d.Queue, "collapse: the most calls queued at the server, `N` from 0 to 1000000; a call beyond is refused")
	fs.BoolVar(&o.Collapse.CheckDeadlines, "check-deadlines", false, "collapse: the server drops a queued call its client gave up on, or would before its service ends")
	fs.DurationVar(&o.Collapse.Timeout, "timeout", d.Timeout, "collapse: each attempt's timeout, a `DURATION` up to 1h")
	fs.Float64Var(&o.Collapse.Spike, "spike", d.Spike, "collapse: the trigger, the arrivals times `F` (1 to 100)")
	fs.Float64Var(&o.Collapse.Drop, "drop", 0, "collapse: the trigger, the fraction `F` of the workers lost (0 to 1), in place of --spike")
	fs.Float64Var(&o.Collapse.FailShare, "fail-share", 0, "collapse: the trigger, the share `F` of the attempts served that fail, transiently, after their service (above 0, below 1), in place of --spike")
	fs.DurationVar(&o.Collapse.TriggerAt, "trigger-at", d.TriggerAt, "collapse: when the trigger starts, a `DURATION`")
	fs.DurationVar(&o.Collapse.TriggerFor, "trigger-for", d.TriggerFor, "collapse: how long the trigger lasts, a `DURATION`")
	fs.Float64Var(&o.Collapse.ThrottleK, "throttle-k", d.ThrottleK, "collapse: the throttled policies' throttle, a client, rejects calls once requests pass `K` times\naccepts (1 to 10)")
	fs.DurationVar(&o.Collapse.HedgeDelay, "hedge-delay", d.HedgeDelay, "collapse: the hedging policies' delay, after which a call with no answer sends its second\nattempt, a `DURATION` up to 1h")
	fs.DurationVar(&o.Collapse.ThrottleWindow, "throttle-window", d.ThrottleWindow, "collapse: the throttle's window, a `DURATION` from 100ms to 10m; it should hold five requests or\nmore of a client")
}

// defineTail defines the tail's own options, with its defaults.
func (o *SimulateOptions) defineTail(fs *flag.FlagSet) {
	d := fleet.DefaultTail()
	o.Tail = d
	fs.DurationVar(&o.Tail.Median, "median", d.Median, "tail: the service time's median, a `DURATION` up to 1m (lognormal about it)")
	fs.Float64Var(&o.Tail.Sigma, "sigma", d.Sigma, "tail: the standard deviation `S` of the service time's log (0 to 3)")
	fs.Float64Var(&o.Tail.SlowShare, "slow-share", d.SlowShare, "tail: the share `F` of attempts that are slow (0 to below 1)")
	fs.DurationVar(&o.Tail.SlowExtra, "slow-extra", d.SlowExtra, "tail: how much longer a slow attempt takes, a `DURATION` up to 1h")
	fs.BoolVar(&o.Tail.SlowTogether, "slow-together", false, "tail: a slow call is slow on every attempt (else each attempt is drawn apart)")
	fs.IntVar(&o.Tail.Attempts, "attempts", d.Attempts, "tail: the most attempts a hedged call sends, `N` from 2 to 5")
	fs.DurationVar(&o.Tail.Delay, "delay", 0, "tail: the fixed hedge delay, a `DURATION` up to 1h (0: the service time's 95th percentile)")
	fs.Float64Var(&o.Tail.Quantile, "quantile", d.Quantile, "tail: the following delay's quantile `Q` of a client's recent answers (above 0, below 1)")
	fs.DurationVar(&o.Tail.MinDelay, "min-delay", d.MinDelay, "tail: the following delay's floor, a `DURATION` up to 1h")
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
	// The flags' names for budgetrange's arguments.
	flags := map[string]string{"ratio": "budget-ratio", "burst": "budget-burst", "percent": "budget-percent",
		"interval": "budget-interval", "minRetries": "budget-min-retries"}
	for _, p := range append(budgetrange.Token(o.BudgetRatio, int(o.BudgetBurst)),
		budgetrange.Window(o.BudgetPercent, time.Duration(o.BudgetInterval), int(o.BudgetMinRetries))...) {
		errs = append(errs, Option{flags[p.Arg], p.Rule})
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
	if !slices.Contains(Scenarios, o.Scenario) {
		errs = append(errs, Option{"scenario", "must be outage, contention, layers, collapse or tail, got " + echo.Quote(o.Scenario)})
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
	switch o.Scenario {
	case "collapse":
		errs = append(errs, o.checkCollapse()...)
	case "tail":
		errs = append(errs, o.checkTail()...)
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
		if !ok || slices.Contains(opt.scenarios, o.Scenario) || !slices.Contains(Scenarios, o.Scenario) {
			return
		}
		names := strings.Join(opt.scenarios, " and ")
		if n := len(opt.scenarios); n > 2 {
			names = strings.Join(opt.scenarios[:n-1], ", ") + " and " + opt.scenarios[n-1]
		}
		rule := "only the " + names + " scenario"
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

// collapseFlags are the flags of the collapse's settings, by the name
// fleet.Collapse's errors give them.
var collapseFlags = map[string]string{"Workers": "workers", "Service": "service", "Queue": "queue", "Rate": "rate",
	"Clients": "clients", "Timeout": "timeout", "Duration": "duration", "TriggerAt": "trigger-at", "Spike": "spike",
	"Drop": "drop", "FailShare": "fail-share", "MaxCalls": "max-runs", "HedgeDelay": "hedge-delay"}

// checkCollapse returns the collapse's option out of range, if any, named
// as a flag (the budgets' are checkBudgets').
func (o *SimulateOptions) checkCollapse() []Option {
	if _, err := retry.NewThrottle(o.Collapse.ThrottleK, o.Collapse.ThrottleWindow); err != nil {
		// The throttle's own rule, on its arguments k and window: the flags
		// throttle-k and throttle-window (their zero, a default in fleet, is
		// refused here as the throttle refuses it).
		why := err.Error()
		name, rule, _ := strings.Cut(why[strings.LastIndex(why, ": ")+2:], " ")
		return []Option{{"throttle-" + name, rule}}
	}
	err := o.CollapseOf(nil).Validate()
	if err == nil {
		return nil
	}
	field, rule, _ := strings.Cut(strings.TrimPrefix(err.Error(), "fleet: Collapse: "), " ")
	if strings.HasPrefix(rule, "must be set, or Drop, or FailShare") { // the one-trigger rule, in the flags' words
		return []Option{{"spike", "one trigger, --spike, --drop or --fail-share, not two or none"}}
	}
	if name, ok := collapseFlags[field]; ok {
		return []Option{{name, rule}}
	}
	return nil // a budget's, or the strategy's: said by their own checks
}

// CollapseOf is the collapse the options describe under strategy, or its
// default strategy when strategy is nil: its own options, and --rate,
// --clients and --duration when given (80, 10 and 5m unless), --seed, and
// the budgets' options for its token and windowed policies.
func (o *SimulateOptions) CollapseOf(strategy *retrypolicy.Strategy) fleet.Collapse {
	c := o.Collapse
	if strategy != nil {
		c.Strategy = *strategy
	}
	c.Seed, c.MaxCalls = o.Seed, int(o.MaxRuns)
	c.BudgetRatio, c.BudgetBurst = o.BudgetRatio, int(o.BudgetBurst)
	c.BudgetPercent, c.BudgetInterval, c.BudgetMinRetries = o.BudgetPercent, time.Duration(o.BudgetInterval), o.WindowMinRetries()
	if o.fs != nil {
		o.fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "rate":
				c.Rate = float64(o.Rate)
			case "clients":
				c.Clients = int(o.Clients)
			case "duration":
				c.Duration = time.Duration(o.Span)
			case "drop", "fail-share":
				c.Spike = 0 // the drop, or the failures, are the trigger
			}
		})
	}
	return c
}

// tailFlags are the flags of the tail's settings, by the name fleet.Tail's
// errors give them.
var tailFlags = map[string]string{"Workers": "workers", "Median": "median", "Sigma": "sigma", "SlowShare": "slow-share",
	"SlowExtra": "slow-extra", "Rate": "rate", "Clients": "clients", "Duration": "duration", "Attempts": "attempts",
	"Delay": "delay", "Quantile": "quantile", "MinDelay": "min-delay", "MaxCalls": "max-runs"}

// checkTail returns the tail's option out of range, if any, named as a
// flag.
func (o *SimulateOptions) checkTail() []Option {
	err := o.TailOf().Validate()
	if err == nil {
		return nil
	}
	field, rule, _ := strings.Cut(strings.TrimPrefix(err.Error(), "fleet: Tail: "), " ")
	if name, ok := tailFlags[field]; ok {
		return []Option{{name, rule}}
	}
	return []Option{{"scenario", err.Error()}} // not reached: every setting has its flag
}

// TailOf is the tail the options describe: its own options, and
// --workers, --rate, --clients and --duration when given (50, 500, 10 and
// 1m unless), --seed and --max-runs (the calls followed).
func (o *SimulateOptions) TailOf() fleet.Tail {
	t := o.Tail
	t.Seed, t.MaxCalls = o.Seed, int(o.MaxRuns)
	if o.fs != nil {
		o.fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "workers":
				t.Workers = o.Collapse.Workers
			case "rate":
				t.Rate = float64(o.Rate)
			case "clients":
				t.Clients = int(o.Clients)
			case "duration":
				t.Duration = time.Duration(o.Span)
			}
		})
	}
	return t
}

// Contention is the contention the options describe.
func (o *SimulateOptions) Contention() fleet.Contention {
	return fleet.Contention{Clients: int(o.Clients), Runs: int(o.Runs), Seed: o.Seed, MaxMessages: o.MaxMessages}
}
