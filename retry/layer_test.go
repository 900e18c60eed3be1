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
)

// three is a strategy of 3 attempts, a millisecond apart.
var three = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3,
	Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}

var errDown = errors.New("the bottom is down")

// nest runs depth loops of s nested in one another (depth 3: three loops) around a bottom that
// always fails, each with opts, and returns the calls each level saw (the
// bottom's last) and the top's error.
func nest(ctx context.Context, depth int, s retrypolicy.Strategy, opts ...Option) ([]int, error) {
	calls := make([]int, depth+1)
	var level func(ctx context.Context, i int) error
	level = func(ctx context.Context, i int) error {
		calls[i]++
		if i == depth {
			return errDown
		}
		_, err := Do(ctx, s, func(ctx context.Context) (int, error) { return 0, level(ctx, i+1) }, opts...)
		return err
	}
	_, err := Do(ctx, s, func(ctx context.Context) (int, error) { return 0, level(ctx, 1) }, opts...)
	return calls, err
}

// TestNestedLoopsRetryAtOneLayer: three loops of 3 attempts nested in one
// another make 3 calls at the bottom, not 27; each loop above the lowest
// sees one call and gives up RetriedBelow, its Failures its own attempts,
// its error unwrapping to the failure. With WithNestedRetries at every
// layer they make 27, as before.
func TestNestedLoopsRetryAtOneLayer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls, err := nest(context.Background(), 3, three)
		assert.Equal(t, []int{0, 1, 1, 3}, calls, "the bottom is called 3 times; each loop above it once")
		ge, ok := errors.AsType[*GiveUpError](err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, RetriedBelow, ge.Reason)
		assert.Equal(t, 1, ge.Failures, "the top loop's own attempts")
		assert.ErrorIs(t, err, errDown)

		calls, err = nest(context.Background(), 3, three, WithNestedRetries())
		assert.Equal(t, []int{0, 3, 9, 27}, calls)
		ge, _ = errors.AsType[*GiveUpError](err)
		assert.Equal(t, AttemptsExhausted, ge.Reason)
	})
}

// TestASingleAttemptBelowIsRetriedAbove: a loop below that makes one
// attempt (a none strategy) and gives up does not report, so the loop
// above retries it; a permanent error below stops the loop above as
// NotRetryable.
func TestASingleAttemptBelowIsRetriedAbove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		none := retrypolicy.Strategy{Kind: retrypolicy.None}
		bottom := 0
		_, err := Do(context.Background(), three, func(ctx context.Context) (int, error) {
			return Do(ctx, none, func(context.Context) (int, error) { bottom++; return 0, errDown })
		})
		assert.Equal(t, 3, bottom)
		ge, _ := errors.AsType[*GiveUpError](err)
		assert.Equal(t, AttemptsExhausted, ge.Reason)

		bottom = 0
		_, err = Do(context.Background(), three, func(ctx context.Context) (int, error) {
			return Do(ctx, three, func(context.Context) (int, error) { bottom++; return 0, Permanent(errDown) })
		})
		assert.Equal(t, 1, bottom)
		ge, _ = errors.AsType[*GiveUpError](err)
		assert.Equal(t, NotRetryable, ge.Reason)
	})
}

// TestABudgetRefusalBelowReports: a loop below whose budget refuses its
// first retry gives up after one attempt and still reports, as its budget
// speaks for the dependency: the loop above gives up RetriedBelow.
func TestABudgetRefusalBelowReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		empty, err := NewBudget(0.1, 1)
		require.NoError(t, err)
		require.True(t, empty.Withdraw())
		outer := 0
		_, err = Do(context.Background(), three, func(ctx context.Context) (int, error) {
			outer++
			_, err := Do(ctx, three, func(context.Context) (int, error) { return 0, errDown }, WithBudget(empty))
			ge, _ := errors.AsType[*GiveUpError](err)
			assert.Equal(t, BudgetExhausted, ge.Reason)
			return 0, err
		})
		assert.Equal(t, 1, outer)
		ge, _ := errors.AsType[*GiveUpError](err)
		assert.Equal(t, RetriedBelow, ge.Reason)
	})
}

