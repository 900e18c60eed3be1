package retry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/rapidgen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

var errFlaky = errors.New("flaky")

// run is one scripted call of op: how long it runs, and what it returns.
type run struct {
	length time.Duration
	err    error
}

// script returns an op that plays runs in order (then succeeds), and
// records when each call started and returned.
func script(runs []run) (op func(context.Context) (int, error), starts, ends *[]time.Time) {
	starts, ends = new([]time.Time), new([]time.Time)
	calls := 0
	op = func(ctx context.Context) (int, error) {
		*starts = append(*starts, time.Now())
		defer func() { *ends = append(*ends, time.Now()) }()
		if calls >= len(runs) {
			calls++
			return calls, nil
		}
		r := runs[calls]
		calls++
		time.Sleep(r.length)
		return calls, r.err
	}
	return op, starts, ends
}

// bubble runs f in a synctest bubble, on fake time: property tests draw
// their inputs outside it (rapid may not run in one) and check after. A
// bubble's clock must not run past 2262: strategies drawn for one wait at
// most a day (genRetryStrategy).
func bubble(t *testing.T, f func()) {
	synctest.Test(t, func(*testing.T) { f() })
}

// genRetryStrategy draws a valid strategy whose delays stay within a day,
// in seconds or milliseconds, multipliers close to 1 among them.
func genRetryStrategy(t *rapid.T) retrypolicy.Strategy {
	kind := rapid.SampledFrom([]retrypolicy.StrategyKind{retrypolicy.None, retrypolicy.Bounded, retrypolicy.UnlessStopped}).Draw(t, "strategy")
	if kind == retrypolicy.None {
		return retrypolicy.Strategy{Kind: kind}
	}
	s := retrypolicy.Strategy{Kind: kind, Backoff: rapidgen.GrowingBackoff(t)}
	if kind == retrypolicy.Bounded {
		s.MaxAttempts = rapid.OneOf(rapid.IntRange(1, 20), rapid.IntRange(1, math.MaxInt)).Draw(t, "max_attempts")
		s.Window = time.Duration(rapid.Int64Range(1, 7*24*3600).Draw(t, "window_secs")) * time.Second
	}
	if s.Backoff.MaxDelay == 0 || s.Backoff.MaxDelay > 24*time.Hour {
		s.Backoff.MaxDelay = max(24*time.Hour, s.Backoff.BaseDelay)
	}
	return s
}

func TestRetrySucceedsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		op, starts, _ := script(nil)
		v, err := Do(context.Background(), retrypolicy.Default(), op)
		require.NoError(t, err)
		assert.Equal(t, 1, v)
		assert.Len(t, *starts, 1)
	})
}

func TestRetryRefusesAnInvalidStrategyBeforeCallingOp(t *testing.T) {
	calls := 0
	_, err := Do(context.Background(), retrypolicy.Strategy{Kind: 9}, func(context.Context) (int, error) { calls++; return 0, nil })
	assert.ErrorIs(t, err, retrypolicy.ErrInvalid)
	assert.Equal(t, 0, calls)
}

// TestRetryWaitsAreTheDecisions pins that Retry adds no rule of its own:
// for any strategy and any runs, each wait it takes is the credited delay
// plus jitter of retrypolicy.Decide on the failures so far (each at the moment its call
// returned), with the uptime the call ran, and it gives up exactly when
// retrypolicy.Decide is fatal.
func TestRetryWaitsAreTheDecisions(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := genRetryStrategy(rt)
		runs := make([]run, rapid.IntRange(1, 12).Draw(rt, "failures"))
		for i := range runs {
			runs[i] = run{time.Duration(rapid.Int64Range(0, int64(2*time.Hour)).Draw(rt, "run")), errFlaky}
		}
		seed := rapid.Uint64().Draw(rt, "seed")
		op, starts, ends := script(runs)
		var events []Event
		var err error
		bubble(t, func() {
			_, err = Do(context.Background(), s, op, WithJitterSeed(seed), WithObserver(func(e Event) { events = append(events, e) }))
		})
		for i, e := range events {
			d, derr := retrypolicy.Decide(s, (*ends)[:i+1], (*ends)[i].Sub((*starts)[i]), seed, (*ends)[i])
			require.NoError(rt, derr)
			if e.Wait != d.Delay+d.Jitter || e.Failures != i+1 || e.Decision.InWindow != d.InWindow {
				rt.Fatalf("retry %d waited %v, the decision says %v (%+v)", i+1, e.Wait, d.Delay+d.Jitter, d)
			}
			if got := (*starts)[i+1].Sub((*ends)[i]); got != e.Wait {
				rt.Fatalf("retry %d slept %v, announced %v", i+1, got, e.Wait)
			}
		}
		if err == nil {
			require.Len(rt, events, len(runs))
			return
		}
		var gu *GiveUpError
		require.ErrorAs(rt, err, &gu)
		last := len(events)
		d, derr := retrypolicy.Decide(s, (*ends)[:last+1], (*ends)[last].Sub((*starts)[last]), seed, (*ends)[last])
		require.NoError(rt, derr)
		if d.Action != retrypolicy.Fatal || gu.Reason != Reason(d.Reason) || gu.Failures != last+1 || !errors.Is(err, errFlaky) {
			rt.Fatalf("gave up %+v where the decision is %+v", gu, d)
		}
	})

}

