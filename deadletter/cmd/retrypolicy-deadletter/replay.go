package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/retrypolicy/retrypolicy/natsretry"
)

// runReplay sends the dead letters the filters select back to the stream
// they came from, at a rate.
func runReplay(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
	o := newOptions(name, stderr)
	var ro natsretry.ReplayOptions
	o.fs.StringVar(&ro.Stream, "stream", "", "the stream the dead letters came from, and go back to (required)")
	o.fs.Float64Var(&ro.Rate, "rate", 0, "dead letters sent a second (required)")
	o.fs.DurationVar(&ro.Jitter, "jitter", 0, "delay each send by a random part of this")
	o.fs.IntVar(&ro.Limit, "limit", 0, "send at most this many (0: every one selected)")
	o.fs.BoolVar(&ro.DryRun, "dry-run", false, "say what would be sent; send and remove nothing")
	d, f, done, status := start(ctx, o, args, 0, stderr)
	if status >= 0 {
		return status
	}
	defer done()
	if ro.Stream == "" {
		fmt.Fprintln(stderr, prefix+"replay: --stream: the stream the dead letters came from is required (a dead letter's own headers are not trusted to say where to publish)")
		return exitInvalid
	}
	if ro.Rate <= 0 {
		fmt.Fprintln(stderr, prefix+"replay: --rate: dead letters a second is required, above 0")
		return exitInvalid
	}
	ro.Each = func(r natsretry.ReplayResult) { printResult(stdout, stderr, o.json, r) }
	ro.Progress = func(p natsretry.ReplayProgress) {
		fmt.Fprintf(stderr, "replayed %d, refused %d, failed %d, %d left to look at, %.1f a second, %s\n",
			p.Replayed, p.Refused, p.Failed, p.Left, p.Rate, p.Elapsed.Round(time.Second))
	}
	report, err := d.Replay(ctx, f, ro)
	if err != nil {
		fmt.Fprintln(stderr, prefix+flagOfReplay(err.Error()))
		if report.Matched > 0 {
			fmt.Fprintf(stderr, "interrupted: run it again within %s (the stream's duplicate window) and nothing is sent twice\n", report.DuplicateWindow)
		}
		return exitFailed
	}
	if ro.DryRun {
		fmt.Fprintf(stdout, "would replay %d of %d selected; refused %d\n", report.Would, report.Matched, report.Refused)
	} else {
		fmt.Fprintf(stdout, "replayed %d (%d already sent by an interrupted replay), refused %d, failed %d, in %s\n",
			report.Replayed+report.Duplicates, report.Duplicates, report.Refused, report.Failed, report.Elapsed.Round(time.Millisecond))
	}
	if report.Refused+report.Failed > 0 {
		return exitFailed
	}
	return exitOK
}

// flagOfReplay names ReplayOptions' fields in an error as their flags.
func flagOfReplay(msg string) string {
	for field, flag := range map[string]string{"ReplayOptions.Stream": "--stream", "ReplayOptions.Rate": "--rate",
		"ReplayOptions.Jitter": "--jitter", "ReplayOptions.Limit": "--limit"} {
		msg = strings.ReplaceAll(msg, field, flag)
	}
	return msg
}

// printResult prints what became of one dead letter: a line of text, or
// of JSON.
func printResult(stdout, stderr io.Writer, asJSON bool, r natsretry.ReplayResult) {
	if asJSON {
		out := struct {
			summary
			Outcome      natsretry.ReplayOutcome `json:"outcome"`
			SentSequence uint64                  `json:"sent_sequence,omitempty"`
			Why          string                  `json:"why,omitempty"`
		}{summary: summaryOf(r.DeadLetter), Outcome: r.Outcome, SentSequence: r.Sequence}
		if r.Err != nil {
			out.Why = r.Err.Error()
		}
		printJSON(stdout, stderr, out)
		return
	}
	switch r.Outcome {
	case natsretry.ReplayRefused, natsretry.ReplayFailed:
		fmt.Fprintf(stdout, "%s %d (%s): %v\n", r.Outcome, r.DeadLetter.Sequence, r.DeadLetter.Subject, r.Err)
	case natsretry.ReplayWould:
		fmt.Fprintf(stdout, "would replay %d to %s\n", r.DeadLetter.Sequence, r.DeadLetter.Subject)
	}
}

// runPurge removes the dead letters the filters select, or all with --all.
func runPurge(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
	o := newOptions(name, stderr)
	o.fs.BoolVar(&o.all, "all", false, "purge every dead letter (a purge with no filter asks for it)")
	o.needFilter = true
	d, f, done, status := start(ctx, o, args, 0, stderr)
	if status >= 0 {
		return status
	}
	defer done()
	n, err := d.Purge(ctx, f)
	if err != nil {
		fmt.Fprintln(stderr, prefix+err.Error())
		return exitFailed
	}
	fmt.Fprintf(stdout, "purged %d dead letters\n", n)
	return exitOK
}