// TestConcurrentLoopsInOneAttempt: two loops below, run at once in one
// attempt, each give up after retrying; either report marks the attempt.
func TestConcurrentLoopsInOneAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var bottom atomic.Int32
		outer := 0
		_, err := Do(context.Background(), three, func(ctx context.Context) (int, error) {
			outer++
			var wg sync.WaitGroup
			for range 2 {
				wg.Go(func() {
					Do(ctx, three, func(context.Context) (int, error) { bottom.Add(1); return 0, errDown })
				})
			}
			wg.Wait()
			return 0, errDown
		})
		assert.Equal(t, 1, outer)
		assert.Equal(t, int32(6), bottom.Load())
		ge, _ := errors.AsType[*GiveUpError](err)
		assert.Equal(t, RetriedBelow, ge.Reason)
	})
}

// TestAReportLeftBehindCountsForNone: a loop started in the first attempt
// and left running reports after that attempt returned, while the second
// runs: its report counts for neither, and the loop above goes on
// retrying by its strategy.
func TestAReportLeftBehindCountsForNone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3,
			Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 5 * time.Second}}
		var leftBehind sync.WaitGroup
		var reported atomic.Bool
		outer := 0
		_, err := Do(context.Background(), slow, func(ctx context.Context) (int, error) {
			outer++
			if outer == 1 {
				// Gives up after two attempts 6 s apart: at 6 s, inside
				// the second attempt (from 5 s to 7 s).
				leftBehind.Go(func() {
					Do(ctx, retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 2, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 6 * time.Second}},
						func(context.Context) (int, error) { return 0, errDown })
					reported.Store(true)
				})
				return 0, errDown
			}
			if outer == 2 {
				time.Sleep(2 * time.Second)
				assert.True(t, reported.Load(), "the loop left behind gave up during the second attempt")
			}
			return 0, errDown
		})
		leftBehind.Wait()
		assert.Equal(t, 3, outer)
		ge, _ := errors.AsType[*GiveUpError](err)
		assert.Equal(t, AttemptsExhausted, ge.Reason, "not RetriedBelow")
	})
}

// TestTheContextComesFirst: when the caller's context ends while a loop
// below waits, the loop below gives up ContextDone (and reports, having
// retried), and the loop above gives up ContextDone too, the context
// being checked before a report.
func TestTheContextComesFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		slow := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Minute}}
		time.AfterFunc(90*time.Second, cancel)
		var inner error
		_, err := Do(ctx, slow, func(ctx context.Context) (int, error) {
			_, inner = Do(ctx, slow, func(context.Context) (int, error) { return 0, errDown })
			return 0, inner
		})
		ge, _ := errors.AsType[*GiveUpError](inner)
		assert.Equal(t, ContextDone, ge.Reason)
		assert.Equal(t, 2, ge.Failures)
		ge, _ = errors.AsType[*GiveUpError](err)
		assert.Equal(t, ContextDone, ge.Reason)
	})
}

// TestReportFromCodeOfOurOwn: code that retries by other means and calls
// Report marks its attempt, and outside any layer Report does nothing.
func TestReportFromCodeOfOurOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		Report(context.Background())
		calls := 0
		_, err := Do(context.Background(), three, func(ctx context.Context) (int, error) {
			calls++
			Report(ctx)
			return 0, errDown
		})
		assert.Equal(t, 1, calls)
		ge, _ := errors.AsType[*GiveUpError](err)
		assert.Equal(t, RetriedBelow, ge.Reason)
	})
}

// TestStartAttempt: a layer of the caller's sees reports made while its
// attempt runs, and none after End.
func TestStartAttempt(t *testing.T) {
	ctx, a := StartAttempt(context.Background())
	assert.False(t, a.Reported())
	Report(ctx)
	assert.True(t, a.Reported())
	assert.True(t, a.End())
	assert.False(t, a.End(), "ended once")
	Report(ctx)
	assert.False(t, a.Reported(), "a report after End counts for none")
}

