package retry

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHiddenResendsAreToldCountedAndPaidFor: the rules of an attempt's
// hidden resends. Each is an Event with Hidden true, ErrHiddenResend and
// the failures before the attempt, and counts in End.HiddenResends; none
// is an attempt. An attempt's first is free, each later one withdraws one
// token: of a budget of 3, the first attempt's second and third resends
// take two and the retry the last; the second attempt's first resend is
// free again, its second refused, and the refusal holds for the attempt.
// HiddenSeen says an adapter watched.
func TestHiddenResendsAreToldCountedAndPaidFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := NewBudget(0, 3)
		require.NoError(t, err)
		var events []Event
		var end End
		var granted []bool
		attempt := 0
		_, err = Do(context.Background(), threeAttempts, func(ctx context.Context) (int, error) {
			attempt++
			n := 3
			if attempt == 2 {
				n = 2
			}
			assert.False(t, ResendRefused(ctx), "a new attempt")
			for range n {
				granted = append(granted, HiddenResend(ctx))
			}
			if attempt == 1 {
				return 0, errFlaky
			}
			assert.True(t, ResendRefused(ctx), "refused, for the rest of the attempt")
			return 1, nil
		}, WithBudget(b), WithObserver(func(e Event) { events = append(events, e) }), WithEnd(func(e End) { end = e }))
		require.NoError(t, err)
		assert.Equal(t, []bool{true, true, true, true, false}, granted)
		assert.Equal(t, 2, end.Attempts, "resends are not attempts")
		assert.Equal(t, 5, end.HiddenResends)
		assert.True(t, end.HiddenSeen)
		require.Len(t, events, 6, "5 resends and the retry")
		assert.Equal(t, Event{Hidden: true, Failures: 0, Err: ErrHiddenResend, Context: context.Background()}, events[0])
		assert.False(t, events[3].Hidden, "the retry")
		assert.Equal(t, 1, events[5].Failures)
		assert.True(t, events[5].Hidden)
	})
}

// TestNoAdapterNoHiddenSeen: a call whose attempts nobody watched ends
// with HiddenSeen false; a resend told after its attempt returned, or
// under no loop, counts for nothing and is let go.
func TestNoAdapterNoHiddenSeen(t *testing.T) {
	var end End
	var late context.Context
	_, err := Do(context.Background(), threeAttempts, func(ctx context.Context) (int, error) { late = ctx; return 1, nil }, WithEnd(func(e End) { end = e }))
	require.NoError(t, err)
	assert.False(t, end.HiddenSeen)
	assert.True(t, HiddenResend(late))
	assert.True(t, HiddenResend(context.Background()))
	assert.Zero(t, end.HiddenResends)

	_, err = Do(context.Background(), threeAttempts, func(ctx context.Context) (int, error) { WatchHidden(ctx); return 1, nil }, WithEnd(func(e End) { end = e }))
	require.NoError(t, err)
	assert.True(t, end.HiddenSeen, "watched: 0 is a count")
	assert.Zero(t, end.HiddenResends)
}

// TestWatchHiddenSaysWhetherAResendMayBeRefused: an adapter needs a way to
// stop a resend only when the loop has a budget that may refuse one.
func TestWatchHiddenSaysWhetherAResendMayBeRefused(t *testing.T) {
	b, err := NewBudget(0.1, 10)
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		opts []Option
		want bool
	}{{"a budget", []Option{WithBudget(b)}, true}, {"no budget", []Option{WithoutBudget()}, false}} {
		var got bool
		_, err := Do(context.Background(), threeAttempts, func(ctx context.Context) (int, error) { got = WatchHidden(ctx); return 1, nil }, c.opts...)
		require.NoError(t, err)
		assert.Equal(t, c.want, got, c.name)
	}
	assert.False(t, WatchHidden(context.Background()), "no loop")
}
