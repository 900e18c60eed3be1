package retry

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestBudgetBoundsRetriesOverAnyPrefix pins the token budget's promise:
// over any prefix of a sequence of calls starting, calls ending well or
// badly, and retries, the retries it allows are at most burst + ratio ×
// calls that ended well, and it refuses a retry only when the tokens left
// are short of one. A call that starts or ends badly deposits nothing.
func TestBudgetBoundsRetriesOverAnyPrefix(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ratio := rapid.Float64Range(0, 2).Draw(t, "ratio")
		burst := rapid.IntRange(1, 20).Draw(t, "burst")
		b, err := NewBudget(ratio, burst)
		require.NoError(t, err)
		well, retries := 0, 0
		for range rapid.IntRange(1, 500).Draw(t, "steps") {
			switch rapid.IntRange(0, 3).Draw(t, "step") {
			case 0:
				b.Start()
			case 1:
				b.Deposit() // a call that ended well
				well++
			case 2:
				// a call that ended badly: nothing to tell
			case 3:
				left := b.Tokens()
				granted := b.Withdraw()
				if granted {
					retries++
				}
				if granted != (left >= 1) {
					t.Fatalf("Withdraw said %v with %v tokens left", granted, left)
				}
			}
			if bound := float64(burst) + ratio*float64(well); float64(retries) > bound+1e-9 {
				t.Fatalf("%d retries after %d calls that ended well: more than %v", retries, well, bound)
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
// dependency that always fails make at most burst retries in all (no call
// ends well, so nothing refills it), and those denied one give up with
// BudgetExhausted. Until only calls that ended well deposited, each
// failing call added ratio, and retrying went on as long as calls came.
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
		assert.Equal(t, 5, calls-callers, "the burst, and nothing more")
		assert.Equal(t, callers, exhausted, "every call ends at a retry refused, those granted one included")
	})
}

// TestWhatEndsACallWell: a token budget gets a deposit from a call whose
// last attempt succeeded, or failed with an error marked Permanent (an
// answer); none from one given up on a transient failure, a failure
// marked PermanentFailure (the dependency's), the caller's cancellation,
// or a context error the operation returned.
func TestWhatEndsACallWell(t *testing.T) {
	once := retrypolicy.Strategy{Kind: retrypolicy.None}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		well bool
	}{
		{"success", context.Background(), nil, true},
		{"Permanent", context.Background(), Permanent(errors.New("404")), true},
		{"a transient failure", context.Background(), errFlaky, false},
		{"PermanentFailure", context.Background(), PermanentFailure(errors.New("503 to a POST")), false},
		{"PermanentFailure over Permanent", context.Background(), PermanentFailure(Permanent(errors.New("shed"))), false},
		{"the operation's context.Canceled", context.Background(), context.Canceled, false},
		{"Permanent(context.DeadlineExceeded)", context.Background(), Permanent(context.DeadlineExceeded), false},
		{"the caller's cancellation", canceled, nil, false},
	} {
		b, err := NewBudget(0.5, 1)
		require.NoError(t, err)
		require.True(t, b.Withdraw())
		_, _ = Do(c.ctx, once, func(context.Context) (int, error) { return 0, c.err }, WithBudget(b))
		want := 0.0
		if c.well {
			want = 0.5
		}
		assert.Equal(t, want, b.Tokens(), c.name)
	}
}

// TestTokensSaysWhatIsLeft: a budget starts at its burst, a retry takes a
// token, a call that ended well gives ratio back, and the burst is the
// most it holds.
func TestTokensSaysWhatIsLeft(t *testing.T) {
	b, err := NewBudget(0.25, 2)
	require.NoError(t, err)
	assert.Equal(t, 2.0, b.Tokens())
	require.True(t, b.Withdraw())
	assert.Equal(t, 1.0, b.Tokens())
	b.Start()
	assert.Equal(t, 1.0, b.Tokens(), "a call's start deposits nothing")
	b.Deposit()
	assert.Equal(t, 1.25, b.Tokens())
	for range 10 {
		b.Deposit()
	}
	assert.Equal(t, 2.0, b.Tokens(), "never more than the burst")
}