// TestRetryGivesUpOnlyWithinTheWindow: bounded counts failures within its
// window, not in total: failures further apart than the window never
// exhaust it.
func TestRetryGivesUpOnlyWithinTheWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3, Window: 10 * time.Second,
			Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 20 * time.Second}}
		runs := make([]run, 10)
		for i := range runs {
			runs[i] = run{0, errFlaky}
		}
		op, starts, _ := script(runs)
		v, err := Do(context.Background(), s, op)
		require.NoError(t, err, "20 s apart, no two failures share a 10 s window")
		assert.Equal(t, 11, v)
		assert.Len(t, *starts, 11)

		s.Backoff.BaseDelay = time.Second
		op, starts, _ = script(runs)
		_, err = Do(context.Background(), s, op)
		var gu *GiveUpError
		require.ErrorAs(t, err, &gu)
		assert.Equal(t, AttemptsExhausted, gu.Reason)
		assert.Equal(t, 3, gu.Failures)
		assert.Len(t, *starts, 3)
	})
}

// TestRetryLongRunsEarnCredit: an op that ran an hour before failing is
// retried after the first step, not the backoff its failures owe.
func TestRetryLongRunsEarnCredit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: 100 * time.Millisecond, Multiplier: 2}}
		op, starts, ends := script([]run{{0, errFlaky}, {0, errFlaky}, {0, errFlaky}, {time.Hour, errFlaky}})
		_, err := Do(context.Background(), s, op)
		require.NoError(t, err)
		waits := make([]time.Duration, 4)
		for i := range waits {
			waits[i] = (*starts)[i+1].Sub((*ends)[i])
		}
		assert.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 100 * time.Millisecond}, waits)
	})
}

// TestPermanentEndsAfterOneCall: a Permanent error, or one WithPermanent
// classifies so, or context.Canceled, ends the loop on the call that
// returned it, whatever the strategy.
func TestPermanentEndsAfterOneCall(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := genRetryStrategy(rt)
		before := rapid.IntRange(0, 3).Draw(rt, "retryable failures before")
		runs := make([]run, before+1)
		for i := range before {
			runs[i] = run{time.Hour, errFlaky} // long runs: the credit keeps bounded going
		}
		cause := errors.New("404")
		var opts []Option
		switch rapid.IntRange(0, 2).Draw(rt, "how") {
		case 0:
			runs[before].err = fmt.Errorf("fetching: %w", Permanent(cause))
		case 1:
			runs[before].err = cause
			opts = append(opts, WithPermanent(func(err error) bool { return errors.Is(err, cause) }))
		case 2:
			cause = context.Canceled
			runs[before].err = cause
		}
		if s.Kind == retrypolicy.None || s.Kind == retrypolicy.Bounded && s.MaxAttempts <= before {
			return // the strategy gives up first
		}
		op, starts, _ := script(runs)
		var err error
		bubble(t, func() { _, err = Do(context.Background(), s, op, opts...) })
		var gu *GiveUpError
		require.ErrorAs(rt, err, &gu)
		if gu.Reason != NotRetryable || len(*starts) != before+1 || !errors.Is(err, cause) {
			rt.Fatalf("reason %v after %d calls: %v", gu.Reason, len(*starts), err)
		}
	})

}

