package queuekit_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/queuekit"
	"github.com/retrypolicy/retrypolicy/retry"
)

// An adapter settles a failed run in one call and acts on what it returns:
// here a run whose server asked for 90 s, beyond the strategy's 10 s.
func ExampleSettle() {
	policies, err := queuekit.NewPolicies(queuekit.Config{Default: retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 10 * time.Second}}})
	if err != nil {
		panic(err)
	}
	failed := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	runErr := retry.After(errors.New("429 Too Many Requests"), 90*time.Second)
	s := queuekit.Settle(queuekit.Failure{
		Policy:   policies.Kind("email"),
		Failures: make([]int64, 0, 1), // the job's record holds none yet
		Ended:    failed,
		Seed:     queuekit.Seed(42),
		Marks:    retry.ReadMarks(runErr),
		Limit:    policies.WaitLimit("email"),
	})
	fmt.Println(s.Action, s.Due.Sub(failed), len(s.Kept))
	// Output: wait 1m30s 1
}
