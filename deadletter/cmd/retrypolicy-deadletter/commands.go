package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/retrypolicy/retrypolicy/natsretry"
)

// prefix opens every error the command prints.
const prefix = "retrypolicy-deadletter: "

// start parses a command's arguments (at most most after the flags) and
// opens the dead-letter stream; on failure it returns the exit status.
func start(ctx context.Context, o *options, args []string, most int, stderr io.Writer) (d *natsretry.DeadLetters, f natsretry.Filter, done func(), status int) {
	if err := o.parse(args, most); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, f, nil, exitOK
		}
		fmt.Fprintln(stderr, prefix+o.fs.Name()[len("retrypolicy-deadletter "):]+": "+err.Error())
		return nil, f, nil, exitInvalid
	}
	f, err := o.filter()
	if err != nil {
		fmt.Fprintln(stderr, prefix+err.Error())
		return nil, f, nil, exitInvalid
	}
	d, _, done, err = o.open(ctx)
	if err != nil {
		fmt.Fprintln(stderr, prefix+err.Error())
		return nil, f, nil, exitFailed
	}
	return d, f, done, -1
}

// runCount prints how many dead letters the filters select, by reason.
func runCount(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
	o := newOptions(name, stderr)
	d, f, done, status := start(ctx, o, args, 0, stderr)
	if status >= 0 {
		return status
	}
	defer done()
	counts, err := d.Count(ctx, f)
	if err != nil {
		fmt.Fprintln(stderr, prefix+err.Error())
		return exitFailed
	}
	reasons := make([]string, 0, len(counts))
	total := 0
	for r, n := range counts {
		reasons = append(reasons, r)
		total += n
	}
	slices.Sort(reasons)
	if o.json {
		out := struct {
			Total    int            `json:"total"`
			ByReason map[string]int `json:"by_reason"`
		}{total, counts}
		return printJSON(stdout, stderr, out)
	}
	width := len(strconv.Itoa(total))
	for _, r := range reasons {
		fmt.Fprintf(stdout, "%*d  %s\n", width, counts[r], shown(r))
	}
	fmt.Fprintf(stdout, "%*d  in all\n", width, total)
	return exitOK
}

// shown is a reason as printed: "(none)" for a dead letter without one.
func shown(reason string) string {
	if reason == "" {
		return "(none)"
	}
	return reason
}

// runList prints the dead letters the filters select, oldest first.
func runList(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
	o := newOptions(name, stderr)
	d, f, done, status := start(ctx, o, args, 0, stderr)
	if status >= 0 {
		return status
	}
	defer done()
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if !o.json {
		fmt.Fprintln(w, "SEQUENCE\tGIVEN UP\tREASON\tSUBJECT\tFAILURES\tERROR")
	}
	n := 0
	for dl, err := range d.List(ctx, f) {
		if err != nil {
			w.Flush()
			fmt.Fprintln(stderr, prefix+err.Error())
			return exitFailed
		}
		n++
		if o.json {
			if s := printJSON(stdout, stderr, summaryOf(dl)); s != exitOK {
				return s
			}
			continue
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d\t%s\n", dl.Sequence, dl.Time.UTC().Format(time.RFC3339), shown(dl.Reason), dl.Subject, dl.Failures, oneLine(dl.Error, 60))
		if n%1000 == 0 {
			w.Flush() // a long listing prints as it goes
		}
	}
	w.Flush()
	if !o.json {
		fmt.Fprintf(stdout, "%d dead letters\n", n)
	}
	return exitOK
}

// oneLine is s on one line, cut to at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// summary is a dead letter as list --json prints it.
type summary struct {
	Sequence       uint64    `json:"sequence"`
	Time           time.Time `json:"time"`
	Reason         string    `json:"reason"`
	Subject        string    `json:"subject"`
	Stream         string    `json:"stream"`
	OriginSequence uint64    `json:"origin_sequence"`
	Failures       int       `json:"failures"`
	Error          string    `json:"error"`
	WaitAskedSecs  float64   `json:"wait_asked_secs,omitempty"`
}

func summaryOf(dl natsretry.DeadLetter) summary {
	return summary{Sequence: dl.Sequence, Time: dl.Time.UTC(), Reason: dl.Reason, Subject: dl.Subject, Stream: dl.Stream,
		OriginSequence: dl.OriginSequence, Failures: dl.Failures, Error: dl.Error, WaitAskedSecs: dl.WaitAsked.Seconds()}
}

// runShow prints one dead letter in full.
func runShow(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
	o := newOptions(name, stderr)
	d, _, done, status := start(ctx, o, args, 1, stderr)
	if status >= 0 {
		return status
	}
	defer done()
	seq, err := strconv.ParseUint(o.fs.Arg(0), 10, 64)
	if err != nil || seq == 0 {
		fmt.Fprintf(stderr, "%sshow: SEQUENCE: %q is not a dead letter's sequence (a whole number from 1)\n", prefix, o.fs.Arg(0))
		return exitInvalid
	}
	dl, err := d.Get(ctx, seq)
	if err != nil {
		fmt.Fprintln(stderr, prefix+err.Error())
		return exitFailed
	}
	if o.json {
		return printJSON(stdout, stderr, struct {
			summary
			Header map[string][]string `json:"header"`
			Data   []byte              `json:"data"`
		}{summaryOf(dl), dl.Header, dl.Data})
	}
	s := summaryOf(dl)
	fmt.Fprintf(stdout, "sequence  %d\ngiven up  %s\nreason    %s\nsubject   %s\nstream    %s (sequence %d)\nfailures  %d\nerror     %s\n",
		s.Sequence, s.Time.Format(time.RFC3339Nano), shown(s.Reason), s.Subject, s.Stream, s.OriginSequence, s.Failures, s.Error)
	names := make([]string, 0, len(dl.Header))
	for h := range dl.Header {
		names = append(names, h)
	}
	slices.Sort(names)
	fmt.Fprintln(stdout, "headers")
	for _, h := range names {
		for _, v := range dl.Header[h] {
			fmt.Fprintf(stdout, "  %s: %s\n", h, v)
		}
	}
	fmt.Fprintf(stdout, "payload (%d bytes)\n%s\n", len(dl.Data), dl.Data)
	return exitOK
}

// printJSON prints v as a line of JSON.
func printJSON(stdout, stderr io.Writer, v any) int {
	b, err := json.Marshal(v)
	if err == nil {
		_, err = stdout.Write(append(b, '\n'))
	}
	if err != nil {
		fmt.Fprintln(stderr, prefix+err.Error())
		return exitFailed
	}
	return exitOK
}
