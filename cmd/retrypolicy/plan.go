package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/front/report"
	"github.com/retrypolicy/retrypolicy/internal/front/whatif"
	"github.com/retrypolicy/retrypolicy/internal/say"
)

// flagErrors words options' problems for the command, a line each.
func flagErrors(stderr io.Writer, cmd string, errs []whatif.Option) int {
	for _, err := range errs {
		fmt.Fprintf(stderr, "retrypolicy: %s: --%s (see retrypolicy %s --help)\n", cmd, err, cmd)
	}
	return exitInvalid
}

func (c stdio) runPlan(args []string) int {
	sc := c.subcommand("plan", "plan [--uptime DURATION] [--failures N] [--tick D] [--json] [--svg FILE] [FILE|-]", `Simulates a job that fails again and again under a strategy (FILE, - for standard input;
none: the default strategy), each run lasting --uptime, and prints a table of its failures
until it is fatal or has failed --failures times: each retry's due time, with the jitter at its
least, and when it runs, at the controller's first --tick at or after it; then what
retrypolicy lint finds in the strategy under the same tick.`)
	fs, stdout, stderr := sc.fs, c.stdout, c.stderr
	var o whatif.PlanOptions
	o.Define(fs)
	asJSON := fs.Bool("json", false, `print one JSON object: {"strategy", "uptime_secs", "tick_secs", "failures": [{"at_secs", "in_window", "owed_secs", "delay_secs", "due_secs", "retry_at_secs" or "fatal"}], "findings"}`)
	svgPath := fs.String("svg", "", "also write a timeline picture of the plan to the SVG file `FILE`")
	positional, stop := sc.parse(args, 1)
	if stop >= 0 {
		return stop
	}
	if errs := o.Check(); errs != nil {
		return flagErrors(stderr, "plan", errs)
	}
	if err := checkOutput(*svgPath); err != nil {
		fmt.Fprintln(stderr, "retrypolicy:", err)
		return exitIO
	}
	s := retrypolicy.Default()
	if len(positional) > 0 {
		in, err := sc.open(positional)
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
	steps, found, err := o.Run(context.Background(), s) // bounded: at most 1,000 steps, and lint's crash loop
	if err != nil {
		fmt.Fprintln(stderr, "retrypolicy:", err)
		return exitInvalid
	}
	p := report.Plan{Strategy: s, Uptime: time.Duration(o.Uptime), Tick: time.Duration(o.Tick), Steps: steps, Lint: found}
	if *asJSON {
		fmt.Fprintf(stdout, "%s\n", p.JSON())
	} else {
		writeTable(stdout, p)
		if len(found.Findings) > 0 {
			fmt.Fprintln(stdout, "\nwhen every run crashes (retrypolicy lint tells what to change):")
			for _, f := range found.Findings {
				fmt.Fprintf(stdout, "  %s %s: %s\n", f.Severity, f.Code, f.Message)
			}
		}
	}
	if *svgPath != "" {
		if err := os.WriteFile(*svgPath, p.SVG(0), 0o644); err != nil {
			fmt.Fprintln(stderr, "retrypolicy:", err)
			return exitIO
		}
	}
	return exitOK
}

// checkOutput returns the error that writing path would meet, before any
// work is done and anything printed: it opens the file for writing, and
// removes it when it was not there. An empty path is no output.
func checkOutput(path string) error {
	if path == "" {
		return nil
	}
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	f.Close()
	if errors.Is(statErr, fs.ErrNotExist) {
		os.Remove(path)
	}
	return nil
}

// writeTable prints plan's table: a row for each failure, the times since
// the first.
func writeTable(w io.Writer, p report.Plan) {
	s, steps := p.Strategy, p.Steps
	canonical, _ := s.MarshalJSON()
	fmt.Fprintf(w, "strategy: %s\nruns last %v each; %s; times are since the first failure\n", canonical, p.Uptime, report.TickText(p.Tick))
	if s.Backoff.Kind == retrypolicy.ExponentialWithJitter {
		fmt.Fprintln(w, "exponential_with_jitter: each retry here comes when due, without jitter; a real one comes up to a quarter of its delay later")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "failure\tat\tin window\towed\tdelay\tdue\tretry at\t")
	first := steps[0].Failure
	for i, st := range steps {
		d := st.Decision
		row := []string{fmt.Sprint(i + 1), since(first, st.Failure), fmt.Sprint(d.InWindow)}
		if d.Action == retrypolicy.Fatal {
			// The verdict follows the cells without being one, so that it
			// does not widen the columns.
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t\t\t\t\t  FATAL ("+d.Reason.String()+")")
			continue
		}
		row = append(row, say.Duration(d.Owed), say.Duration(d.Delay), since(first, d.Due), since(first, st.Retry))
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
}

// since shows t as an offset from the first failure.
func since(first, t time.Time) string { return "+" + say.Duration(t.Sub(first)) }