// TestRetryNeverWaitsPastTheDeadline: with a deadline, Retry returns at
// once when the next call would be due after it, and never sleeps into it.
func TestRetryNeverWaitsPastTheDeadline(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: rapidgen.GrowingBackoff(rt)}
		budget := time.Duration(rapid.Int64Range(1, int64(10*time.Minute)).Draw(rt, "deadline"))
		runs := make([]run, 50)
		for i := range runs {
			runs[i] = run{time.Duration(rapid.Int64Range(0, int64(time.Second)).Draw(rt, "run")), errFlaky}
		}
		var err error
		var late []time.Duration // how far past the deadline a retry was due
		bubble(t, func() {
			ctx, cancel := context.WithTimeout(context.Background(), budget)
			defer cancel()
			deadline, _ := ctx.Deadline()
			op, _, _ := script(runs)
			_, err = Do(ctx, s, op, WithObserver(func(e Event) {
				if due := time.Now().Add(e.Wait); !due.Before(deadline) {
					late = append(late, due.Sub(deadline))
				}
			}))
		})
		if len(late) > 0 {
			rt.Fatalf("retries due past the deadline by %v", late)
		}
		if err == nil {
			return
		}
		var gu *GiveUpError
		require.ErrorAs(rt, err, &gu)
		if gu.Reason != PastDeadline && gu.Reason != ContextDone {
			rt.Fatalf("gave up for %v", gu.Reason)
		}
		if gu.Reason == ContextDone && !errors.Is(err, context.DeadlineExceeded) {
			rt.Fatalf("context done without its deadline: %v", err)
		}
	})
}

func TestCancellingWakesASleepingRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		s := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Hour}}
		go func() {
			time.Sleep(time.Minute)
			cancel()
		}()
		begin := time.Now()
		_, err := Do(ctx, s, func(context.Context) (int, error) { return 0, errFlaky })
		assert.Equal(t, time.Minute, time.Since(begin), "woken by the cancel, not the hour")
		var gu *GiveUpError
		require.ErrorAs(t, err, &gu)
		assert.Equal(t, ContextDone, gu.Reason)
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, errFlaky)
		assert.Equal(t, 1, gu.Failures)

		_, err = Do(ctx, s, func(context.Context) (int, error) { t.Fatal("called after the context was done"); return 0, nil })
		assert.ErrorIs(t, err, context.Canceled)
	})
}

// TestRetryAfterIsNeverCutShort: an After error waits the longer of its
// request and the strategy's delay; a request beyond the limit (by default
// the backoff's MaxDelay but at least a minute, or an hour) is not cut to
// it: Do gives up RetryAfterTooLong after that one call, carrying the wait
// asked, and does not report (it retried nothing). Until the rule changed
// the wait was min(asked, cap), a retry sooner than the server asked.
func TestRetryAfterIsNeverCutShort(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		b := rapidgen.GrowingBackoff(rt)
		b.Kind = retrypolicy.Exponential // no jitter: the first failure owes the base delay
		s := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: b}
		asked := time.Duration(rapid.Int64Range(0, int64(100*time.Hour)).Draw(rt, "retry after"))
		var opts []Option
		limit := time.Hour
		if b.MaxDelay > 0 {
			limit = max(b.MaxDelay, time.Minute)
		}
		if rapid.Bool().Draw(rt, "own cap") {
			limit = time.Duration(rapid.Int64Range(1, int64(10*time.Hour)).Draw(rt, "cap"))
			opts = append(opts, WithWaitLimit(limit))
		}
		var waits []Event
		var ends []End
		opts = append(opts, WithJitterSeed(1), WithObserver(func(e Event) { waits = append(waits, e) }), WithEnd(func(e End) { ends = append(ends, e) }))
		op, starts, _ := script([]run{{0, After(errFlaky, asked)}})
		var err error
		var reported bool
		bubble(t, func() {
			actx, a := StartAttempt(context.Background())
			_, err = Do(actx, s, op, opts...)
			reported = a.End()
		})
		strategyWait := b.BaseDelay // the run took no time: no credit
		if asked > limit {
			var gu *GiveUpError
			if !errors.As(err, &gu) || gu.Reason != RetryAfterTooLong {
				rt.Fatalf("asked %v beyond the limit %v: got %v, want a give-up retry_after_too_long", asked, limit, err)
			}
			if want := max(asked, strategyWait); gu.Wait != want || ends[0].GaveUp.Wait != want {
				rt.Fatalf("the give-up carries %v, want %v", gu.Wait, want)
			}
			if len(*starts) != 1 || len(waits) != 0 || reported {
				rt.Fatalf("%d calls, %d waits, reported %v: want one call, no wait, no report", len(*starts), len(waits), reported)
			}
			if w, ok := AfterWait(fmt.Errorf("above: %w", err)); !ok || w != gu.Wait {
				rt.Fatalf("a loop above reads %v, %v: want the wait asked", w, ok)
			}
			return
		}
		require.NoError(rt, err)
		require.Len(rt, waits, 1)
		require.Len(rt, *starts, 2)
		if !(*starts)[1].Equal(waits[0].Wake) {
			rt.Fatalf("the second call started at %v, the event said %v", (*starts)[1], waits[0].Wake)
		}
		if want := max(strategyWait, asked); waits[0].Wait != want {
			rt.Fatalf("waited %v: asked %v, limit %v, strategy %v", waits[0].Wait, asked, limit, strategyWait)
		}
		if !errors.Is(waits[0].Err, errFlaky) {
			rt.Fatalf("the observer saw %v", waits[0].Err)
		}
	})
}