// TestWindowBudgetSlotBoundaries pins where a windowed budget's slots fall
// on the monotonic clock, from its creation: over 10 s (slots of 1 s), a
// call made at the start counts until 1 ns before its slot ages out, at
// 10 s, and not from then on.
func TestWindowBudgetSlotBoundaries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		before, err := NewWindowBudget(100, 10*time.Second, 0)
		require.NoError(t, err)
		at, err := NewWindowBudget(100, 10*time.Second, 0)
		require.NoError(t, err)
		assert.Zero(t, before.Tokens(), "no call yet: no retry")
		before.Start()
		at.Start()
		assert.Equal(t, 1.0, before.Tokens(), "one call at 100%: one retry")

		time.Sleep(10*time.Second - 1) // the last nanosecond of slot 9: slot 0 still counts
		assert.Equal(t, 1.0, before.Tokens())
		assert.True(t, before.Withdraw(), "granted 1 ns before the call's slot ages out")
		assert.False(t, before.Withdraw(), "one retry for one call")

		time.Sleep(time.Nanosecond) // slot 10: slot 0 has aged out
		assert.Zero(t, at.Tokens())
		assert.False(t, at.Withdraw(), "the call aged out: no retry")
		assert.Zero(t, before.Tokens(), "its retry aged out with its call")
	})
}

// TestWindowBudgetTakesItsClock drives a windowed budget with times of
// its caller's, far from the machine's clock and with no monotonic
// reading: its slots count from the first time given (not its creation),
// a time earlier than the latest counts as the latest, and a call ages out
// when the slot 10 after its own begins. Outside synctest a budget that
// read the clock would see none of these times.
func TestWindowBudgetTakesItsClock(t *testing.T) {
	b, err := NewWindowBudget(100, 10*time.Second, 0)
	require.NoError(t, err)
	t0 := time.Date(2001, 2, 3, 4, 5, 6, 500_000_000, time.UTC) // the origin: mid-second
	assert.Zero(t, b.TokensAt(t0), "no call yet")
	b.StartAt(t0)
	b.StartAt(t0.Add(-time.Hour)) // before the latest: counted at the latest
	assert.Equal(t, 1.0, b.TokensAt(t0), "two calls at 100%: a bound of 2, paced at 1 a slot")
	assert.True(t, b.WithdrawAt(t0.Add(999*time.Millisecond)), "still slot 0 from the origin")
	assert.False(t, b.WithdrawAt(t0.Add(999*time.Millisecond)), "the pace: 1 a slot")
	assert.True(t, b.WithdrawAt(t0.Add(time.Second)), "slot 1 begins a second after the origin")
	assert.False(t, b.WithdrawAt(t0), "an earlier time counts in slot 1, which has granted its one")
	assert.Zero(t, b.TokensAt(t0.Add(5*time.Second)), "the bound of 2 granted")
	assert.Zero(t, b.TokensAt(t0.Add(10*time.Second)), "slot 10: slot 0's calls aged out, and with them the bound")
}

// TestDefaultBudgetIsTheDocumentedOne: DefaultBudget is a full token
// budget of 10 that a call that ended well refills by a tenth, each call
// a new one.
func TestDefaultBudgetIsTheDocumentedOne(t *testing.T) {
	b := DefaultBudget()
	assert.Equal(t, 10.0, b.Tokens(), "full, at its burst")
	for range 10 {
		require.True(t, b.Withdraw())
	}
	assert.False(t, b.Withdraw(), "its burst spent")
	for range 10 {
		b.Deposit()
	}
	assert.InDelta(t, 1.0, b.Tokens(), 1e-9, "ten calls that ended well: one retry")
	assert.Equal(t, 10.0, DefaultBudget().Tokens(), "a new budget each call")
}

// TestWindowBudgetFollowsTheLoad: at 20% over 10 s with at least 2
// retries, a budget allows 2 retries with no load, 20 for 100 calls in the
// window, paced at 2 a second (a tenth of the bound in each slot), and 2
// again once those calls have aged out: a healthy hour is not saved up for
// the next outage, as a token bucket's burst is.
func TestWindowBudgetFollowsTheLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := NewWindowBudget(20, 10*time.Second, 2)
		require.NoError(t, err)
		assert.Equal(t, 1.0, b.Tokens(), "the minimum of 2, paced: 1 a slot")
		for range 100 {
			b.Start()
		}
		assert.Equal(t, 2.0, b.Tokens(), "20 in the window, 2 a slot")
		b.Deposit() // a windowed budget ignores deposits
		assert.Equal(t, 2.0, b.Tokens())
		var perSlot []int
		for range 10 {
			granted := 0
			for b.Withdraw() {
				granted++
			}
			perSlot = append(perSlot, granted)
			time.Sleep(time.Second)
		}
		assert.Equal(t, []int{2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, perSlot, "20 over the window, 2 a second")
		time.Sleep(time.Hour)
		assert.Equal(t, 1.0, b.Tokens(), "after an hour: the minimum, paced, nothing saved up")
	})
}

