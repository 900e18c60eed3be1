package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/retrypolicy/retrypolicy/internal/say"
	"github.com/retrypolicy/retrypolicy/internal/wire"
)

// MarshalJSON writes the report as the command's lint --json prints it:
// {"findings": [{"code", "severity", "message", "fix"}], "summary": {…}},
// the summary's durations in exact decimal seconds, and null for what does
// not happen (time_to_fatal_secs of a strategy that never gives up).
func (r Report) MarshalJSON() ([]byte, error) {
	findings := r.Findings
	if findings == nil {
		findings = []Finding{}
	}
	b, err := json.Marshal(findings)
	if err != nil {
		return nil, err
	}
	b = append([]byte(`{"findings":`), b...)
	s := r.Summary
	b = append(b, `,"summary":{"tick_secs":`...)
	b = wire.AppendSeconds(b, s.Tick)
	b = append(b, `,"time_to_fatal_secs":`...)
	b = appendSecondsOrNull(b, s.TimeToFatal, s.Fatal)
	b = append(b, `,"failures_to_fatal":`...)
	if s.Fatal {
		b = strconv.AppendInt(b, int64(s.FailuresToFatal), 10)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"longest_wait_secs":`...)
	b = wire.AppendSeconds(b, s.LongestWait)
	b = append(b, `,"longest_wait_at_failure":`...)
	b = strconv.AppendInt(b, int64(s.LongestAt), 10)
	b = append(b, `,"retries_first_hour":`...)
	b = strconv.AppendInt(b, int64(s.RetriesFirstHour), 10)
	b = append(b, `,"most_in_window":`...)
	b = strconv.AppendInt(b, int64(s.MostInWindow), 10)
	b = append(b, `,"first_step_uptime_secs":`...)
	b = appendSecondsOrNull(b, s.FirstStepUptime, s.FirstStepUptime >= 0)
	b = append(b, `,"settled":`...)
	b = strconv.AppendBool(b, s.Settled)
	b = append(b, `,"failures_followed":`...)
	b = strconv.AppendInt(b, int64(s.Failures), 10)
	return append(b, "}}"...), nil
}

// appendSecondsOrNull appends d in seconds when ok, else null.
func appendSecondsOrNull(b []byte, d time.Duration, ok bool) []byte {
	if !ok {
		return append(b, "null"...)
	}
	return wire.AppendSeconds(b, d)
}

// WriteTo writes the report for people, as the command's lint prints it:
// the strategy, the summary a line a figure, then each finding with its
// fix.
func (r Report) WriteTo(w io.Writer) (int64, error) {
	var b bytes.Buffer
	canonical, _ := r.Strategy.MarshalJSON()
	s := r.Summary
	under := "each retry exactly when due"
	if s.Tick > 0 {
		under = "a controller checks every " + say.Duration(s.Tick)
	}
	fmt.Fprintf(&b, "strategy: %s\nwhen every run crashes (%s):\n", canonical, under)
	fatal := "never"
	switch {
	case s.Fatal && s.FailuresToFatal == 1:
		fatal = "at the first failure"
	case s.Fatal:
		fatal = fmt.Sprintf("%s after the first failure, at failure %d", say.Duration(s.TimeToFatal), s.FailuresToFatal)
	}
	fmt.Fprintf(&b, "  gives up:            %s\n", fatal)
	if s.LongestAt > 0 {
		fmt.Fprintf(&b, "  longest wait:        %s, after failure %d\n", say.Duration(s.LongestWait), s.LongestAt)
	} else {
		fmt.Fprintf(&b, "  longest wait:        none: it never waits\n")
	}
	atLeast := ""
	if !s.Settled {
		atLeast = "at least "
	}
	fmt.Fprintf(&b, "  retries, first hour: %s%d\n", atLeast, s.RetriesFirstHour)
	fmt.Fprintf(&b, "  most in the window:  %s%d\n", atLeast, s.MostInWindow)
	switch {
	case s.FirstStepUptime == 0:
		fmt.Fprintf(&b, "  full uptime credit:  none needed: the longest wait is the first step\n")
	case s.FirstStepUptime > 0:
		fmt.Fprintf(&b, "  full uptime credit:  a run of %s brings the longest wait down to the first step\n", say.Duration(s.FirstStepUptime))
	}
	if len(r.Findings) == 0 {
		fmt.Fprintln(&b, "\nno findings")
	}
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "\n%s %s: %s\n  fix: %s\n", f.Severity, f.Code, f.Message, f.Fix)
	}
	return b.WriteTo(w)
}
