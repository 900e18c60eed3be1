// Command quickstart decides on a job that has failed four times within the hour.
//
// It reads a retry strategy descriptor, decides what to do with the job,
// and prints the decision.
//
//	go run ./examples/quickstart                  # the strategy below
//	go run ./examples/quickstart descriptor.json  # a descriptor of yours
package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/retrypolicy/retrypolicy"
)

const descriptor = `{
  "strategy": "bounded",
  "max_attempts": 5,
  "window_secs": 3600,
  "backoff": {"kind": "exponential_with_jitter", "base_delay_secs": 1, "multiplier": 2.0, "max_delay_secs": 60}
}`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the program, with its arguments and outputs as parameters so that
// the test can drive it; it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	doc := []byte(descriptor)
	if len(args) > 0 {
		var err error
		if doc, err = os.ReadFile(args[0]); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	strategy, err := retrypolicy.Parse(doc)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	canonical, _ := strategy.MarshalJSON()
	fmt.Fprintf(stdout, "strategy: %s\n\n", canonical)

	// A sample history: four failures within the hour, the last run 10 s long.
	last := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	failures := []time.Time{last.Add(-50 * time.Minute), last.Add(-20 * time.Minute), last.Add(-2 * time.Minute), last}
	uptime := 10 * time.Second
	seed := retrypolicy.SeedFromString("job-42")
	for _, after := range []time.Duration{time.Second, 10 * time.Second} {
		now := last.Add(after)
		d, err := retrypolicy.Decide(strategy, failures, uptime, seed, now)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		fmt.Fprintf(stdout, "at %s: %s\n", now.Format(time.TimeOnly), d.Action)
		if d.Action == retrypolicy.Fatal {
			fmt.Fprintf(stdout, "  reason %s, %d failures in the window\n", d.Reason, d.InWindow)
			continue
		}
		fmt.Fprintf(stdout, "  %d failures in the window, owed %v, a delay of %v after %v of uptime credit, jitter %v\n",
			d.InWindow, d.Owed, d.Delay, uptime, d.Jitter)
		fmt.Fprintf(stdout, "  due %s\n", d.Due.Format(time.RFC3339Nano))
	}
	return 0
}
