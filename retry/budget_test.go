package retry

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestBudgetBoundsRetriesOverAnyPrefix pins the budget's promise: over any
// prefix of a sequence of calls and retries, the retries it allows are at
// most burst + ratio × calls, and it refuses a retry only when the tokens
// left are short of one.
func TestBudgetBoundsRetriesOverAnyPrefix(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ratio := rapid.Float64Range(0, 2).Draw(t, "ratio")
		burst := rapid.IntRange(1, 20).Draw(t, "burst")
		b, err := NewBudget(ratio, burst)
		require.NoError(t, err)
		calls, retries := 0, 0
		for i := range rapid.IntRange(1, 500).Draw(t, "steps") {
			_ = i
			if rapid.Bool().Draw(t, "call") {
				b.deposit()
				calls++
				continue
			}
			if b.withdraw() {
				retries++
			}
			if bound := float64(burst) + ratio*float64(calls); float64(retries) > bound+1e-9 {
				t.Fatalf("%d retries after %d calls: more than %v", retries, calls, bound)
			}
		}
	})
}

func TestBudgetRefusesBadSettings(t *testing.T) {
	for _, tc := range []struct {
		ratio float64
		burst int
		want  string
	}{
		{-0.1, 1, "retrypolicy: NewBudget: ratio must be between 0 and 1000, got -0.1"},
		{0.1, 0, "retrypolicy: NewBudget: burst must be between 1 and 1000000000, got 0"},
		{2000, 1, "retrypolicy: NewBudget: ratio must be between 0 and 1000, got 2000"},
		{1, 2e9, "retrypolicy: NewBudget: burst must be between 1 and 1000000000, got 2000000000"},
	} {
		_, err := NewBudget(tc.ratio, tc.burst)
		assert.EqualError(t, err, tc.want, "%v", tc)
	}
}

// TestBudgetStopsARetryStorm: many calls sharing a budget against a
// dependency that always fails make at most burst + ratio × calls retries
// in all, and those denied one give up with BudgetExhausted.
func TestBudgetStopsARetryStorm(t *testing.T) {
	const callers = 50
	b, err := NewBudget(0.1, 5)
	require.NoError(t, err)
	bubble(t, func() {
		var wg sync.WaitGroup
		var mu sync.Mutex
		calls, exhausted := 0, 0
		s := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 4, Window: time.Hour, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 10 * time.Millisecond}}
		for range callers {
			wg.Go(func() {
				_, err := Do(context.Background(), s, func(context.Context) (int, error) {
					mu.Lock()
					calls++
					mu.Unlock()
					return 0, errFlaky
				}, WithBudget(b))
				var gu *GiveUpError
				if errors.As(err, &gu) && gu.Reason == BudgetExhausted {
					mu.Lock()
					exhausted++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		retries := calls - callers
		assert.LessOrEqual(t, float64(retries), 5+0.1*callers)
		assert.Positive(t, exhausted)
	})
}

// TestTokensSaysWhatIsLeft: a budget starts at its burst, a retry takes a
// token, a call gives ratio back, and the burst is the most it holds.
func TestTokensSaysWhatIsLeft(t *testing.T) {
	b, err := NewBudget(0.25, 2)
	require.NoError(t, err)
	assert.Equal(t, 2.0, b.Tokens())
	require.True(t, b.withdraw())
	assert.Equal(t, 1.0, b.Tokens())
	b.deposit()
	assert.Equal(t, 1.25, b.Tokens())
	for range 10 {
		b.deposit()
	}
	assert.Equal(t, 2.0, b.Tokens(), "never more than the burst")
}