// TestFullJitterSpreadsOverTheWholeDelay: with full jitter, each wait is in
// [0, credited], the same for the same seed, and spread over the range.
func TestFullJitterSpreadsOverTheWholeDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.ExponentialWithJitter, BaseDelay: 10 * time.Second, Multiplier: 2}}
		var low, high int
		for seed := range uint64(400) {
			var wait time.Duration
			op, _, _ := script([]run{{0, errFlaky}})
			_, err := Do(context.Background(), s, op, WithFullJitter(), WithJitterSeed(seed), WithObserver(func(e Event) { wait = e.Wait }))
			require.NoError(t, err)
			require.LessOrEqual(t, wait, 10*time.Second)
			require.GreaterOrEqual(t, wait, time.Duration(0))
			if wait < 5*time.Second {
				low++
			} else {
				high++
			}
		}
		assert.InDelta(t, 200, low, 50)
		assert.InDelta(t, 200, high, 50)
	})
}

func TestFullJitterBounds(t *testing.T) {
	assert.Equal(t, time.Duration(0), fullJitter(time.Second, 0))
	assert.Equal(t, time.Second, fullJitter(time.Second, 1<<53-1))
	assert.Equal(t, time.Duration(0), fullJitter(0, 1<<53-1))
}

func TestGiveUpErrorReads(t *testing.T) {
	err := &GiveUpError{Reason: AttemptsExhausted, Failures: 3, Err: errFlaky}
	assert.Equal(t, "retrypolicy: gave up after 3 failures (attempts_exhausted): flaky", err.Error())
	one := &GiveUpError{Reason: PastDeadline, Failures: 1, Err: errFlaky}
	assert.Equal(t, "retrypolicy: gave up after 1 failure (past_deadline): flaky", one.Error())
	assert.ErrorIs(t, err, errFlaky)
	assert.Nil(t, Permanent(nil))
	assert.Nil(t, After(nil, time.Second))
}

// TestMarksReadThroughWrapping: IsPermanent and AfterWait find their
// mark anywhere in an error's chain, and AfterWait returns the wait asked
// uncut (until the rule changed, it was cut to the strategy's cap).
func TestMarksReadThroughWrapping(t *testing.T) {
	base := errors.New("404")
	assert.True(t, IsPermanent(fmt.Errorf("fetching: %w", Permanent(base))))
	assert.False(t, IsPermanent(base))
	assert.False(t, IsPermanent(nil))
	assert.False(t, IsPermanent(After(base, time.Second)))

	for _, tc := range []struct {
		err  error
		want time.Duration
		ok   bool
	}{
		{fmt.Errorf("calling: %w", After(base, 90*time.Second)), 90 * time.Second, true},
		{After(base, 3*time.Hour), 3 * time.Hour, true},
		{After(base, -time.Second), 0, true},
		{&GiveUpError{Reason: RetryAfterTooLong, Wait: 10 * time.Minute, Err: base}, 10 * time.Minute, true},
		{&GiveUpError{Reason: AttemptsExhausted, Wait: 10 * time.Minute, Err: base}, 0, false},
		{base, 0, false},
		{nil, 0, false},
	} {
		got, ok := AfterWait(tc.err)
		assert.Equal(t, tc.ok, ok, "%v", tc.err)
		assert.Equal(t, tc.want, got, "%v", tc.err)
	}
}

