package retry

import (
	"context"
	"errors"
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
		{[]Option{WithAttemptTimeout(0)}, "retry.WithAttemptTimeout: must be positive, got 0s"},
		{[]Option{NewAdapterSetting[struct{}]("retryhttp.WithClassifier").Option(func(*struct{}) {})}, "retryhttp.WithClassifier is an option of retryhttp, not of this loop"},
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
	adds := NewAdditiveSetting[adapterConfig]("adapter.WithAdd")
	add := func(k int) Option {
		return adds.Option(func(c *adapterConfig) { c.n = c.n*10 + k })
	}
	var c adapterConfig
	loop, err := ApplyAdapterOptions(&c, []Option{add(1), WithFullJitter(), add(2)})
	require.NoError(t, err)
	assert.Equal(t, 12, c.n, "in order")
	require.Len(t, loop, 1)
	assert.Equal(t, "retry.WithFullJitter", loop[0].Name())
	_, err = ApplyAdapterOptions(&c, []Option{NewAdapterSetting[struct{ x int }]("other.WithThing").Option(func(*struct{ x int }) {})})
	assert.EqualError(t, err, "other.WithThing is an option of other, not of this one")
	one := NewAdapterSetting[adapterConfig]("adapter.WithOne")
	set := one.Option(func(c *adapterConfig) { c.n = 7 })
	_, err = ApplyAdapterOptions(&c, []Option{set, add(1), set})
	assert.EqualError(t, err, "adapter.WithOne: given twice; give each setting once", "a setting of one value, given twice")
}

// TestASettingOfOneValueGivenTwiceIsRefused: a list of options gives each
// setting of one value once, whatever the values (WithBudget and
// WithoutBudget are one setting); Do, New and Loop.With refuse a second,
// naming it, while hooks accumulate.
func TestASettingOfOneValueGivenTwiceIsRefused(t *testing.T) {
	b, err := NewBudget(0.1, 10)
	require.NoError(t, err)
	for _, c := range []struct {
		opts []Option
		want string
	}{
		{[]Option{WithWaitLimit(time.Second), WithWaitLimit(time.Minute)}, "retry.WithWaitLimit: given twice; give each setting once"},
		{[]Option{WithBudget(b), WithFullJitter(), WithBudget(b)}, "retry.WithBudget: given twice; give each setting once"},
		{[]Option{WithoutBudget(), WithBudget(b)}, "retry.WithoutBudget and retry.WithBudget: choose one"},
		{[]Option{WithoutBudget(), WithoutBudget()}, "retry.WithoutBudget: given twice; give each setting once"},
		{[]Option{WithNestedRetries(), WithNestedRetries()}, "retry.WithNestedRetries: given twice; give each setting once"},
		{[]Option{WithPermanent(IsPermanent), WithPermanent(IsPermanent)}, "retry.WithPermanent: given twice; give each setting once"},
		{[]Option{WithJitterSeed(1), WithJitterSeed(2)}, "retry.WithJitterSeed: given twice; give each setting once"},
		{[]Option{WithFullJitter(), WithFullJitter()}, "retry.WithFullJitter: given twice; give each setting once"},
		{[]Option{WithAttemptTimeout(time.Second), WithAttemptTimeout(time.Second)}, "retry.WithAttemptTimeout: given twice; give each setting once"},
	} {
		_, err := Do(context.Background(), three, func(context.Context) (int, error) { return 0, nil }, c.opts...)
		assert.EqualError(t, err, c.want, "Do")
		_, err = New[int](three, c.opts...)
		assert.EqualError(t, err, c.want, "New")
		l, err := New[int](three)
		require.NoError(t, err)
		_, err = l.With(c.opts...)
		assert.EqualError(t, err, c.want, "With")
	}
	hooks := 0
	count := func(Event) { hooks++ }
	_, err = Do(context.Background(), three, func(context.Context) (int, error) { return 0, errors.New("down") },
		WithObserver(count), WithObserver(count), WithEnd(func(End) { hooks += 10 }), WithEnd(func(End) { hooks += 10 }), WithJitterSeed(1), WithStart(func(ctx context.Context) context.Context { return ctx }), WithStart(func(ctx context.Context) context.Context { return ctx }))
	require.Error(t, err)
	assert.Equal(t, 2*2+20, hooks, "two observers, each called at both retries, and two end callbacks")
}

// TestWithReplacesASettingOfOneValue: Loop.With's options replace the
// loop's for a setting of one value (its budget, its wait limit), and its
// hooks are called beside the loop's.
func TestWithReplacesASettingOfOneValue(t *testing.T) {
	b, err := NewBudget(0.1, 10)
	require.NoError(t, err)
	l, err := New[int](three, WithBudget(b), WithWaitLimit(time.Second))
	require.NoError(t, err)
	w, err := l.With(WithoutBudget(), WithWaitLimit(time.Minute))
	require.NoError(t, err)
	assert.Nil(t, w.cfg.budget)
	assert.Equal(t, time.Minute, w.cfg.waitLimit)
	assert.Same(t, b, l.cfg.budget, "l is unchanged")
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

// TestWithAttemptTimeoutBoundsEachAttempt: each attempt's context has a
// deadline of its own, the timeout after it starts, and an attempt that
// its deadline ends while the call's context lives is retried; a Loop
// tells an adapter its timeout.
func TestWithAttemptTimeoutBoundsEachAttempt(t *testing.T) {
	bubble(t, func() {
		start := time.Now()
		var ends []time.Duration
		_, err := Do(context.Background(), three, func(ctx context.Context) (int, error) {
			deadline, ok := ctx.Deadline()
			require.True(t, ok)
			<-ctx.Done()
			ends = append(ends, time.Since(start))
			assert.Equal(t, deadline, time.Now())
			return 0, ctx.Err()
		}, WithAttemptTimeout(time.Second), WithJitterSeed(1))
		var gu *GiveUpError
		require.ErrorAs(t, err, &gu)
		assert.Equal(t, 3, gu.Failures, "each attempt ended by its own deadline, and retried")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		require.Len(t, ends, 3)
		assert.Equal(t, time.Second, ends[0], "the first attempt ends a second after it began")
	})
	l, err := New[int](three, WithAttemptTimeout(time.Second))
	require.NoError(t, err)
	assert.Equal(t, time.Second, l.AttemptTimeout())
	bubble(t, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, _ = Do(ctx, three, func(actx context.Context) (int, error) {
			d, _ := actx.Deadline()
			want, _ := ctx.Deadline()
			assert.Equal(t, want, d, "the call's deadline, sooner than the attempt's")
			return 1, nil
		}, WithAttemptTimeout(time.Hour))
	})
}
