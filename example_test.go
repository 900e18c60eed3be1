package retrypolicy_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/retrypolicy/retrypolicy"
)

func ExampleDecide() {
	s, err := retrypolicy.Parse([]byte(`{"strategy":"bounded","max_attempts":5}`))
	if err != nil {
		panic(err)
	}
	last := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	in := retrypolicy.Input{
		// Four failures within the hour: the job owes 8 s.
		Failures: []time.Time{last.Add(-40 * time.Minute), last.Add(-10 * time.Minute), last.Add(-time.Minute), last},
		// Its last run lasted 10 s, which pays the 8 s step back.
		Uptime: 10 * time.Second,
	}
	for _, now := range []time.Time{last.Add(time.Second), last.Add(4 * time.Second)} {
		d, err := retrypolicy.Decide(s, in, now)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: n=%d owed=%v credited=%v due=%s\n", d.Action, d.Failures, d.Owed, d.Credited, d.Due.Format(time.TimeOnly))
	}

	// A fifth failure within the hour spends the budget.
	in.Failures = append(in.Failures, last.Add(30*time.Second))
	d, _ := retrypolicy.Decide(s, in, last.Add(time.Minute))
	fmt.Println(d.Action, d.Reason, d.Failures)
	// Output:
	// wait: n=4 owed=8s credited=4s due=15:00:04
	// retry_now: n=4 owed=8s credited=4s due=15:00:04
	// fatal attempts_exhausted 5
}

func ExampleParse() {
	s, err := retrypolicy.Parse([]byte(`{"strategy": "unless_stopped", "backoff": {"kind": "fixed", "base_delay_secs": 30}}`))
	fmt.Println(s.Kind, s.Backoff.Kind, s.Backoff.BaseDelay, err)

	_, err = retrypolicy.Parse([]byte(`{"strategy": "bounded", "backoff": {"kind": "exponential", "multiplier": -1}, "retries": 3}`))
	fmt.Println(errors.Is(err, retrypolicy.ErrInvalid))
	var ve *retrypolicy.ValidationError
	if errors.As(err, &ve) {
		for _, fe := range ve.Errors {
			fmt.Println(fe.Message())
		}
	}
	// Output:
	// unless_stopped fixed 30s <nil>
	// true
	// max_attempts: required when strategy is bounded
	// retries: unknown field
	// backoff.multiplier: must be greater than 0, got -1
}

func ExampleStrategy_MarshalJSON() {
	b, _ := retrypolicy.Default().MarshalJSON()
	fmt.Println(string(b))
	// Output:
	// {"strategy":"unless_stopped","backoff":{"kind":"exponential","base_delay_secs":1,"multiplier":2.0,"max_delay_secs":3600}}
}

func ExampleParseFlags() {
	s, err := retrypolicy.ParseFlags([]string{"--retry-strategy", "bounded", "--retry-max-attempts", "5", "--retry-max-delay-secs=60"})
	if err != nil {
		panic(err)
	}
	b, _ := s.MarshalJSON()
	fmt.Println(string(b))

	_, err = retrypolicy.ParseFlags([]string{"--retry-strategy", "unless_stopped", "--retry-max-attempts", "5"})
	fmt.Println(err)
	// Output:
	// {"strategy":"bounded","max_attempts":5,"window_secs":3600,"backoff":{"kind":"exponential","base_delay_secs":1,"multiplier":2.0,"max_delay_secs":60}}
	// retrypolicy: --retry-max-attempts is only valid when --retry-strategy=bounded
}

func ExampleBackoff_Credited() {
	b := retrypolicy.DefaultBackoff()
	for _, uptime := range []time.Duration{0, 10 * time.Second, 15 * time.Second} {
		fmt.Printf("owed %v, ran %v: waits %v\n", b.Delay(4), uptime, b.Credited(4, uptime))
	}
	// Output:
	// owed 8s, ran 0s: waits 8s
	// owed 8s, ran 10s: waits 4s
	// owed 8s, ran 15s: waits 1s
}

func ExampleNext() {
	status := retrypolicy.Status("") // not created yet
	for _, e := range []retrypolicy.Event{retrypolicy.EventCreated, retrypolicy.EventWorkerStarted, retrypolicy.EventFailedRetryably, retrypolicy.EventRetryDue} {
		next, err := retrypolicy.Next(status, e, false)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s -> %s on %s\n", status, next, e)
		status = next
	}
	_, err := retrypolicy.Next(retrypolicy.StatusStopped, retrypolicy.EventWorkerStarted, false)
	fmt.Println(err)
	// Output:
	// (none) -> SCHEDULED on created
	// SCHEDULED -> RUNNING on worker_started
	// RUNNING -> ERROR on failed_retryably
	// ERROR -> SCHEDULED on retry_due
	// retrypolicy: no transition from STOPPED on worker_started
}

func ExampleStep() {
	strategy := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3, Window: time.Hour, Backoff: retrypolicy.DefaultBackoff()}
	last := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	in := retrypolicy.Input{Failures: []time.Time{last.Add(-time.Minute), last}}
	for _, now := range []time.Time{last, last.Add(2 * time.Second)} {
		next, d, _ := retrypolicy.Step(strategy, retrypolicy.StatusError, in, now)
		fmt.Println(next, d.Due.Format(time.TimeOnly))
	}
	in.Failures = append(in.Failures, last.Add(time.Minute))
	next, d, _ := retrypolicy.Step(strategy, retrypolicy.StatusError, in, last.Add(time.Minute))
	fmt.Println(next, d.Reason)
	// Output:
	// ERROR 15:00:02
	// SCHEDULED 15:00:02
	// FATAL attempts_exhausted
}

func ExampleParentStatus() {
	fmt.Println(retrypolicy.ParentStatus([]retrypolicy.Status{retrypolicy.StatusCompleted, retrypolicy.StatusRunning}))
	fmt.Println(retrypolicy.ParentStatus([]retrypolicy.Status{retrypolicy.StatusCompleted, retrypolicy.StatusStopped}))
	fmt.Println(retrypolicy.ParentStatus([]retrypolicy.Status{retrypolicy.StatusFatal, retrypolicy.StatusCompleted}))
	// Output:
	// RUNNING
	// COMPLETED
	// FATAL
}