// TestMarksReadEveryBranchOfAJoinedError: a mark in any branch of a joined
// error counts, whatever the order; the longest wait of each kind wins.
// Until the readers walked every branch, errors.Join(exhausted, deferred)
// hid the deferral and errors.Join(exhausted, notRetryable) read as
// retryable.
func TestMarksReadEveryBranchOfAJoinedError(t *testing.T) {
	exhausted := &GiveUpError{Reason: AttemptsExhausted, Failures: 3, Err: errFlaky}
	deferred := &GiveUpError{Reason: Deferred, Failures: 1, Err: errFlaky, Wait: 10 * time.Minute}
	notRetryable := &GiveUpError{Reason: NotRetryable, Failures: 1, Err: errFlaky}
	for _, err := range []error{errors.Join(exhausted, deferred), errors.Join(deferred, exhausted), fmt.Errorf("job: %w", errors.Join(nil, exhausted, fmt.Errorf("x: %w", deferred)))} {
		wait, ok := DeferredWait(err)
		assert.True(t, ok, "%v", err)
		assert.Equal(t, 10*time.Minute, wait)
	}
	assert.True(t, IsPermanent(errors.Join(exhausted, notRetryable)))
	assert.True(t, IsPermanent(errors.Join(notRetryable, exhausted)))
	assert.False(t, IsPermanent(errors.Join(exhausted, deferred)))

	wait, ok := AfterWait(errors.Join(After(errFlaky, time.Minute), errors.Join(errFlaky, After(errFlaky, time.Hour)), After(errFlaky, time.Second)))
	assert.True(t, ok)
	assert.Equal(t, time.Hour, wait, "the longest wait asked")
	wait, ok = DeferredWait(errors.Join(deferred, &GiveUpError{Reason: Deferred, Wait: time.Hour}))
	assert.True(t, ok)
	assert.Equal(t, time.Hour, wait, "the longest wait deferred")
}

// selfJoined is an error whose every branch is itself.
type selfJoined struct{ n int }

func (e *selfJoined) Error() string { return "self" }
func (e *selfJoined) Unwrap() []error {
	e.n++
	return []error{e, e, e}
}

// TestMarkReadersEndOnAChainThatHoldsItself: a joined error whose branches
// hold itself is looked through at most 1,000 errors in all, repeats
// counted, by every reader.
func TestMarkReadersEndOnAChainThatHoldsItself(t *testing.T) {
	e := &selfJoined{}
	assert.False(t, IsPermanent(e))
	assert.LessOrEqual(t, e.n, 1000)
	e.n = 0
	_, ok := AfterWait(e)
	assert.False(t, ok)
	assert.LessOrEqual(t, e.n, 1000)
	e.n = 0
	// Do reads it once a failure.
	_, err := Do(context.Background(), retrypolicy.Strategy{Kind: retrypolicy.None}, func(context.Context) (int, error) { return 0, e })
	assert.ErrorAs(t, err, new(*GiveUpError))
	assert.LessOrEqual(t, e.n, 1000)
	assert.Positive(t, e.n)
}

// TestIsPermanentSeesAGiveUpOnAPermanentError: the error a Retry returns
// when op's error was permanent is permanent too, so that an outer loop
// or a queue does not retry what the inner loop would not; a give-up for
// any other reason is not.
func TestIsPermanentSeesAGiveUpOnAPermanentError(t *testing.T) {
	base := errors.New("404")
	_, err := Do(context.Background(), retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3}, func(context.Context) (int, error) {
		return 0, Permanent(base)
	})
	var gu *GiveUpError
	require.ErrorAs(t, err, &gu)
	require.Equal(t, NotRetryable, gu.Reason)
	assert.True(t, IsPermanent(err))
	assert.True(t, IsPermanent(fmt.Errorf("job: %w", err)))

	_, err = Do(context.Background(), retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 1}, func(context.Context) (int, error) {
		return 0, base
	})
	require.ErrorAs(t, err, &gu)
	require.Equal(t, AttemptsExhausted, gu.Reason)
	assert.False(t, IsPermanent(err), "attempts exhausted: another loop may try again later")
}

// TestRecordTakesANegativeUptimeAsZero: Record takes a negative uptime as
// a run of no length, as its doc says, rather than refusing it.
func TestRecordTakesANegativeUptimeAsZero(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	neg, zero := retrypolicy.NewHistory(nil), retrypolicy.NewHistory(nil)
	require.NoError(t, neg.Record(at, -time.Hour))
	require.NoError(t, zero.Record(at, 0))
	dn, err := neg.Decide(0, at)
	require.NoError(t, err)
	dz, err := zero.Decide(0, at)
	require.NoError(t, err)
	assert.Equal(t, dz, dn)
	assert.Equal(t, time.Second, dn.Delay)
}

