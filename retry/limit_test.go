package retry

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy"
)

// TestWaitLimitsTable pins the limit on a server's wait for each layer:
// the backoff's longest delay (a fixed backoff's delay, an exponential
// one's cap), at least a minute for a synchronous layer and an hour for a
// job; an hour when the backoff has no cap.
func TestWaitLimitsTable(t *testing.T) {
	fixed := func(d time.Duration) retrypolicy.Strategy {
		return retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: d}}
	}
	capped := func(d time.Duration) retrypolicy.Strategy {
		return retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3, Backoff: retrypolicy.Backoff{Kind: retrypolicy.ExponentialWithJitter, BaseDelay: time.Millisecond, MaxDelay: d}}
	}
	for _, c := range []struct {
		name          string
		s             retrypolicy.Strategy
		sync, durable time.Duration
	}{
		{"fixed 10 ms", fixed(10 * time.Millisecond), time.Minute, time.Hour},
		{"fixed 90 s", fixed(90 * time.Second), 90 * time.Second, time.Hour},
		{"fixed 2 h", fixed(2 * time.Hour), 2 * time.Hour, 2 * time.Hour},
		{"capped at 1 s", capped(time.Second), time.Minute, time.Hour},
		{"capped at 10 min", capped(10 * time.Minute), 10 * time.Minute, time.Hour},
		{"capped at a day", capped(24 * time.Hour), 24 * time.Hour, 24 * time.Hour},
		{"no cap", retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential}}, time.Hour, time.Hour},
		{"the default (capped at an hour)", retrypolicy.Strategy{}, time.Hour, time.Hour},
		{"none", retrypolicy.Strategy{Kind: retrypolicy.None}, time.Hour, time.Hour},
	} {
		p, err := retrypolicy.Compile(c.s)
		require.NoError(t, err, c.name)
		assert.Equal(t, c.sync, WaitLimit(p, Synchronous), "%s, synchronous", c.name)
		assert.Equal(t, c.durable, WaitLimit(p, Durable), "%s, durable", c.name)
	}
}

// TestAFixedLoopsLimitIsItsDelayAtLeastAMinute: a fixed 10 ms loop gives up
// at once on a server asking 90 s (its limit is a minute), carrying the
// wait; one asking 50 s is waited in full. Until a fixed backoff's delay
// counted as its cap, such a loop slept through the 90 s (an hour's limit).
func TestAFixedLoopsLimitIsItsDelayAtLeastAMinute(t *testing.T) {
	s := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 10 * time.Millisecond}}
	bubble(t, func() {
		start := time.Now()
		calls := 0
		_, err := Do(context.Background(), s, func(context.Context) (int, error) { calls++; return 0, After(errFlaky, 90*time.Second) })
		var gu *GiveUpError
		require.ErrorAs(t, err, &gu)
		assert.Equal(t, RetryAfterTooLong, gu.Reason)
		assert.Equal(t, 90*time.Second, gu.Wait)
		assert.Equal(t, 1, calls)
		assert.Zero(t, time.Since(start), "no sleep")

		calls = 0
		var wake time.Time
		_, err = Do(context.Background(), s, func(context.Context) (int, error) {
			if calls++; calls == 1 {
				return 0, After(errFlaky, 50*time.Second)
			}
			wake = time.Now()
			return 1, nil
		})
		require.NoError(t, err)
		assert.Equal(t, 50*time.Second, wake.Sub(start), "waited in full")
	})
}

// TestReasonsStoredFormsAreStable pins each reason's number and name, as
// adapters store them (natsretry a byte, riverretry a name): a number
// never changes meaning. A fatal decision's reason converts by number, so
// every reason the core names must have the same name here: a reason added
// to the core alone would read as another one of the loop's.
func TestReasonsStoredFormsAreStable(t *testing.T) {
	for _, c := range []struct {
		stored byte
		r      Reason
		name   string
	}{
		{0, 0, ""},
		{1, StrategyNone, "strategy_none"},
		{2, AttemptsExhausted, "attempts_exhausted"},
		{3, NotRetryable, "not_retryable"},
		{4, ContextDone, "context_done"},
		{5, PastDeadline, "past_deadline"},
		{6, BudgetExhausted, "budget_exhausted"},
		{7, RetriedBelow, "retried_below"},
		{8, Deferred, "deferred"},
		{9, RetryAfterTooLong, "retry_after_too_long"},
		{10, Throttled, "throttled"},
	} {
		assert.Equal(t, c.stored, byte(c.r), c.name)
		assert.Equal(t, c.name, c.r.String())
	}
	_, err := Reason(11).MarshalText()
	assert.EqualError(t, err, "retry: no reason 11", "a number past the last has no name")
	for n := 1; n < 256; n++ {
		core := retrypolicy.Reason(n)
		name, err := core.MarshalText()
		if err != nil {
			continue // not a reason of the core's
		}
		assert.Equal(t, string(name), Reason(core).String(), "the core's reason %d", n)
	}
}

