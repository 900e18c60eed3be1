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

	"github.com/retrypolicy/retrypolicy/queuekit"
)

// prefix opens every error the command prints.
const prefix = "retrypolicy-deadletter: "

// call is one run of a command: its options, its dead letters, and
// where it prints.
type call struct {
	o              *options
	e              *engine
	stdout, stderr io.Writer
}

// start parses a command's arguments (at most o.most after the flags),
// checks every one, and only then opens the dead letters; on failure it
// returns the exit status.
func (o *options) start(ctx context.Context, args []string, stderr io.Writer) (e *engine, status int) {
	if err := o.parse(args, o.most); err != nil {
		switch {
		case errors.Is(err, flag.ErrHelp):
			return nil, exitOK
		case errors.As(err, new(invalid)):
			return nil, fail(stderr, err)
		}
		fmt.Fprintln(stderr, prefix+strings.TrimPrefix(o.fs.Name(), "retrypolicy-deadletter ")+": "+err.Error())
		return nil, exitInvalid
	}
	e, err := o.open(ctx)
	if err != nil {
		return nil, fail(stderr, err)
	}
	return e, -1
}

// fail prints err and returns its exit status: 2 for invalid arguments,
// else 1.
func fail(stderr io.Writer, err error) int {
	fmt.Fprintln(stderr, prefix+err.Error())
	if errors.As(err, new(invalid)) {
		return exitInvalid
	}
	return exitFailed
}

// text is a text read from a dead letter, as printed: its control
// characters escaped, so that it cannot drive the operator's terminal or
// forge a line.
func text(s string) string { return queuekit.Escape(s) }

// count prints how many dead letters the filters select, by reason:
// the first queuekit.MaxReasons reasons met, the rest as other.
func (c *call) count(ctx context.Context) int {
	o, e, stdout, stderr := c.o, c.e, c.stdout, c.stderr
	counts, err := e.letters.Count(ctx, e.filter)
	if err != nil {
		return fail(stderr, err)
	}
	if o.json {
		return printJSON(stdout, stderr, struct {
			Total    int            `json:"total"`
			ByReason map[string]int `json:"by_reason"`
			Other    int            `json:"other,omitempty"`
		}{counts.Total, counts.ByReason, counts.Other})
	}
	reasons := make([]string, 0, len(counts.ByReason))
	for r := range counts.ByReason {
		reasons = append(reasons, r)
	}
	slices.Sort(reasons)
	width := len(strconv.Itoa(counts.Total))
	for _, r := range reasons {
		fmt.Fprintf(stdout, "%*d  %s\n", width, counts.ByReason[r], shown(r))
	}
	if counts.Other > 0 {
		fmt.Fprintf(stdout, "%*d  (another of more than %d reasons)\n", width, counts.Other, queuekit.MaxReasons)
	}
	fmt.Fprintf(stdout, "%*d  in all\n", width, counts.Total)
	return exitOK
}

// shown is a reason as printed: "(none)" for a dead letter without one.
func shown(reason string) string {
	if reason == "" {
		return "(none)"
	}
	return text(reason)
}

// list prints the dead letters the filters select, oldest first.
func (c *call) list(ctx context.Context) int {
	o, e, stdout, stderr := c.o, c.e, c.stdout, c.stderr
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if !o.json {
		fmt.Fprintln(w, "ID\tGIVEN UP\tREASON\tFROM\tFAILURES\tERROR")
	}
	n := 0
	for l, err := range e.letters.List(ctx, e.filter) {
		if err != nil {
			w.Flush()
			return fail(stderr, err)
		}
		n++
		r := e.rowOf(l)
		if o.json {
			if status := printJSON(stdout, stderr, r); status != exitOK {
				return status
			}
			continue
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d\t%s\n", r.ID, r.GivenUp.Format(time.RFC3339), shown(r.Reason), text(from(r)), r.Failures, text(oneLine(r.Error, 60)))
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

// show prints one dead letter in full.
func (c *call) show(ctx context.Context) int {
	o, e, stdout, stderr := c.o, c.e, c.stdout, c.stderr
	id, err := strconv.ParseUint(o.fs.Arg(0), 10, 64)
	if err != nil || id == 0 {
		fmt.Fprintf(stderr, "%sshow: ID: %s is not a dead letter's id (its sequence, or its job's id)\n", prefix, queuekit.Quote(o.fs.Arg(0)))
		return exitInvalid
	}
	l, err := e.letters.Driver.Get(ctx, id)
	if err != nil {
		return fail(stderr, err)
	}
	f := full{row: e.rowOf(l), Header: l.Header, Payload: l.Payload}
	if o.json {
		return printJSON(stdout, stderr, f)
	}
	fmt.Fprintf(stdout, "id        %d\ngiven up  %s\nreason    %s\nfrom      %s\nfailures  %d\nerror     %s\n",
		f.ID, f.GivenUp.Format(time.RFC3339Nano), shown(f.Reason), text(from(f.row)), f.Failures, text(f.Error))
	if f.Stream != "" {
		fmt.Fprintf(stdout, "stream    %s\n", text(f.Stream))
	}
	names := make([]string, 0, len(f.Header))
	for h := range f.Header {
		names = append(names, h)
	}
	slices.Sort(names)
	fmt.Fprintln(stdout, "headers")
	for _, h := range names {
		for _, v := range f.Header[h] {
			fmt.Fprintf(stdout, "  %s: %s\n", text(h), text(v))
		}
	}
	fmt.Fprintf(stdout, "payload (%d bytes)\n%s\n", len(f.Payload), text(string(f.Payload)))
	return exitOK
}

// printJSON prints v as a line of JSON, with every character a terminal
// acts on escaped (queuekit.EscapeJSON).
func printJSON(stdout, stderr io.Writer, v any) int {
	b, err := json.Marshal(v)
	if err == nil {
		_, err = stdout.Write(append(queuekit.EscapeJSON(b), '\n'))
	}
	if err != nil {
		return fail(stderr, err)
	}
	return exitOK
}

// definePurge defines purge's own flag, and makes it refuse to run
// without a filter.
func definePurge(o *options) {
	o.fs.BoolVar(&o.all, "all", false, "purge every dead letter (a purge with no filter asks for it)")
	o.needFilter = true
}

// purge removes the dead letters the filters select, or all with --all.
func (c *call) purge(ctx context.Context) int {
	e, stdout, stderr := c.e, c.stdout, c.stderr
	n, err := e.letters.Purge(ctx, e.filter)
	if err != nil {
		return fail(stderr, err)
	}
	fmt.Fprintf(stdout, "purged %d dead letters\n", n)
	return exitOK
}