// TestWithEndSaysHowRetryEnded: the end hook is called once, with the
// calls of op and the GiveUpError when it gave up; observers given twice
// are both called, in order.
func TestWithEndSaysHowRetryEnded(t *testing.T) {
	fast := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}
	synctest.Test(t, func(t *testing.T) {
		var ends []End
		var seen []string
		calls := 0
		_, err := Do(context.Background(), fast, func(context.Context) (int, error) {
			if calls++; calls < 3 {
				return 0, errors.New("flaky")
			}
			return 1, nil
		}, WithEnd(func(e End) { ends = append(ends, e) }),
			WithObserver(func(Event) { seen = append(seen, "first") }),
			WithObserver(func(Event) { seen = append(seen, "second") }))
		require.NoError(t, err)
		require.Len(t, ends, 1)
		assert.Equal(t, End{Attempts: 3, Took: 2 * time.Millisecond, Context: context.Background()}, ends[0])
		assert.Equal(t, []string{"first", "second", "first", "second"}, seen)

		ends = nil
		_, err = Do(context.Background(), fast, func(context.Context) (int, error) { return 0, errors.New("down") },
			WithEnd(func(e End) { ends = append(ends, e) }), WithEnd(func(e End) { ends = append(ends, e) }))
		require.Error(t, err)
		require.Len(t, ends, 2, "both end hooks")
		assert.Equal(t, 3, ends[0].Attempts)
		require.NotNil(t, ends[0].GaveUp)
		assert.Equal(t, AttemptsExhausted, ends[0].GaveUp.Reason)
		assert.Same(t, ends[0].GaveUp, ends[1].GaveUp)

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		ends = nil
		_, _ = Do(ctx, fast, func(context.Context) (int, error) { return 1, nil }, WithEnd(func(e End) { ends = append(ends, e) }))
		require.Len(t, ends, 1)
		assert.Equal(t, 0, ends[0].Attempts)
		assert.Equal(t, ContextDone, ends[0].GaveUp.Reason)
	})
}

// TestRetryAroundRetryStopsOnAPermanentGiveUp: a Retry whose op is a Retry
// that met a permanent error gives up at once too, as IsPermanent says.
func TestRetryAroundRetryStopsOnAPermanentGiveUp(t *testing.T) {
	outer := 0
	_, err := Do(context.Background(), retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5}, func(ctx context.Context) (int, error) {
		outer++
		return Do(ctx, retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5}, func(context.Context) (int, error) {
			return 0, Permanent(errors.New("404"))
		})
	})
	var gu *GiveUpError
	require.ErrorAs(t, err, &gu)
	assert.Equal(t, NotRetryable, gu.Reason)
	assert.Equal(t, 1, outer, "the outer loop does not call again")
}

// isTimeout is an error whose Is method says it is context.DeadlineExceeded.
type isTimeout struct{}

func (isTimeout) Error() string        { return "timed out" }
func (isTimeout) Is(target error) bool { return target == context.DeadlineExceeded }

// TestAContextsEndIsReadInEveryBranchBounded: ReadMarks finds
// context.Canceled and context.DeadlineExceeded by == or an Is method in
// any branch of a joined error, and ends on an error that holds itself,
// where errors.Is would never return; an error of a type == cannot compare
// is looked at without a panic.
func TestAContextsEndIsReadInEveryBranchBounded(t *testing.T) {
	assert.True(t, ReadMarks(fmt.Errorf("run: %w", errors.Join(errFlaky, context.Canceled))).Canceled)
	m := ReadMarks(errors.Join(errFlaky, isTimeout{}))
	assert.True(t, m.DeadlineExceeded)
	assert.False(t, m.Canceled)
	assert.False(t, ReadMarks(errFlaky).Canceled)
	assert.False(t, ReadMarks(nil).DeadlineExceeded)
	e := &selfJoined{}
	assert.False(t, ReadMarks(e).Canceled)
	assert.LessOrEqual(t, e.n, 1000)
	assert.False(t, ReadMarks(fmt.Errorf("x: %w", uncomparable{parts: []string{"b"}})).Canceled)
}

// uncomparable is an error type whose values cannot be compared with ==.
type uncomparable struct{ parts []string }

func (uncomparable) Error() string { return "uncomparable" }
