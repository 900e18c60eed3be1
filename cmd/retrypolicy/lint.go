package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/front/whatif"
)

// exitWarnings is lint's exit status when it finds a warning.
const exitWarnings = 3

func (c stdio) runLint(args []string) int {
	sc := c.subcommand("lint", "lint [--tick D] [--json] [FILE|-]\n       retrypolicy lint [--tick D] [--json] --retry-strategy S [--retry-* …]", `Runs a strategy's crash loop (every run fails at once, each retry starts at the controller's
first --tick at or after its due time, without jitter) and prints what it does, and its traps,
each with what to change. The strategy is a
descriptor (FILE, - or no FILE for standard input), read as validate reads it, or ampctl-style
flags, read as flags reads them; invalid input prints its problems and exits 2.

Exit status: 0 when it finds no warning (info findings allowed), 3 when it finds one, 2 for
invalid input, 1 for I/O errors.`)
	fs, stdout, stderr := sc.fs, c.stdout, c.stderr
	asJSON := fs.Bool("json", false, `print one JSON object: {"findings": [{"code", "severity", "message", "fix"}], "summary": {…}}`)
	var o whatif.TickOption
	o.Define(fs, "")
	build := retrypolicy.RegisterFlags(fs)
	positional, stop := sc.parse(args, 1)
	if stop >= 0 {
		return stop
	}
	if errs := o.Check(); errs != nil {
		return flagErrors(stderr, "lint", errs)
	}
	fromFlags := false
	fs.Visit(func(f *flag.Flag) { fromFlags = fromFlags || strings.HasPrefix(f.Name, "retry-") })
	var s retrypolicy.Strategy
	var err error
	switch {
	case fromFlags && len(positional) > 0:
		fmt.Fprintf(stderr, "retrypolicy: lint: takes a FILE or --retry-* flags, not both (see retrypolicy lint --help)\n")
		return exitInvalid
	case fromFlags:
		s, err = build()
	default:
		in, openErr := sc.open(positional)
		if openErr != nil {
			fmt.Fprintln(stderr, "retrypolicy:", openErr)
			return exitIO
		}
		s, err = parseStrategy(in)
		in.Close()
	}
	if err != nil {
		return printProblems(stderr, err)
	}
	found, err := o.Lint(context.Background(), s) // bounded: MaxFailures failures
	if err != nil {
		return printProblems(stderr, err)
	}
	if *asJSON {
		b, _ := json.Marshal(found)
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		found.WriteTo(stdout)
	}
	if found.Warnings() > 0 {
		return exitWarnings
	}
	return exitOK
}
