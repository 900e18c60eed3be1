package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/wire"
	"github.com/retrypolicy/retrypolicy/plan"
)

// planStart is the fixed instant a plan starts from, so that its output is
// the same on every run.
var planStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Bounds of plan's options: a picture of at most a few hundred KB.
const (
	maxPlanFailures = 1000
	maxPlanUptime   = 1e9 // seconds
)

// seconds is a flag of seconds (90, 1.5) or of a Go duration (1m30s).
type seconds time.Duration

func (v *seconds) String() string {
	if *v == 0 {
		return "0"
	}
	return time.Duration(*v).String()
}

func (v *seconds) Set(text string) error {
	if secs, err := strconv.ParseFloat(text, 64); err == nil && !math.IsNaN(secs) && !math.IsInf(secs, 0) {
		if math.Abs(secs) > maxPlanUptime {
			return errors.New("must be between 0 and 1e9 seconds")
		}
		*v = seconds(secs * float64(time.Second))
		return nil
	}
	d, err := time.ParseDuration(text)
	if err != nil {
		return errors.New("must be seconds (90, 1.5) or a duration (1m30s)")
	}
	*v = seconds(d)
	return nil
}

// wholeNumber is a flag of a whole number.
type wholeNumber int

func (v *wholeNumber) String() string { return strconv.Itoa(int(*v)) }

func (v *wholeNumber) Set(text string) error {
	n, err := strconv.Atoi(text)
	if err != nil {
		return errors.New("must be a whole number")
	}
	*v = wholeNumber(n)
	return nil
}

// option is a problem with one option: a flag of the command, or a query
// parameter of the server's.
type option struct{ name, rule string }

func (e option) Error() string { return e.name + ": " + e.rule }

// flagErrors words options' problems for the command, a line each.
func flagErrors(stderr io.Writer, cmd string, errs []option) int {
	for _, err := range errs {
		fmt.Fprintf(stderr, "retrypolicy: %s: --%s (see retrypolicy %s --help)\n", cmd, err, cmd)
	}
	return exitInvalid
}

// planOptions are plan's options: flags of the command, query parameters
// of the server's /v1/plan.
type planOptions struct {
	uptime seconds
	count  wholeNumber
}

func (o *planOptions) define(fs *flag.FlagSet) {
	fs.Var(&o.uptime, "uptime", "how long each run lasts before it fails, a `DURATION`: seconds (90, 1.5) or Go's form (1m30s),\nup to 1e9 s; 0, the default, is a job that crashes as it starts")
	o.count = 12
	fs.Var(&o.count, "failures", "how many failures to simulate at most, `N` from 1 to 1000")
}

// check returns the options out of range.
func (o *planOptions) check() []option {
	var errs []option
	if o.uptime < 0 || time.Duration(o.uptime) > maxPlanUptime*time.Second {
		errs = append(errs, option{"uptime", fmt.Sprintf("must be between 0 and 1e9 seconds, got %v", time.Duration(o.uptime))})
	}
	if o.count < 1 || o.count > maxPlanFailures {
		errs = append(errs, option{"failures", fmt.Sprintf("must be between 1 and %d, got %d", maxPlanFailures, o.count)})
	}
	return errs
}

// run returns the plan of s and what lint finds in it.
func (o *planOptions) run(s retrypolicy.Strategy) ([]plan.Step, plan.Report, error) {
	steps, err := plan.Timeline(s, planStart, time.Duration(o.uptime), int(o.count))
	if err != nil {
		return nil, plan.Report{}, err
	}
	report, err := plan.Lint(s)
	return steps, report, err
}

