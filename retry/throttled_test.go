package retry

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/splitmix"
)

var threeAttempts = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3, Window: time.Hour,
	Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 10 * time.Millisecond}}

// TestAThrottleCountsEveryAttemptSentAndEachThatEndedWell: the rule of
// what a loop tells its throttle. With k = 1 the rejection is
// (requests - accepts) / (requests + 1): two calls of three attempts each
// (two transient failures, then a success) are 6 requests and 2 accepts,
// 4/7; a permanent answer is an accept, a PermanentFailure and a caller's
// cancellation are not. Without Sent for the retries the window would hold
// 2 requests (under the floor, 0); without accepts 6/7.
func TestAThrottleCountsEveryAttemptSentAndEachThatEndedWell(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		th, err := NewThrottle(1, time.Minute)
		require.NoError(t, err)
		for range 2 {
			op, _, _ := script([]run{{err: errFlaky}, {err: errFlaky}})
			_, err := Do(context.Background(), threeAttempts, op, WithThrottle(th))
			require.NoError(t, err)
		}
		assert.InDelta(t, 4.0/7, th.Rejection(), 1e-12)

		// A permanent answer: a request and an accept, (7-3)/8.
		th.Seed(passing())
		_, err = Do(context.Background(), threeAttempts, func(context.Context) (int, error) { return 0, Permanent(errFlaky) }, WithThrottle(th))
		assert.ErrorIs(t, err, errFlaky)
		assert.InDelta(t, 4.0/8, th.Rejection(), 1e-12)

		// A dependency's failure marked PermanentFailure: a request, no
		// accept, (8-3)/9.
		th.Seed(passing())
		_, err = Do(context.Background(), threeAttempts, func(context.Context) (int, error) { return 0, PermanentFailure(errFlaky) }, WithThrottle(th))
		require.ErrorIs(t, err, errFlaky)
		assert.InDelta(t, 5.0/9, th.Rejection(), 1e-12)

		// An attempt the caller ended: a request, no accept, (9-3)/10.
		ctx, cancel := context.WithCancel(context.Background())
		th.Seed(passing())
		_, err = Do(ctx, threeAttempts, func(ctx context.Context) (int, error) { cancel(); return 0, ctx.Err() }, WithThrottle(th))
		require.ErrorIs(t, err, context.Canceled)
		assert.InDelta(t, 6.0/10, th.Rejection(), 1e-12)
	})
}

// passing returns a seed whose first draw is at least 0.99: a call let
// through at any rejection below it.
func passing() uint64 {
	for seed := uint64(1); ; seed++ {
		state := seed
		if float64(splitmix.Next(&state)>>11)*(1.0/(1<<53)) >= 0.99 {
			return seed
		}
	}
}

// TestAThrottledCallIsNotSentAndGivesUpThrottled: a throttle that
// rejects (requests only, past the floor: a rejection of 20/21) makes
// calls give up Throttled with ErrThrottled, op never called, no attempt
// counted at the end; a rejected call counts as a request. A call whose
// context is done gives up ContextDone, unasked.
func TestAThrottledCallIsNotSentAndGivesUpThrottled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		th, err := NewThrottle(2, time.Minute)
		require.NoError(t, err)
		th.Seed(7)
		for range 20 {
			th.Sent()
		}
		var ends []End
		calls, throttled := 0, 0
		op := func(context.Context) (int, error) { calls++; return 1, nil }
		for range 40 {
			_, err := Do(context.Background(), threeAttempts, op, WithThrottle(th), WithEnd(func(e End) { ends = append(ends, e) }))
			var gu *GiveUpError
			if errors.As(err, &gu) {
				throttled++
				assert.Equal(t, Throttled, gu.Reason)
				assert.Equal(t, 0, gu.Failures)
				assert.ErrorIs(t, err, ErrThrottled)
				assert.Equal(t, 0, ends[len(ends)-1].Attempts)
			}
		}
		assert.Equal(t, 40, calls+throttled)
		assert.Greater(t, throttled, 0)
		// Each rejected call is a request; each call let through a request
		// and an accept.
		requests, accepts := 20.0+40, float64(calls)
		assert.InDelta(t, max(0, (requests-2*accepts)/(requests+1)), th.Rejection(), 1e-12)

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = Do(ctx, threeAttempts, op, WithThrottle(th))
		var gu *GiveUpError
		require.ErrorAs(t, err, &gu)
		assert.Equal(t, ContextDone, gu.Reason)
	})
}

// TestAThrottledCallReportsToTheLayerAbove: a call its throttle rejects
// reports, as a budget's refusal does, so that the loop above gives up
// RetriedBelow after one attempt rather than retry it.
func TestAThrottledCallReportsToTheLayerAbove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		th, err := NewThrottle(2, time.Minute)
		require.NoError(t, err)
		for range 100 {
			th.Sent()
		}
		th.Seed(3)
		inner := func(ctx context.Context) (int, error) {
			for {
				_, err := Do(ctx, threeAttempts, func(context.Context) (int, error) { return 1, nil }, WithThrottle(th))
				if gu, ok := err.(*GiveUpError); ok && gu.Reason == Throttled {
					return 0, err
				}
			}
		}
		_, err = Do(context.Background(), threeAttempts, inner)
		var gu *GiveUpError
		require.ErrorAs(t, err, &gu)
		assert.Equal(t, RetriedBelow, gu.Reason)
		assert.Equal(t, 1, gu.Failures)
	})
}

