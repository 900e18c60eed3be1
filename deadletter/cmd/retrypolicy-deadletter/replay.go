package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/retrypolicy/retrypolicy/queuekit"
)

// defineReplay defines replay's own flags.
func defineReplay(o *options) {
	r := &o.replay
	o.fs.StringVar(&r.stream, "stream", "", "JetStream: the stream the dead letters came from, and go back to (required)")
	o.fs.BoolVar(&r.resetAttempts, "reset-attempts", false, "River: start each job anew, its earlier failures forgotten")
	o.fs.Float64Var(&r.rate, "rate", 0, "dead letters sent a second (required)")
	o.fs.DurationVar(&r.jitter, "jitter", 0, "delay each send by a random part of this")
	o.fs.IntVar(&r.limit, "limit", 0, "send at most this many (0: every one selected)")
	o.fs.BoolVar(&r.dryRun, "dry-run", false, "say what would be sent; change nothing")
}

// runReplay sends the dead letters the filters select back, at a rate.
func runReplay(ctx context.Context, o *options, s source, stdout, stderr io.Writer) int {
	r := o.replay
	if err := (&queuekit.Pacing{Rate: r.rate, Jitter: r.jitter}).Check("ReplayOptions."); err != nil {
		return fail(stderr, invalid{errors.New("replay: " + flagOf(err.Error()))})
	}
	if r.limit < 0 {
		return fail(stderr, invalid{fmt.Errorf("replay: --limit: must not be negative, got %d", r.limit)})
	}
	r.each = func(res replayed) { printResult(stdout, stderr, o.json, res) }
	r.progress = func(p replayProgress) {
		if r.dryRun {
			return // not paced: it ends at once
		}
		left := ""
		if p.left >= 0 {
			left = fmt.Sprintf(", %d left to look at", p.left)
		}
		fmt.Fprintf(stderr, "replayed %d, refused %d, failed %d%s, %.1f a second, %s\n",
			p.replayed, p.refused, p.failed, left, p.rate, p.elapsed.Round(time.Second))
	}
	report, err := s.replay(ctx, r)
	if err != nil {
		status := fail(stderr, err)
		if report.matched > 0 && report.window > 0 {
			fmt.Fprintf(stderr, "interrupted: run it again within %s (the stream's duplicate window) and nothing is sent twice\n", report.window)
		}
		return status
	}
	if r.dryRun {
		fmt.Fprintf(stdout, "would replay %d of %d selected; refused %d\n", report.would, report.matched, report.refused)
	} else {
		fmt.Fprintf(stdout, "replayed %d (%d already sent by an interrupted replay), refused %d, failed %d, in %s\n",
			report.replayed+report.duplicates, report.duplicates, report.refused, report.failed, report.elapsed.Round(time.Millisecond))
	}
	if report.refused+report.failed > 0 {
		return exitFailed
	}
	return exitOK
}

// printResult prints what became of one dead letter: a line of text for
// those not replayed, or of JSON for each.
func printResult(stdout, stderr io.Writer, asJSON bool, r replayed) {
	switch {
	case asJSON:
		printJSON(stdout, stderr, r)
	case r.Outcome == "refused" || r.Outcome == "failed":
		fmt.Fprintf(stdout, "%s %d (%s): %s\n", r.Outcome, r.ID, from(r.row), r.Why)
	case r.Outcome == "would replay":
		fmt.Fprintf(stdout, "would replay %d (%s)\n", r.ID, from(r.row))
	}
}

// definePurge defines purge's own flag, and makes it refuse to run
// without a filter.
func definePurge(o *options) {
	o.fs.BoolVar(&o.all, "all", false, "purge every dead letter (a purge with no filter asks for it)")
	o.needFilter = true
}

// runPurge removes the dead letters the filters select, or all with --all.
func runPurge(ctx context.Context, o *options, s source, stdout, stderr io.Writer) int {
	n, err := s.purge(ctx)
	if err != nil {
		return fail(stderr, err)
	}
	fmt.Fprintf(stdout, "purged %d dead letters\n", n)
	return exitOK
}
