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
)

// prefix opens every error the command prints.
const prefix = "retrypolicy-deadletter: "

// start parses a command's arguments (at most most after the flags) and
// opens the dead letters; on failure it returns the exit status.
func start(ctx context.Context, o *options, args []string, most int, stderr io.Writer) (s source, status int) {
	if err := o.parse(args, most); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, exitOK
		}
		fmt.Fprintln(stderr, prefix+strings.TrimPrefix(o.fs.Name(), "retrypolicy-deadletter ")+": "+err.Error())
		return nil, exitInvalid
	}
	s, err := o.open(ctx)
	if err != nil {
		return nil, fail(stderr, err)
	}
	return s, -1
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

// runCount prints how many dead letters the filters select, by reason.
func runCount(ctx context.Context, o *options, s source, stdout, stderr io.Writer) int {
	counts, err := s.count(ctx)
	if err != nil {
		return fail(stderr, err)
	}
	reasons := make([]string, 0, len(counts))
	total := 0
	for r, n := range counts {
		reasons = append(reasons, r)
		total += n
	}
	slices.Sort(reasons)
	if o.json {
		return printJSON(stdout, stderr, struct {
			Total    int            `json:"total"`
			ByReason map[string]int `json:"by_reason"`
		}{total, counts})
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
func runList(ctx context.Context, o *options, s source, stdout, stderr io.Writer) int {
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if !o.json {
		fmt.Fprintln(w, "ID\tGIVEN UP\tREASON\tFROM\tFAILURES\tERROR")
	}
	n := 0
	for r, err := range s.list(ctx) {
		if err != nil {
			w.Flush()
			return fail(stderr, err)
		}
		n++
		if o.json {
			if status := printJSON(stdout, stderr, r); status != exitOK {
				return status
			}
			continue
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d\t%s\n", r.ID, r.GivenUp.Format(time.RFC3339), shown(r.Reason), from(r), r.Failures, oneLine(r.Error, 60))
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

// from is where a dead letter came from: its subject, or its job's kind.
func from(r row) string {
	if r.Kind != "" {
		return r.Kind
	}
	return r.Subject
}

// oneLine is s on one line, cut to at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// runShow prints one dead letter in full.
func runShow(ctx context.Context, o *options, s source, stdout, stderr io.Writer) int {
	id, err := strconv.ParseUint(o.fs.Arg(0), 10, 64)
	if err != nil || id == 0 {
		fmt.Fprintf(stderr, "%sshow: ID: %q is not a dead letter's id (its sequence, or its job's id)\n", prefix, o.fs.Arg(0))
		return exitInvalid
	}
	f, err := s.show(ctx, id)
	if err != nil {
		return fail(stderr, err)
	}
	if o.json {
		return printJSON(stdout, stderr, f)
	}
	fmt.Fprintf(stdout, "id        %d\ngiven up  %s\nreason    %s\nfrom      %s\nfailures  %d\nerror     %s\n",
		f.ID, f.GivenUp.Format(time.RFC3339Nano), shown(f.Reason), from(f.row), f.Failures, f.Error)
	if f.Stream != "" {
		fmt.Fprintf(stdout, "stream    %s\n", f.Stream)
	}
	names := make([]string, 0, len(f.Header))
	for h := range f.Header {
		names = append(names, h)
	}
	slices.Sort(names)
	fmt.Fprintln(stdout, "headers")
	for _, h := range names {
		for _, v := range f.Header[h] {
			fmt.Fprintf(stdout, "  %s: %s\n", h, v)
		}
	}
	fmt.Fprintf(stdout, "payload (%d bytes)\n%s\n", len(f.Payload), f.Payload)
	return exitOK
}

// printJSON prints v as a line of JSON.
func printJSON(stdout, stderr io.Writer, v any) int {
	b, err := json.Marshal(v)
	if err == nil {
		_, err = stdout.Write(append(b, '\n'))
	}
	if err != nil {
		return fail(stderr, err)
	}
	return exitOK
}