// TestDeferredWaits: under a durable layer's threshold, a loop whose next
// wait is longer gives up at once with Deferred and the wait, which
// DeferredWait finds through a loop above that gave up RetriedBelow; a
// shorter wait is made as usual.
func TestDeferredWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := DeferAfter(context.Background(), 5*time.Second)
		start := time.Now()
		calls := 0
		_, err := Do(ctx, three, func(ctx context.Context) (int, error) {
			_, err := Do(ctx, three, func(context.Context) (int, error) { calls++; return 0, After(errDown, 30*time.Second) })
			return 0, err
		})
		assert.Equal(t, 1, calls, "no sleep, no second call")
		assert.Zero(t, time.Since(start))
		wait, ok := DeferredWait(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, 30*time.Second, wait, "what After asked, within Do's limit (a minute for a fixed millisecond)")
		ge, _ := errors.AsType[*GiveUpError](err)
		assert.Equal(t, RetriedBelow, ge.Reason, "the loop above the deferred one")

		// Beyond the inner loop's limit, the wait asked is deferred whatever
		// the threshold, and the loop does not report after one call: the
		// loop above defers it too, uncut.
		_, err = Do(ctx, three, func(ctx context.Context) (int, error) {
			_, err := Do(ctx, three, func(context.Context) (int, error) { return 0, After(errDown, 10*time.Minute) })
			return 0, err
		})
		ge, _ = errors.AsType[*GiveUpError](err)
		assert.Equal(t, Deferred, ge.Reason)
		assert.Equal(t, 10*time.Minute, ge.Wait)

		// A queue's job runs under a deadline (River's a minute): the wait
		// is deferred, not given up past the deadline.
		withDeadline, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		_, err = Do(withDeadline, three, func(context.Context) (int, error) { return 0, After(errDown, 10*time.Minute) })
		ge, _ = errors.AsType[*GiveUpError](err)
		assert.Equal(t, Deferred, ge.Reason, "not PastDeadline")

		calls = 0
		_, err = Do(ctx, three, func(context.Context) (int, error) { calls++; return 0, errDown })
		assert.Equal(t, 3, calls, "waits of a millisecond are made")
		_, ok = DeferredWait(err)
		assert.False(t, ok)
	})
}

// TestALayerThatRetriesNestedStillReports: WithNestedRetries changes only
// whether that layer stops: a loop under it that gives up after retrying
// still reports, and the loop above (the rule on) gives up RetriedBelow.
func TestALayerThatRetriesNestedStillReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		outer, bottom := 0, 0
		_, err := Do(context.Background(), three, func(ctx context.Context) (int, error) {
			outer++
			return Do(ctx, three, func(context.Context) (int, error) { bottom++; return 0, errDown }, WithNestedRetries())
		})
		assert.Equal(t, 1, outer)
		assert.Equal(t, 3, bottom)
		ge, _ := errors.AsType[*GiveUpError](err)
		assert.Equal(t, RetriedBelow, ge.Reason)
	})
}

// TestDeferredWaitEndsOnAChainThatHoldsItself: an error chain made to hold
// itself is looked through a bounded number of layers.
func TestDeferredWaitEndsOnAChainThatHoldsItself(t *testing.T) {
	ge := &GiveUpError{Reason: RetriedBelow}
	ge.Err = ge
	_, ok := DeferredWait(ge)
	assert.False(t, ok)
}

