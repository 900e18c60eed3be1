package retrypolicy_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/retrypolicy/retrypolicy"
)

func ExampleDecide() {
	s, err := retrypolicy.Parse([]byte(`{"strategy":"bounded","max_attempts":5}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	last := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	// Four failures within the hour: the job owes 8 s. Its last run lasted
	// 10 s, which pays the 8 s step back.
	failures := []time.Time{last.Add(-40 * time.Minute), last.Add(-10 * time.Minute), last.Add(-time.Minute), last}
	uptime, seed := 10*time.Second, retrypolicy.SeedFromString("job-42")
	for _, now := range []time.Time{last.Add(time.Second), last.Add(4 * time.Second)} {
		d, err := retrypolicy.Decide(s, failures, uptime, seed, now)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: n=%d owed=%v credited=%v due=%s\n", d.Action, d.InWindow, d.Owed, d.Delay, d.Due.Format(time.TimeOnly))
	}

	// A fifth failure within the hour spends the budget.
	failures = append(failures, last.Add(30*time.Second))
	d, _ := retrypolicy.Decide(s, failures, 0, seed, last.Add(time.Minute))
	fmt.Println(d.Action, d.Reason, d.InWindow)
	// Output:
	// wait: n=4 owed=8s credited=4s due=15:00:04
	// retry_now: n=4 owed=8s credited=4s due=15:00:04
	// fatal attempts_exhausted 5
}

// The uptime credit, worked through: with the default backoff a job with 4
// failures in the window owes 8 s. Each step of the backoff is paid back by
// the last run's uptime, largest first, while the uptime covers it: 10 s pay
// the 8 and leave 2, short of the next step (4), so the job waits 4 s; 15 s
// pay 8, 4 and 2, and it waits 1 s, the first step, below which credit never
// goes. The cost does not grow with the number of failures.
func Example_uptimeCredit() {
	last := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	failures := []time.Time{last.Add(-3 * time.Second), last.Add(-2 * time.Second), last.Add(-time.Second), last}
	for _, uptime := range []time.Duration{0, 7999 * time.Millisecond, 10 * time.Second, 15 * time.Second, time.Hour} {
		d, _ := retrypolicy.Decide(retrypolicy.Default(), failures, uptime, 0, last)
		fmt.Printf("ran %v: owes %v, waits %v\n", uptime, d.Owed, d.Delay)
	}
	// Output:
	// ran 0s: owes 8s, waits 8s
	// ran 7.999s: owes 8s, waits 8s
	// ran 10s: owes 8s, waits 4s
	// ran 15s: owes 8s, waits 1s
	// ran 1h0m0s: owes 8s, waits 1s
}

func ExampleParse() {
	s, err := retrypolicy.Parse([]byte(`{"strategy": "unless_stopped", "backoff": {"kind": "fixed", "base_delay_secs": 30}}`))
	fmt.Println(s.Kind, s.Backoff.Kind, s.Backoff.BaseDelay, err)

	_, err = retrypolicy.Parse([]byte(`{"strategy": "bounded", "backoff": {"kind": "exponential", "multiplier": -1}, "retries": 3}`))
	fmt.Println(errors.Is(err, retrypolicy.ErrInvalid))
	var ve *retrypolicy.ValidationError
	if errors.As(err, &ve) {
		for _, fe := range ve.Errors {
			fmt.Printf("%s: %s (%q)\n", fe.Field, fe.Rule, fe.Value)
		}
	}
	// Output:
	// unless_stopped fixed 30s <nil>
	// true
	// max_attempts: required when strategy is bounded ("")
	// retries: unknown field ("")
	// backoff.multiplier: must be greater than 0 ("-1")
}

func ExampleStrategy_MarshalJSON() {
	b, _ := json.Marshal(retrypolicy.Default())
	fmt.Println(string(b))
	// Output:
	// {"strategy":"unless_stopped","backoff":{"kind":"exponential","base_delay_secs":1,"multiplier":2.0,"max_delay_secs":3600}}
}

func ExampleParseFlags() {
	s, err := retrypolicy.ParseFlags([]string{"--retry-strategy", "bounded", "--retry-max-attempts", "5", "--retry-max-delay-secs=60"})
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := s.MarshalJSON()
	fmt.Println(string(b))

	_, err = retrypolicy.ParseFlags([]string{"--retry-strategy", "unless_stopped", "--retry-max-attempts", "5", "--retry-bakoff", "fixed"})
	fmt.Println(err)
	// Output:
	// {"strategy":"bounded","max_attempts":5,"window_secs":3600,"backoff":{"kind":"exponential","base_delay_secs":1,"multiplier":2.0,"max_delay_secs":60}}
	// retrypolicy: --retry-bakoff: unknown flag; did you mean --retry-backoff?
	// retrypolicy: --retry-max-attempts is only valid when --retry-strategy=bounded
}

// A scheduler compiles each strategy once and decides with it on every
// controller tick.
func ExampleCompile() {
	policy, err := retrypolicy.Compile(retrypolicy.Strategy{
		Kind:    retrypolicy.UnlessStopped,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: 30 * time.Second, Multiplier: 2, MaxDelay: 10 * time.Minute},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	last := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	d, _ := policy.Decide([]time.Time{last.Add(-time.Minute), last}, 0, 0, last)
	fmt.Println(d.Action, d.Delay, d.Due.Format(time.TimeOnly))
	// Output:
	// wait 1m0s 15:01:00
}

// A History keeps a job's failures and its last run's uptime in memory:
// recording and deciding cost the same at a million failures as at one, and
// it saves itself as JSON.
func ExampleHistory() {
	var job retrypolicy.History // the zero History is under the Default strategy
	last := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	for _, ago := range []time.Duration{2 * time.Hour, 2 * time.Second, time.Second} {
		_ = job.Record(last.Add(-ago), 0)
	}
	_ = job.Record(last, 5*time.Second) // the last run lasted 5 s
	d, _ := job.Decide(0, last)
	fmt.Println(d.InWindow, d.Owed, d.Delay)

	saved, _ := json.Marshal(&job)
	fmt.Println(string(saved))
	// Output:
	// 3 4s 2s
	// {"failures":["2026-11-02T14:59:58Z","2026-11-02T14:59:59Z","2026-11-02T15:00:00Z"],"last_uptime_secs":5}
}

func ExampleDecision_MarshalJSON() {
	last := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	d, _ := retrypolicy.Decide(retrypolicy.Default(), []time.Time{last}, 0, 0, last)
	b, _ := json.Marshal(d)
	fmt.Println(string(b))

	logger := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey || a.Key == slog.LevelKey {
			return slog.Attr{}
		}
		return a
	}}))
	logger.Info("retry", "decision", d) // the same names, through LogValue
	// Output:
	// {"action":"wait","failures_in_window":1,"owed_secs":1,"delay_secs":1,"jitter_secs":0,"due":"2026-11-02T15:00:01.000000000Z"}
	// {"msg":"retry","decision":{"action":"wait","failures_in_window":1,"owed_secs":1,"delay_secs":1,"jitter_secs":0,"due":"2026-11-02T15:00:01.000000000Z"}}
}
