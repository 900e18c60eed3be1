package lifecycle_test

import (
	"fmt"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/lifecycle"
)

func ExampleNext() {
	var status lifecycle.Status // not created yet
	for _, e := range []lifecycle.Event{lifecycle.EventCreated, lifecycle.EventWorkerStarted, lifecycle.EventFailedRetryably, lifecycle.EventRetryDue} {
		next, err := lifecycle.Next(status, e, false)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(status, "->", next, "on", e)
		status = next
	}
	_, err := lifecycle.Next(lifecycle.StatusStopped, lifecycle.EventWorkerStarted, false)
	fmt.Println(err)
	// Output:
	// (none) -> SCHEDULED on created
	// SCHEDULED -> RUNNING on worker_started
	// RUNNING -> ERROR on failed_retryably
	// ERROR -> SCHEDULED on retry_due
	// lifecycle: no transition from STOPPED on worker_started
}

func ExampleLegal() {
	fmt.Println(lifecycle.Legal(lifecycle.StatusError, false))
	fmt.Println(lifecycle.Legal(lifecycle.StatusError, true))
	fmt.Println(lifecycle.Legal(lifecycle.StatusStopped, true))
	// Output:
	// [retry_due retries_exhausted stop_requested]
	// [retry_due retries_exhausted stop_requested trigger_fired]
	// [created_again]
}

// A controller keeps a History per job and steps each job in ERROR on the
// decision for its newest failure.
func ExampleStep() {
	strategy := retrypolicy.Default()
	strategy.Kind, strategy.MaxAttempts, strategy.Window = retrypolicy.Bounded, 3, time.Hour
	policy, err := retrypolicy.Compile(strategy) // one for every job of the strategy
	if err != nil {
		fmt.Println(err)
		return
	}
	job := retrypolicy.NewHistory(policy)
	last := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	_ = job.Record(last.Add(-time.Minute), 0)
	_ = job.Record(last, 0)
	for _, now := range []time.Time{last.Add(time.Second), last.Add(2 * time.Second)} {
		d, _ := job.Decide(0, now)
		next, e, _ := lifecycle.Step(lifecycle.StatusError, d)
		fmt.Println(next, e, d.Due.Format(time.TimeOnly))
	}
	_ = job.Record(last.Add(time.Minute), 0)
	d, _ := job.Decide(0, last.Add(time.Minute))
	next, e, _ := lifecycle.Step(lifecycle.StatusError, d)
	fmt.Println(next, e, d.Reason)
	// Output:
	// ERROR none 15:00:02
	// SCHEDULED retry_due 15:00:02
	// FATAL retries_exhausted attempts_exhausted
}

func ExampleParentStatus() {
	fmt.Println(lifecycle.ParentStatus([]lifecycle.Status{lifecycle.StatusCompleted, lifecycle.StatusRunning}))
	fmt.Println(lifecycle.ParentStatus([]lifecycle.Status{lifecycle.StatusCompleted, lifecycle.StatusStopped}))
	fmt.Println(lifecycle.ParentStatus([]lifecycle.Status{lifecycle.StatusFatal, lifecycle.StatusCompleted}))
	// Output:
	// RUNNING
	// COMPLETED
	// FATAL
}
