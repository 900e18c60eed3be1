package retry

import (
	"context"
	"errors"
	"math/bits"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrypolicy/retrypolicy"
)

// TestARetryAllocatesOnlyItsHistorysGrowth: the first try allocates
// its attempt's context alone; the first failure sets the loop up (its
// compiled strategy, History and timer, reused for every wait); after it,
// a retry allocates its own attempt's context (so that a report made
// through an earlier attempt's counts for none) and the History's room for
// failures, which doubles: n failures cost at most n-1 + ceil(log2 n)
// allocations more than one. (A retry had allocated 4 times, the errors.As
// targets escaping: 21 allocations for three failures; 10 before each
// retry had a context of its own, 13 since.)
func TestARetryAllocatesOnlyItsHistorysGrowth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}
		down := After(errors.New("down"), 0) // through the Retry-After lookup too
		calls, failures := 0, 0
		op := func(context.Context) (int, error) { // made once: only Do's own allocations are counted
			if calls++; calls <= failures {
				return 0, down
			}
			return 1, nil
		}
		allocs := func(n int) float64 {
			failures = n
			return testing.AllocsPerRun(5, func() {
				calls = 0
				_, _ = Do(context.Background(), s, op, WithJitterSeed(1))
			})
		}
		// The first try, measured directly: a helper's closures cost an
		// allocation of their own, which the comparisons below cancel out.
		// It allocates one object, the context it hands op (op's attempt,
		// which the layers under it report to).
		if a := testing.AllocsPerRun(5, func() { calls = 0; _, _ = Do(context.Background(), s, op, WithJitterSeed(1)) }); a != 1 {
			t.Fatalf("the first try allocated %v times, not once (its attempt's context)", a)
		}
		one := allocs(1)
		for _, n := range []int{2, 3, 4, 8, 33} {
			growth := bits.Len(uint(n - 1)) // ceil(log2 n)
			if a := allocs(n); a > one+float64(n-1+growth) {
				t.Errorf("%d failures: %v allocations, more than one failure's %v, %d attempts' contexts and %d for the History's growth", n, a, one, n-1, growth)
			}
		}
	})
}