func runPlan(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("plan", "plan [--uptime DURATION] [--failures N] [--json] [--svg FILE] [FILE|-]", `Simulates a job that fails again and again under a strategy (FILE, - for standard input;
none: the default strategy), each run lasting --uptime, retried exactly when due, and prints
a table of its failures until it is fatal or has failed --failures times, each retry when
due with the jitter at its least, then what retrypolicy lint finds in the strategy.`, stderr)
	var o planOptions
	o.define(fs)
	asJSON := fs.Bool("json", false, `print one JSON object: {"strategy", "uptime_secs", "failures": [{"at_secs", "in_window", "owed_secs", "credited_secs", "retry_at_secs" or "fatal"}], "findings"}`)
	svgPath := fs.String("svg", "", "also write a timeline picture of the plan to the SVG file `FILE`")
	positional, stop := parseArgs(fs, args, stdout, stderr, 1)
	if stop >= 0 {
		return stop
	}
	if errs := o.check(); errs != nil {
		return flagErrors(stderr, "plan", errs)
	}
	s := retrypolicy.Default()
	if len(positional) > 0 {
		in, err := openInput(positional, stdin)
		if err != nil {
			fmt.Fprintln(stderr, "retrypolicy:", err)
			return exitIO
		}
		s, err = parseStrategy(in)
		in.Close()
		if err != nil {
			return printProblems(stderr, err)
		}
	}
	steps, report, err := o.run(s)
	if err != nil {
		fmt.Fprintln(stderr, "retrypolicy:", err)
		return exitInvalid
	}
	uptime := time.Duration(o.uptime)
	if *asJSON {
		fmt.Fprintf(stdout, "%s\n", planJSON(s, uptime, steps, report))
	} else {
		writeTable(stdout, s, uptime, steps)
		if len(report.Findings) > 0 {
			fmt.Fprintln(stdout, "\nwhen every run crashes (retrypolicy lint tells what to change):")
			for _, f := range report.Findings {
				fmt.Fprintf(stdout, "  %s %s: %s\n", f.Severity, f.Code, f.Message)
			}
		}
	}
	if *svgPath != "" {
		if err := os.WriteFile(*svgPath, timeline(s, uptime, steps), 0o644); err != nil {
			fmt.Fprintln(stderr, "retrypolicy:", err)
			return exitIO
		}
	}
	return exitOK
}

// planJSON is plan --json: the strategy, the uptime, each failure with
// its times since the first, and lint's findings.
func planJSON(s retrypolicy.Strategy, uptime time.Duration, steps []plan.Step, report plan.Report) []byte {
	canonical, _ := s.MarshalJSON()
	b := append([]byte(`{"strategy":`), canonical...)
	b = wire.AppendSeconds(append(b, `,"uptime_secs":`...), uptime)
	b = append(b, `,"failures":[`...)
	first := steps[0].Failure
	for i, st := range steps {
		if i > 0 {
			b = append(b, ',')
		}
		d := st.Decision
		b = wire.AppendSeconds(append(b, `{"at_secs":`...), st.Failure.Sub(first))
		b = strconv.AppendInt(append(b, `,"in_window":`...), int64(d.InWindow), 10)
		if d.Action == retrypolicy.Fatal {
			b = append(append(append(b, `,"fatal":"`...), d.Reason.String()...), `"}`...)
			continue
		}
		b = wire.AppendSeconds(append(b, `,"owed_secs":`...), d.Owed)
		b = wire.AppendSeconds(append(b, `,"credited_secs":`...), d.Delay)
		b = wire.AppendSeconds(append(b, `,"retry_at_secs":`...), d.Due.Sub(first))
		b = append(b, '}')
	}
	findings, _ := json.Marshal(report.Findings)
	if report.Findings == nil {
		findings = []byte("[]")
	}
	b = append(append(b, `],"findings":`...), findings...)
	return append(b, '}')
}

func writeTable(w io.Writer, s retrypolicy.Strategy, uptime time.Duration, steps []plan.Step) {
	canonical, _ := s.MarshalJSON()
	fmt.Fprintf(w, "strategy: %s\nruns last %v each; times are since the first failure\n", canonical, uptime)
	if s.Backoff.Kind == retrypolicy.ExponentialWithJitter {
		fmt.Fprintln(w, "exponential_with_jitter: each retry here comes when due, without jitter; a real one comes up to a quarter of its delay later")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "failure\tat\tin window\towed\tcredited\tretry at\t")
	first := steps[0].Failure
	for i, st := range steps {
		d := st.Decision
		row := []string{fmt.Sprint(i + 1), since(first, st.Failure), fmt.Sprint(d.InWindow)}
		if d.Action == retrypolicy.Fatal {
			// The verdict follows the cells without being one, so that it
			// does not widen the columns.
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t\t\t\t  FATAL ("+d.Reason.String()+")")
			continue
		}
		row = append(row, show(d.Owed), show(d.Delay), since(first, d.Due))
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
}

// since shows t as an offset from the first failure.
func since(first, t time.Time) string { return "+" + show(t.Sub(first)) }

// show rounds a duration to the millisecond for the table.
func show(d time.Duration) string {
	if d >= time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.String()
}
