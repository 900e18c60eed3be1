package retry_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
)

// A call whose first attempt hangs is raced by a second, sent 10 ms after
// it: the second answers, the first is cancelled and waited for. The
// hedge is paid for from the budget, which the call then refills.
func ExampleWithHedging() {
	budget := retry.DefaultBudget()
	var sent atomic.Int32
	lookup := func(ctx context.Context) (string, error) {
		if sent.Add(1) == 1 {
			<-ctx.Done() // a slow replica; it returns once its context ends
			return "", ctx.Err()
		}
		return "answer", nil
	}
	s := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Second}}
	v, err := retry.Hedge(context.Background(), s, lookup,
		retry.WithHedging(retry.Hedging{Attempts: 2, Delay: 10 * time.Millisecond}),
		retry.WithBudget(budget),
		retry.WithEnd(func(e retry.End) {
			fmt.Printf("attempts %d, hedges %d, a hedge won: %v\n", e.Attempts, e.Hedges, e.HedgeWon)
		}))
	fmt.Println(v, err)
	fmt.Printf("budget %.1f of %d\n", budget.Tokens(), retry.DefaultBudgetBurst)
	// Output:
	// attempts 2, hedges 1, a hedge won: true
	// answer <nil>
	// budget 9.1 of 10
}
