package retry

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInvalidOptionsAreRefusedNamingThem: an invalid option, an adapter's
// option, and WithBudget beside WithoutBudget are errors from Do and New,
// naming the option, before op is called.
func TestInvalidOptionsAreRefusedNamingThem(t *testing.T) {
	b, err := NewBudget(0.1, 10)
	require.NoError(t, err)
	for _, c := range []struct {
		opts []Option
		want string
	}{
		{[]Option{WithWaitLimit(0)}, "retry.WithWaitLimit: must be positive, got 0s"},
		{[]Option{WithWaitLimit(-time.Second)}, "retry.WithWaitLimit: must be positive, got -1s"},
		{[]Option{WithBudget(nil)}, "retry.WithBudget: the budget is nil; WithoutBudget says none"},
		{[]Option{WithObserver(nil)}, "retry.WithObserver: the function is nil"},
		{[]Option{WithEnd(nil)}, "retry.WithEnd: the function is nil"},
		{[]Option{WithStart(nil)}, "retry.WithStart: the function is nil"},
		{[]Option{WithPermanent(nil)}, "retry.WithPermanent: the function is nil"},
		{[]Option{WithBudget(b), WithoutBudget()}, "retry.WithBudget and retry.WithoutBudget: choose one"},
		{[]Option{AdapterOption("retryhttp.WithClassifier", func(*struct{}) {})}, "retryhttp.WithClassifier is an option of retryhttp, not of this loop"},
	} {
		calls := 0
		_, err := Do(context.Background(), three, func(context.Context) (int, error) { calls++; return 0, nil }, c.opts...)
		assert.EqualError(t, err, c.want)
		assert.Zero(t, calls)
		_, err = New[int](three, c.opts...)
		assert.EqualError(t, err, c.want)
	}
	_, err = Do(context.Background(), three, func(context.Context) (int, error) { return 0, nil }, Option{})
	assert.NoError(t, err, "the zero Option changes nothing")
}

// adapterConfig is an adapter's configuration, for the options test.
type adapterConfig struct{ n int }

// TestAnAdaptersOptionsAreItsOwn: ApplyAdapterOptions applies an adapter's
// own options, in order, returns the loop's, and refuses another
// adapter's, naming it.
func TestAnAdaptersOptionsAreItsOwn(t *testing.T) {
	add := func(k int) Option {
		return AdapterOption("adapter.WithAdd", func(c *adapterConfig) { c.n = c.n*10 + k })
	}
	var c adapterConfig
	loop, err := ApplyAdapterOptions(&c, []Option{add(1), WithFullJitter(), add(2)})
	require.NoError(t, err)
	assert.Equal(t, 12, c.n, "in order")
	require.Len(t, loop, 1)
	assert.Equal(t, "retry.WithFullJitter", loop[0].Name())
	_, err = ApplyAdapterOptions(&c, []Option{AdapterOption("other.WithThing", func(*struct{ x int }) {})})
	assert.EqualError(t, err, "other.WithThing is an option of other, not of this one")
}

// TestWithStartGivesTheCallItsContext: the start hook's context is the
// call's: each attempt's derives from it (CallContext returns it), and the
// observer and the end callback are handed it.
func TestWithStartGivesTheCallItsContext(t *testing.T) {
	type key struct{}
	bubble(t, func() {
		var seen []any
		var calls []context.Context
		op := func(ctx context.Context) (int, error) {
			calls = append(calls, CallContext(ctx))
			seen = append(seen, ctx.Value(key{}))
			if len(seen) < 2 {
				return 0, errFlaky
			}
			return 1, nil
		}
		var event, end context.Context
		_, err := Do(context.Background(), three, op,
			WithStart(func(ctx context.Context) context.Context { return context.WithValue(ctx, key{}, "call") }),
			WithObserver(func(e Event) { event = e.Context }),
			WithEnd(func(e End) { end = e.Context }))
		require.NoError(t, err)
		assert.Equal(t, []any{"call", "call"}, seen)
		assert.Equal(t, "call", event.Value(key{}))
		assert.Same(t, event, end)
		assert.Same(t, end, calls[0])
		assert.Same(t, end, calls[1])
	})
}

// TestWithReplacesTheBudget: a Loop made With a budget takes it in place
// of its parent's; other options add to the parent's.
func TestWithReplacesTheBudget(t *testing.T) {
	spent, err := NewBudget(0, 1)
	require.NoError(t, err)
	require.True(t, spent.Withdraw())
	plenty, err := NewBudget(0, 100)
	require.NoError(t, err)
	parent, err := New[int](three, WithBudget(spent))
	require.NoError(t, err)
	child, err := parent.With(WithBudget(plenty))
	require.NoError(t, err)
	none, err := parent.With(WithoutBudget())
	require.NoError(t, err)
	bubble(t, func() {
		down := func(context.Context) (int, error) { return 0, errFlaky }
		_, err := parent.Do(context.Background(), down)
		var gu *GiveUpError
		require.ErrorAs(t, err, &gu)
		assert.Equal(t, BudgetExhausted, gu.Reason)
		for _, l := range []*Loop[int]{child, none} {
			_, err = l.Do(context.Background(), down)
			require.ErrorAs(t, err, &gu)
			assert.Equal(t, AttemptsExhausted, gu.Reason)
		}
	})
	_, err = parent.With(WithObserver(nil))
	assert.EqualError(t, err, "retry.WithObserver: the function is nil")
}