// TestAReportAfterItsAttemptReturnedCountsForNone: an attempt leaves a
// goroutine behind holding its context; 50 ms later, while the next attempt
// runs, the goroutine reports through it (Report, or an inner Do, which
// finds that context cancelled). Neither marks the running attempt: the loop makes
// its 3 attempts and gives up attempts_exhausted. Until each attempt had a
// context of its own, the loop stopped after 2, retried_below.
func TestAReportAfterItsAttemptReturnedCountsForNone(t *testing.T) {
	for _, variant := range []string{"Report", "an inner Do"} {
		t.Run(variant, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				calls, inner := 0, 0
				_, err := Do(context.Background(), three, func(ctx context.Context) (int, error) {
					calls++
					if calls == 1 {
						go func() {
							time.Sleep(50 * time.Millisecond)
							if variant == "Report" {
								Report(ctx)
								return
							}
							two := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 2, Backoff: three.Backoff}
							_, _ = Do(ctx, two, func(context.Context) (int, error) { inner++; return 0, errDown })
						}()
						return 0, errDown
					}
					time.Sleep(100 * time.Millisecond) // the second attempt runs while the goroutine reports
					return 0, errDown
				})
				synctest.Wait()
				assert.Equal(t, 3, calls)
				ge, _ := errors.AsType[*GiveUpError](err)
				require.NotNil(t, ge, "%v", err)
				assert.Equal(t, AttemptsExhausted, ge.Reason)
				if variant != "Report" {
					assert.Zero(t, inner, "the inner loop runs under the failed attempt's context, cancelled as it returned")
				}
			})
		})
	}
}

// TestAnAttemptsContextEndsAsItReturns: a goroutine an attempt left
// waiting on its context ends as the attempt returns, failed or not (the
// context is cancelled, context.Canceled, the call's context alive), as
// net/http cancels a request's context when its handler returns; the
// call's context (CallContext) lives on. Until attempts were cancelled,
// such goroutines lived until the caller's context ended.
func TestAnAttemptsContextEndsAsItReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var left []context.Context
		ended := make(chan error, 3)
		calls := 0
		_, err := Do(context.Background(), three, func(ctx context.Context) (int, error) {
			calls++
			left = append(left, ctx)
			go func() { <-ctx.Done(); ended <- ctx.Err() }()
			if calls < 3 {
				return 0, errDown
			}
			return 1, nil
		})
		require.NoError(t, err)
		synctest.Wait()
		require.Len(t, ended, 3, "each attempt's goroutine ended")
		for range 3 {
			assert.ErrorIs(t, <-ended, context.Canceled)
		}
		assert.ErrorIs(t, context.Cause(left[0]), context.Canceled)
		assert.NoError(t, CallContext(left[2]).Err(), "the call's context lives")
		_, a := StartAttempt(context.Background())
		a.End()
		assert.ErrorIs(t, a.ctx.Err(), context.Canceled, "an attempt a layer of the caller's started ends with End")
	})
}

// TestOnLossEndsALosersContextAndNoOther: of a hedged call's two attempts,
// the first (which waits for its context) loses to the second: the cancel
// function the loser bound with OnLoss is called with ErrLost, one it binds
// after it was cancelled is called at once, and the winner's is never
// called; under a context of no attempt, OnLoss does nothing.
func TestOnLossEndsALosersContextAndNoOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		causes := map[string]error{}
		bind := func(ctx context.Context, name string) {
			OnLoss(ctx, func(cause error) {
				mu.Lock()
				defer mu.Unlock()
				causes[name] = cause
			})
		}
		var n atomic.Int32
		v, err := Hedge(context.Background(), three, func(ctx context.Context) (string, error) {
			if n.Add(1) == 1 {
				bind(ctx, "loser")
				<-ctx.Done()
				bind(ctx, "loser, after")
				return "", ctx.Err()
			}
			bind(ctx, "winner")
			return "second", nil
		}, WithHedging(Hedging{Attempts: 2, Delay: 10 * time.Millisecond}), WithoutBudget())
		require.NoError(t, err)
		assert.Equal(t, "second", v)
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, map[string]error{"loser": ErrLost, "loser, after": ErrLost}, causes)

		called := false
		OnLoss(context.Background(), func(error) { called = true })
		assert.False(t, called, "no attempt: nothing bound, nothing called")
	})
}
