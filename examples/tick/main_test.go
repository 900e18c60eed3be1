package main

import (
	"os"
	"strings"
	"testing"

	"github.com/retrypolicy/retrypolicy/internal/readme"
)

// A bounded strategy of 3 failures under a minute's tick: the delays of
// 1 s and 2 s each wait for the next tick, and the third failure is fatal.
func Example_main() {
	main()
	// Output:
	// 15:00 job-42 ERROR: wait until 2026-11-02T15:00:01Z: failure 1 in the window owes 1s, 1s after uptime credit, plus 0s of jitter
	// 15:01 job-42 SCHEDULED: retry now: due at 2026-11-02T15:00:01Z: failure 1 in the window owes 1s, 1s after uptime credit, plus 0s of jitter
	// 15:02 job-42 SCHEDULED: retry now: due at 2026-11-02T15:01:02Z: failure 2 in the window owes 2s, 2s after uptime credit, plus 0s of jitter
	// 15:03 job-42 FATAL: fatal (attempts_exhausted) at failure 3 in the window
}

// TestTheREADMEShowsTheTick: the README's scheduler tick is this
// program's, as it is.
func TestTheREADMEShowsTheTick(t *testing.T) {
	if err := readme.Quotes("../../README.md", "main.go", "examples/tick/main.go"); err != nil {
		t.Error(err)
	}
	text, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	// The last line of Example_main's output, as the README quotes it.
	if !strings.Contains(string(text), "```\n15:03 job-42 FATAL: fatal (attempts_exhausted) at failure 3 in the window\n```") {
		t.Error("the README does not end the tick's run as the program does")
	}
}
