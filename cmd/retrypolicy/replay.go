package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/retrypolicy/retrypolicy/attemptlog"
	"github.com/retrypolicy/retrypolicy/fleet"
	"github.com/retrypolicy/retrypolicy/internal/front/report"
	"github.com/retrypolicy/retrypolicy/internal/front/whatif"
)

// replayUsage and replayHelp are replay's usage line and its help.
const (
	replayUsage = `replay [--tick D] [--max-runs N] [--json] [--svg FILE] LOG|- [STRATEGY.json …]`
	replayHelp  = `Replays the failures an attempt log records under other strategies: what each would have
done with the same jobs through the same outages. LOG (- for standard input) is JSON Lines,
one attempt a line in any order:

  {"job": "id", "started_at": RFC 3339, "ended_at": RFC 3339, "outcome": "succeeded" | "failed"}

with an optional "jitter_seed" (a string, or an unsigned integer); other fields are ignored.
Each attempt observes the dependency at its start, up if it succeeded and down if it failed;
in between it is as last observed. Each job with a failure starts when it did and is retried
by the library under each strategy and the controller's --tick (ticks from the Unix epoch): an
attempt while down fails after the job's median failed attempt, one while up succeeds. A job
whose next attempt would start over a day after the log's last line is unfinished. Without a
strategy: the default and Amp's four example strategies. A bad line is an error that
names its number and field, and nothing is replayed; a line over 1 MiB is refused. The log is
read once, in 370 to 510 bytes a line at the peak of reading (the more, the more of its lines
are jobs of their own). A replay's memory grows with the log's jobs, not the time it spans.

Prints, for the log as recorded and each strategy, the attempts (in all, while down, and the
most in a minute while down), the jobs completed, FATAL (and of those, completed in reality)
and unfinished, and the time from the dependency's recovery to each completion. --svg draws
the attempts a minute over time, one line a strategy, the down stretches shaded.`
)

// maxReplayed is the most attempts --max-runs allows a replay.
const maxReplayed = 100_000_000

func (c stdio) runReplay(args []string) int {
	sc := c.subcommand("replay", replayUsage, replayHelp)
	fs, stdout, stderr := sc.fs, c.stdout, c.stderr
	var o whatif.ReplayOptions
	o.Define(fs)
	asJSON := fs.Bool("json", false, `print one JSON object a line: the log as recorded ("strategy": "recorded"), then each strategy`)
	svgPath := fs.String("svg", "", "also draw the attempts a minute over time to the SVG file `FILE`")
	positional, stop := sc.parse(args, 65)
	if stop >= 0 {
		return stop
	}
	if len(positional) == 0 {
		fmt.Fprintln(stderr, "retrypolicy: replay: give the attempt log, LOG or - (see retrypolicy replay --help)")
		return exitInvalid
	}
	if errs := o.Check(maxReplayed); errs != nil {
		return flagErrors(stderr, "replay", errs)
	}
	if err := checkOutput(*svgPath); err != nil {
		fmt.Fprintln(stderr, "retrypolicy:", err)
		return exitIO
	}
	log, candidates, code := sc.replayInputs(positional)
	if code >= 0 {
		return code
	}
	rr, err := o.Run(context.Background(), log, candidates) // bounded: --max-runs attempts each
	if err != nil {
		fmt.Fprintln(stderr, "retrypolicy: replay:", strings.TrimPrefix(err.Error(), "fleet: "))
		return exitInvalid
	}
	shown := report.Replay{Log: log, Tick: time.Duration(o.Tick), Replayed: rr}
	if *asJSON {
		for i, r := range rr.Results {
			fmt.Fprintf(stdout, "%s\n", report.ReplayJSON(rr.Names[i], r, i > 0))
		}
	} else {
		shown.Write(stdout)
	}
	if *svgPath != "" {
		if err := os.WriteFile(*svgPath, shown.Chart(), 0o644); err != nil {
			fmt.Fprintln(stderr, "retrypolicy:", err)
			return exitIO
		}
	}
	return exitOK
}

// replayInputs reads the log (the first of positional) and the candidate
// strategies (the rest; none: the documented ones). It returns the exit
// status to stop with, or -1.
func (sc subcommand) replayInputs(positional []string) (*fleet.Log, []whatif.Named, int) {
	stderr := sc.stderr
	if slices.Contains(positional[1:], "-") {
		fmt.Fprintln(stderr, "retrypolicy: replay: a strategy comes from a file; only the log may be - (standard input)")
		return nil, nil, exitInvalid
	}
	candidates, code := readStrategies(positional[1:], sc.stdin, stderr, sc.fs)
	if code >= 0 {
		return nil, nil, code
	}
	if len(candidates) == 0 {
		candidates = whatif.DocumentedStrategies()
	}
	in, err := sc.open(positional[:1])
	if err != nil {
		fmt.Fprintln(stderr, "retrypolicy:", err)
		return nil, nil, exitIO
	}
	log, err := fleet.ReadLog(in)
	in.Close()
	if err != nil {
		fmt.Fprintln(stderr, "retrypolicy: replay:", strings.TrimPrefix(err.Error(), "fleet: ReadLog: "))
		if _, bad := errors.AsType[*attemptlog.LineError](err); bad {
			return nil, nil, exitInvalid
		}
		return nil, nil, exitIO // the log could not be read: a directory, a failing disk
	}
	return log, candidates, -1
}
