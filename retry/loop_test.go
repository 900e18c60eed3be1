package retry_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
)

// TestALoopDecidesAsDo: a Loop's calls wait what Do's do for the same
// strategy, options and failures, and give up for the same reason.
func TestALoopDecidesAsDo(t *testing.T) {
	s := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 4, Window: time.Hour,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.ExponentialWithJitter, BaseDelay: time.Second, MaxDelay: time.Minute}}
	// waits runs do in a bubble of its own, whose clock starts where every
	// bubble's does: the jitter depends on the failures' instants.
	waits := func(do func(op func(context.Context) (int, error), opts ...retry.Option) error) (w []time.Duration, err error) {
		synctest.Test(t, func(t *testing.T) {
			err = do(func(context.Context) (int, error) { return 0, errors.New("down") },
				retry.WithJitterSeed(7), retry.WithObserver(func(e retry.Event) { w = append(w, e.Wait) }))
		})
		return w, err
	}
	viaDo, doErr := waits(func(op func(context.Context) (int, error), opts ...retry.Option) error {
		_, err := retry.Do(context.Background(), s, op, opts...)
		return err
	})
	viaLoop, loopErr := waits(func(op func(context.Context) (int, error), opts ...retry.Option) error {
		l, err := retry.New[int](s, opts...)
		require.NoError(t, err)
		_, err = l.Do(context.Background(), op)
		return err
	})
	require.Len(t, viaDo, 3)
	assert.Equal(t, viaDo, viaLoop)
	var a, b *retry.GiveUpError
	require.ErrorAs(t, doErr, &a)
	require.ErrorAs(t, loopErr, &b)
	assert.Equal(t, retry.AttemptsExhausted, a.Reason)
	assert.Equal(t, a.Reason, b.Reason)
}

// TestALoopsCallsShareNothingButItsOptions: calls of one Loop from many
// goroutines each count their own attempts (run it with -race).
func TestALoopsCallsShareNothingButItsOptions(t *testing.T) {
	s := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		attempts := map[int]int{}
		l, err := retry.New[int](s, retry.WithEnd(func(e retry.End) {
			mu.Lock()
			attempts[e.Attempts]++
			mu.Unlock()
		}))
		require.NoError(t, err)
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				calls := 0
				v, err := l.Do(context.Background(), func(context.Context) (int, error) {
					if calls++; calls <= i%3 {
						return 0, errors.New("down")
					}
					return i, nil
				})
				assert.NoError(t, err)
				assert.Equal(t, i, v)
			})
		}
		wg.Wait()
		assert.Equal(t, map[int]int{1: 7, 2: 7, 3: 6}, attempts, "calls by their attempts")
	})
}

func TestNewRefusesAnInvalidStrategy(t *testing.T) {
	_, err := retry.New[int](retrypolicy.Strategy{Kind: retrypolicy.Bounded})
	var ve *retrypolicy.ValidationError
	assert.ErrorAs(t, err, &ve)
}

// TestALoopsFirstTryAllocatesItsAttemptAlone: as Do's, one object, the
// context it hands op.
func TestALoopsFirstTryAllocatesItsAttemptAlone(t *testing.T) {
	l, err := retry.New[int](retrypolicy.Default())
	require.NoError(t, err)
	op := func(context.Context) (int, error) { return 1, nil }
	ctx := context.Background()
	assert.Equal(t, 1.0, testing.AllocsPerRun(100, func() { _, _ = l.Do(ctx, op) }))
}

// A worker prepares the loop of its calls to one service once, and runs
// each call through it.
func ExampleNew() {
	strategy := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}
	fetch, err := retry.New[string](strategy)
	if err != nil {
		fmt.Println(err) // an invalid strategy, once, at startup
		return
	}
	for _, id := range []string{"a", "b"} {
		calls := 0
		v, err := fetch.Do(context.Background(), func(context.Context) (string, error) {
			if calls++; calls == 1 {
				return "", errors.New("flaky")
			}
			return "report " + id, nil
		})
		fmt.Println(v, err, calls)
	}
	// Output:
	// report a <nil> 2
	// report b <nil> 2
}