// TestReadMarksReadsEveryMarkInOneWalk: one walk finds a permanent mark,
// the longest wait asked and deferred, a report from below and
// context.Canceled, each in any branch; Wait is the longer of the two
// waits.
func TestReadMarksReadsEveryMarkInOneWalk(t *testing.T) {
	below := &GiveUpError{Reason: RetriedBelow, Failures: 1, Err: errFlaky, reported: true}
	err := errors.Join(
		After(errFlaky, time.Minute),
		&GiveUpError{Reason: Deferred, Wait: 2 * time.Minute, Err: errFlaky},
		below,
		context.Canceled,
	)
	m := ReadMarks(err)
	assert.False(t, m.Permanent)
	assert.Equal(t, time.Minute, m.Asked)
	assert.True(t, m.HasAsked)
	assert.Equal(t, 2*time.Minute, m.Deferred)
	assert.True(t, m.HasDeferred)
	assert.True(t, m.Below)
	assert.True(t, m.Canceled)
	wait, ok := m.Wait()
	assert.True(t, ok)
	assert.Equal(t, 2*time.Minute, wait)
	assert.True(t, ReadMarks(errors.Join(err, Permanent(errFlaky))).Permanent)
	_, ok = ReadMarks(errFlaky).Wait()
	assert.False(t, ok)
	assert.False(t, ReadMarks(&GiveUpError{Reason: RetriedBelow, Err: errFlaky}).Below, "a give-up made by hand reported nothing")
}

// TestALoopThatReportedSaysSoInItsError: the GiveUpError of a loop that
// gave up after retrying reads as Below to the layer above it; one that
// made a single call does not.
func TestALoopThatReportedSaysSoInItsError(t *testing.T) {
	bubble(t, func() {
		_, err := Do(context.Background(), three, func(context.Context) (int, error) { return 0, errFlaky })
		assert.True(t, ReadMarks(err).Below)
		_, err = Do(context.Background(), retrypolicy.Strategy{Kind: retrypolicy.None}, func(context.Context) (int, error) { return 0, errFlaky })
		assert.False(t, ReadMarks(err).Below)
	})
}

// TestReadMarksAllocatesNothingOnADeepChain: a chain of single wraps
// allocates nothing to walk, however deep; a join of more than 8 branches
// costs one buffer. Until the walk kept a ring, each hop of a chain
// deeper than 9 allocated (depth 16: 7 allocations, depth 30: 21).
func TestReadMarksAllocatesNothingOnADeepChain(t *testing.T) {
	err := After(errFlaky, time.Second)
	for range 30 {
		err = wrapped{err}
	}
	if a := testing.AllocsPerRun(10, func() { ReadMarks(err) }); a != 0 {
		t.Errorf("a chain of 30 wraps: %v allocations", a)
	}
	assert.True(t, ReadMarks(err).HasAsked, "the mark at the bottom is found")
	wide := make([]error, 20)
	for i := range wide {
		wide[i] = errFlaky
	}
	wide[19] = Permanent(errFlaky)
	joined := errors.Join(wide...)
	assert.True(t, ReadMarks(joined).Permanent, "the last of 20 branches is read")
	if a := testing.AllocsPerRun(10, func() { ReadMarks(joined) }); a > 2 {
		t.Errorf("a join of 20: %v allocations", a)
	}
}

// wrapped wraps an error as %w does, without fmt's allocation in the test.
type wrapped struct{ err error }

func (w wrapped) Error() string { return "wrapped: " + w.err.Error() }
func (w wrapped) Unwrap() error { return w.err }
