package main

import (
	"context"
	"fmt"
	"time"

	"github.com/retrypolicy/retrypolicy/queuekit"
)

// defineReplay defines replay's own flags.
func defineReplay(o *options) {
	r := &o.replay
	o.replaying = true
	o.fs.StringVar(&r.stream, "stream", "", "JetStream: the stream the dead letters came from, and go back to (required)")
	o.fs.BoolVar(&r.resetAttempts, "reset-attempts", false, "River: start each job anew, its earlier failures forgotten")
	o.fs.Float64Var(&r.rate, "rate", 0, "dead letters sent a second (required)")
	o.fs.DurationVar(&r.jitter, "jitter", 0, "delay each send by a random part of this")
	o.fs.IntVar(&r.limit, "limit", 0, "send at most this many (0: every one selected)")
	o.fs.BoolVar(&r.dryRun, "dry-run", false, "say what would be sent; change nothing")
}

// replayed is what became of one dead letter, as printed.
type replayed struct {
	row
	Outcome string `json:"outcome"`
	// SentID is the message's sequence in its stream, or the id of the
	// job that runs again.
	SentID uint64 `json:"sent_id,omitempty"`
	Why    string `json:"why,omitempty"`
}

// replay sends the dead letters the filters select back, at a rate.
func (c *call) replay(ctx context.Context) int {
	o, e, stdout, stderr := c.o, c.e, c.stdout, c.stderr
	r := o.replay
	opts := queuekit.ReplayOptions{Route: e.route, Rate: r.rate, Jitter: r.jitter, Limit: r.limit, DryRun: r.dryRun,
		Each: func(res queuekit.ReplayResult) {
			out := replayed{row: e.rowOf(res.Letter), Outcome: string(res.Outcome), SentID: res.Sent.ID}
			if res.Err != nil {
				out.Why = res.Err.Error()
			}
			c.result(out)
		},
		Progress: func(p queuekit.ReplayProgress) {
			if r.dryRun {
				return // not paced: it ends at once
			}
			left := ""
			if p.Left >= 0 {
				left = fmt.Sprintf(", %d not yet read", p.Left)
			}
			fmt.Fprintf(stderr, "replayed %d, skipped %d, refused %d, failed %d%s, %.1f a second, %s\n",
				p.Replayed, p.Skipped, p.Refused, p.Failed, left, p.Rate, p.Elapsed.Round(time.Second))
		}}
	report, err := e.letters.Replay(ctx, e.filter, opts)
	if err != nil {
		status := fail(stderr, err)
		if report.Matched > 0 {
			fmt.Fprintln(stderr, "interrupted: run it again and nothing is sent twice (JetStream: within the work stream's duplicate window, 2 minutes by default)")
		}
		return status
	}
	if r.dryRun {
		fmt.Fprintf(stdout, "would replay %d of %d selected\n", report.Would, report.Matched)
	} else {
		fmt.Fprintf(stdout, "replayed %d (%d already sent by an interrupted replay), skipped %d (gone already), refused %d, failed %d, in %s\n",
			report.Replayed+report.Duplicates, report.Duplicates, report.Skipped, report.Refused, report.Failed, report.Elapsed.Round(time.Millisecond))
	}
	if report.Refused+report.Failed > 0 {
		return exitFailed
	}
	return exitOK
}

// result prints what became of one dead letter: a line of text for those
// not replayed, or of JSON for each.
func (c *call) result(r replayed) {
	stdout := c.stdout
	switch {
	case c.o.json:
		printJSON(stdout, c.stderr, r)
	case r.Outcome == string(queuekit.ReplayRefused) || r.Outcome == string(queuekit.ReplayFailed):
		fmt.Fprintf(stdout, "%s %d (%s): %s\n", r.Outcome, r.ID, text(from(r.row)), r.Why) // Why quotes what it holds from outside
	case r.Outcome == string(queuekit.ReplayWould):
		fmt.Fprintf(stdout, "would replay %d (%s)\n", r.ID, text(from(r.row)))
	}
}