// TestWithThrottleIsOneSettingAndNotNil: a nil throttle and a second
// WithThrottle are refused, naming the option; a Loop takes it, and a
// call's own (With) replaces the loop's.
func TestWithThrottleIsOneSettingAndNotNil(t *testing.T) {
	th, err := NewThrottle(2, time.Second)
	require.NoError(t, err)
	_, err = New[int](threeAttempts, WithThrottle(nil))
	assert.EqualError(t, err, "retry.WithThrottle: the throttle is nil")
	_, err = New[int](threeAttempts, WithThrottle(th), WithThrottle(th))
	assert.EqualError(t, err, "retry.WithThrottle: given twice; give each setting once")
	synctest.Test(t, func(t *testing.T) {
		busy, err := NewThrottle(1, time.Minute)
		require.NoError(t, err)
		for range 50 {
			busy.Sent()
		}
		l, err := New[int](threeAttempts, WithThrottle(busy))
		require.NoError(t, err)
		own, err := l.With(WithThrottle(th))
		require.NoError(t, err)
		for range 10 {
			_, err := own.Do(context.Background(), func(context.Context) (int, error) { return 1, nil })
			require.NoError(t, err, "the call's own throttle, which rejects nothing")
		}
		assert.InDelta(t, 50.0/51, busy.Rejection(), 1e-12, "the loop's throttle untouched")
	})
}

// ExampleWithThrottle: a dependency that fails every call. Once the
// throttle's window holds five requests and none was accepted, most calls
// are rejected locally, unsent.
func ExampleWithThrottle() {
	throttle, err := NewThrottle(2, time.Minute) // k = 2 over a minute
	if err != nil {
		panic(err)
	}
	throttle.Seed(1) // for the same output on every run
	once := retrypolicy.Strategy{Kind: retrypolicy.None}
	sent, rejected := 0, 0
	for range 100 {
		_, err := Do(context.Background(), once, func(context.Context) (int, error) {
			sent++
			return 0, errors.New("unavailable")
		}, WithThrottle(throttle))
		if gu, ok := err.(*GiveUpError); ok && gu.Reason == Throttled {
			rejected++
		}
	}
	fmt.Println("sent:", sent, "rejected:", rejected)
	// Output: sent: 7 rejected: 93
}

// TestNamesThrottle: an adapter knows WithThrottle by its kind.
func TestNamesThrottle(t *testing.T) {
	th, err := NewThrottle(2, time.Second)
	require.NoError(t, err)
	assert.True(t, WithThrottle(th).NamesThrottle())
	assert.False(t, WithBudget(DefaultBudget()).NamesThrottle())
	assert.False(t, Option{}.NamesThrottle())
}

// TestALoopKeepsTheDecisionAdmitMade: under Admit's context the loop does
// not ask its throttle again: a rejected call gives up Throttled without
// calling op, an admitted one is sent, and each call is one request
// (without the mark, the loop would ask again: two).
func TestALoopKeepsTheDecisionAdmitMade(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		th, err := NewThrottle(1, time.Minute)
		require.NoError(t, err)
		l, err := New[int](threeAttempts, WithThrottle(th))
		require.NoError(t, err)
		for range 9 {
			th.Sent()
		}
		th.Seed(passing())
		ctx, ok := l.Admit(context.Background())
		require.True(t, ok)
		_, err = l.Do(ctx, func(context.Context) (int, error) { return 0, PermanentFailure(errFlaky) })
		require.ErrorIs(t, err, errFlaky)
		assert.InDelta(t, 10.0/11, th.Rejection(), 1e-12, "one request for the call")

		th.Seed(failing())
		ctx, ok = l.Admit(context.Background())
		require.False(t, ok)
		calls := 0
		_, err = l.Do(ctx, func(context.Context) (int, error) { calls++; return 1, nil })
		var gu *GiveUpError
		require.ErrorAs(t, err, &gu)
		assert.Equal(t, Throttled, gu.Reason)
		assert.Zero(t, calls)
		assert.InDelta(t, 11.0/12, th.Rejection(), 1e-12, "one request for the call")
	})
}

// failing returns a seed whose first draw is below 0.01: a call rejected
// at any rejection above it.
func failing() uint64 {
	for seed := uint64(1); ; seed++ {
		state := seed
		if float64(splitmix.Next(&state)>>11)*(1.0/(1<<53)) < 0.01 {
			return seed
		}
	}
}

// ExampleLoop_Admit: a Loop prepared once with a throttle for a
// dependency; an adapter that opens a call before it runs the loop asks
// the throttle with Admit first, and the loop keeps that decision.
func ExampleLoop_Admit() {
	throttle, err := NewThrottle(2, time.Minute)
	if err != nil {
		panic(err)
	}
	throttle.Seed(1) // for the same output on every run
	loop, err := New[int](retrypolicy.Strategy{Kind: retrypolicy.None}, WithThrottle(throttle))
	if err != nil {
		panic(err)
	}
	opened, rejected := 0, 0
	for range 100 {
		ctx, ok := loop.Admit(context.Background())
		if ok {
			opened++ // the adapter opens the call here, then runs the loop
		}
		_, err := loop.Do(ctx, func(context.Context) (int, error) { return 0, errors.New("unavailable") })
		if gu, isGiveUp := err.(*GiveUpError); isGiveUp && gu.Reason == Throttled {
			rejected++
		}
	}
	fmt.Println("opened:", opened, "rejected:", rejected)
	// Output: opened: 7 rejected: 93
}