// TestWindowBudgetUnderManyGoroutines: 64 goroutines calling and asking for
// retries at once, on one windowed budget, never get more retries than its
// bound at the moment of the last grant: within one window (the clock does
// not move), max(minRetries, floor(percent/100 × calls)).
func TestWindowBudgetUnderManyGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := NewWindowBudget(20, time.Minute, 5)
		require.NoError(t, err)
		var calls, granted atomic.Int64
		var wg sync.WaitGroup
		for g := range 64 {
			wg.Go(func() {
				for i := range 1000 {
					if (i+g)%3 == 0 {
						b.Start()
						calls.Add(1)
						continue
					}
					if b.Withdraw() {
						granted.Add(1)
					}
				}
			})
		}
		wg.Wait()
		bound := max(5, calls.Load()*20/100)
		assert.LessOrEqual(t, granted.Load(), bound, "%d calls", calls.Load())
		assert.Positive(t, granted.Load())
	})
}

// TestWindowBudgetBoundsDo: a windowed budget shared by Do calls against a
// dependency that is down: each call is counted at its start, each retry
// asks for a grant, and a refused one gives the call up BudgetExhausted.
func TestWindowBudgetBoundsDo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := NewWindowBudget(10, 10*time.Second, 3)
		require.NoError(t, err)
		s := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}
		calls, exhausted := 0, 0
		for range 50 {
			_, err := Do(context.Background(), s, func(context.Context) (int, error) { calls++; return 0, errors.New("down") }, WithBudget(b))
			if ge, ok := errors.AsType[*GiveUpError](err); ok && ge.Reason == BudgetExhausted {
				exhausted++
			}
		}
		// 50 calls within a millisecond or so, all in the first slot: the
		// bound is the minimum of 3, then 4 and 5 as 10% of the calls
		// reach them, but the pace is ceil(bound/10) = 1 a slot: the first
		// call's first retry is the one granted, and every call gives up
		// at a retry refused.
		assert.Equal(t, 50+1, calls)
		assert.Equal(t, 50, exhausted)
	})
}

func TestWindowBudgetRefusesBadSettings(t *testing.T) {
	_, err := NewWindowBudget(120, time.Second, 0)
	assert.EqualError(t, err, "retrypolicy: NewWindowBudget: percent must be between 0 and 100, got 120")
	_, err = NewWindowBudget(20, 0, 0)
	assert.EqualError(t, err, "retrypolicy: NewWindowBudget: interval must be between 1ms and 1h, got 0s")
	_, err = NewWindowBudget(20, time.Second, -1)
	assert.EqualError(t, err, "retrypolicy: NewWindowBudget: minRetries must be between 0 and 1000000000, got -1")
}

// sink keeps the benchmarks' results alive.
var sink atomic.Int64

// BenchmarkBudget: a call (a token budget's Deposit, a windowed budget's
// Start) and a grant (Withdraw) of each, beside one time.Now, which the
// windowed budget reads once a call or grant. Its target: a call or a
// grant at most one time.Now plus 15 ns, with 0 allocations. Each budget
// is made never to run dry within a run (a billion tokens, a minimum of a
// billion retries), so that every grant is granted; the windowed one's
// pace (a tenth of its bound a slot) is a hundred million.
func BenchmarkBudget(b *testing.B) {
	kinds := []struct {
		name string
		make func() (*Budget, error)
		call func(*Budget)
	}{
		{"token", func() (*Budget, error) { return NewBudget(1000, 1e9) }, (*Budget).Deposit},
		{"window", func() (*Budget, error) { return NewWindowBudget(100, time.Hour, 1e9) }, (*Budget).Start},
	}
	b.Run("part=time.Now", func(b *testing.B) {
		b.ReportAllocs()
		var n int64
		for b.Loop() {
			n += time.Now().UnixNano()
		}
		sink.Add(n)
	})
	for _, k := range kinds {
		b.Run("part="+k.name+"-call", func(b *testing.B) {
			budget, err := k.make()
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				k.call(budget)
			}
		})
		b.Run("part="+k.name+"-grant", func(b *testing.B) {
			budget, err := k.make()
			require.NoError(b, err)
			b.ReportAllocs()
			var n int64
			for b.Loop() {
				if budget.Withdraw() {
					n++
				}
			}
			sink.Add(n)
		})
	}
}
