package plan_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/plan"
)

// The default strategy's waits never reach its one-hour cap: its window
// forgets the first failures first, and the waits cycle.
func ExampleLint() {
	report, err := plan.Lint(context.Background(), retrypolicy.Default())
	if err != nil {
		panic(err)
	}
	fmt.Println(report.Summary.LongestWait, report.Warnings())
	for _, f := range report.Findings {
		fmt.Println(f.Severity, f.Code)
	}
	// Output:
	// 34m8s 0
	// info window-forgets
}

// A bounded strategy whose window can never hold max_attempts failures
// never gives up: Lint says so, and what would.
func ExampleReport_WriteTo() {
	s := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5, Window: time.Minute,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 30 * time.Second}}
	report, _ := plan.Lint(context.Background(), s)
	report.WriteTo(os.Stdout)
	// Output:
	// strategy: {"strategy":"bounded","max_attempts":5,"window_secs":60,"backoff":{"kind":"fixed","base_delay_secs":30}}
	// when every run crashes (each retry exactly when due):
	//   gives up:            never
	//   longest wait:        30s, after failure 1
	//   retries, first hour: 119
	//   most in the window:  3
	//   full uptime credit:  none needed: the longest wait is the first step
	//
	// warning never-fatal: bounded never gives up when every run crashes: its 1m window holds at most 3 failures, short of max_attempts 5, so it retries forever as unless_stopped does
	//   fix: a window of at least 120s (window_secs 120) holds 5 failures; or set max_attempts to at most 3, or shorten the delays
}

// A job whose runs last 10 s before they fail: each run pays back the
// backoff's steps from the largest while it covers them, so the job owing
// 8 s waits 4 s, and from 16 s on the runs pay nothing.
func ExampleTimeline() {
	start := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	steps, _ := plan.Timeline(retrypolicy.Default(), start, 10*time.Second, 6)
	for _, st := range steps {
		fmt.Println(st.Failure.Sub(start), st.Decision.InWindow, st.Decision.Owed, st.Decision.Delay)
	}
	// Output:
	// 10s 1 1s 1s
	// 21s 2 2s 1s
	// 32s 3 4s 1s
	// 43s 4 8s 4s
	// 57s 5 16s 16s
	// 1m23s 6 32s 32s
}

// Amp's controller looks for failed jobs once a minute. Five failures
// in a minute's window then never happen: the job retries a minute apart
// for ever, though with each retry exactly when due it gives up 15 s in.
func ExampleWithTick() {
	s := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5, Window: time.Minute}
	due, _ := plan.Lint(context.Background(), s)
	ticked, _ := plan.Lint(context.Background(), s, plan.WithTick(time.Minute))
	fmt.Println(due.Summary.Fatal, due.Summary.TimeToFatal)
	fmt.Println(ticked.Summary.Fatal, ticked.Summary.LongestWait, ticked.Findings[0].Code)
	// Output:
	// true 15s
	// false 1m0s never-fatal
}
