// Command tick is a scheduler's controller tick, once a minute.
//
// On each tick it decides, for every job in ERROR, to retry it now, let it
// wait or give it up.
package main

import (
	"fmt"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/lifecycle"
)

// job is what the scheduler keeps of a job: its status and its failures.
type job struct {
	id      string
	status  lifecycle.Status
	history *retrypolicy.History // the failures in its strategy's window
}

// tick moves each job in ERROR on: SCHEDULED when its retry is due, FATAL
// when its strategy gives up; one not due yet stays for a later tick.
func tick(jobs []*job, now time.Time) {
	for _, j := range jobs {
		if j.status != lifecycle.StatusError {
			continue
		}
		d, err := j.history.Decide(retrypolicy.SeedFromString(j.id), now)
		if err != nil {
			continue // no failure recorded: nothing to decide
		}
		j.status, _, _ = lifecycle.Step(j.status, d)
		fmt.Printf("%s %s %s: %v\n", now.Format("15:04"), j.id, j.status, d)
	}
}

func main() {
	policy, _ := retrypolicy.Compile(retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3})
	start := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	j := &job{id: "job-42", status: lifecycle.StatusError, history: retrypolicy.NewHistory(policy)}
	_ = j.history.Record(start, 0) // its first run crashed as it started
	for now := start; j.status != lifecycle.StatusFatal; now = now.Add(time.Minute) {
		tick([]*job{j}, now)
		if j.status == lifecycle.StatusScheduled { // it runs, and crashes again
			_ = j.history.Record(now, 0)
			j.status = lifecycle.StatusError
		}
	}
}
