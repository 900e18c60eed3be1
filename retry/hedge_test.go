package retry

import (
	"context"
	"errors"
	"runtime"
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

// step is what one attempt of a scripted op does: answer after took,
// with err (nil: a success returning its index).
type step struct {
	took time.Duration
	err  error
}

// hscript is an op whose attempts follow steps by their order of sending;
// it records each attempt's end: returned, or cancelled first.
type hscript struct {
	steps     []step
	sent      atomic.Int32
	returned  atomic.Int32
	cancelled atomic.Int32
}

func (s *hscript) op(ctx context.Context) (int, error) {
	i := int(s.sent.Add(1)) - 1
	defer s.returned.Add(1)
	st := s.steps[min(i, len(s.steps)-1)]
	select {
	case <-time.After(st.took):
		return i, st.err
	case <-ctx.Done():
		s.cancelled.Add(1)
		return 0, ctx.Err()
	}
}

var (
	forever  = retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Second}}
	errSlow  = errors.New("slow")
	err404   = Permanent(errors.New("404"))
	hedge20  = WithHedging(Hedging{Delay: 20 * time.Millisecond})
	hedge20x = func(n int) Option { return WithHedging(Hedging{Attempts: n, Delay: 20 * time.Millisecond}) }
)

// hedged runs a Hedge of sc under synctest and returns its value, error,
// End and the time it took.
func hedged(t *testing.T, sc *hscript, opts ...Option) (v int, end End, took time.Duration, err error) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		opts = append(opts, WithEnd(func(e End) { end = e }))
		v, err = Hedge(context.Background(), forever, sc.op, opts...)
		took = time.Since(start)
		assert.Equal(t, sc.sent.Load(), sc.returned.Load(), "an attempt outlived the call")
	})
	return v, end, took, err
}

// TestHedgeSentAfterTheDelayAndTheFirstAnswerWins: a slow first attempt is
// raced by a hedge sent Delay after it; the hedge's answer is returned as
// it arrives, the first attempt is cancelled and waited for.
func TestHedgeSentAfterTheDelayAndTheFirstAnswerWins(t *testing.T) {
	sc := &hscript{steps: []step{{took: time.Second}, {took: 10 * time.Millisecond}}}
	v, end, took, err := hedged(t, sc, hedge20)
	require.NoError(t, err)
	assert.Equal(t, 1, v, "the hedge's answer")
	assert.Equal(t, 30*time.Millisecond, took)
	assert.Equal(t, End{Attempts: 2, Hedges: 1, HedgeWon: true}, End{Attempts: end.Attempts, Hedges: end.Hedges, HedgeWon: end.HedgeWon})
	assert.Equal(t, int32(1), sc.cancelled.Load(), "the loser cancelled")
}

// TestHedgeNotSentWhenTheFirstAnswersInTime: an answer before the delay
// sends nothing more.
func TestHedgeNotSentWhenTheFirstAnswersInTime(t *testing.T) {
	sc := &hscript{steps: []step{{took: 19 * time.Millisecond}}}
	v, end, _, err := hedged(t, sc, hedge20)
	require.NoError(t, err)
	assert.Equal(t, 0, v)
	assert.Equal(t, 1, end.Attempts)
	assert.Equal(t, 0, end.Hedges)
	assert.False(t, end.HedgeWon)
}

// TestHedgeATransientFailureSendsTheNextAtOnce: a failure at 5 ms sends
// the next attempt then, told with Wait 0 and the failure.
func TestHedgeATransientFailureSendsTheNextAtOnce(t *testing.T) {
	sc := &hscript{steps: []step{{took: 5 * time.Millisecond, err: errSlow}, {took: 10 * time.Millisecond}}}
	var events []Event
	v, end, took, err := hedged(t, sc, hedge20, WithObserver(func(e Event) { events = append(events, e) }))
	require.NoError(t, err)
	assert.Equal(t, 1, v)
	assert.Equal(t, 15*time.Millisecond, took)
	assert.True(t, end.HedgeWon)
	require.Len(t, events, 1)
	assert.True(t, events[0].Hedge)
	assert.Equal(t, 1, events[0].Failures)
	assert.ErrorIs(t, events[0].Err, errSlow)
	assert.Zero(t, events[0].Wait)
	assert.Zero(t, events[0].Decision)
}

// TestHedgeTheDelayIsToldWithoutAnError: a hedge the delay sent is told
// with Err nil and Wait the delay.
func TestHedgeTheDelayIsToldWithoutAnError(t *testing.T) {
	sc := &hscript{steps: []step{{took: time.Second}, {took: time.Millisecond}}}
	var events []Event
	_, _, _, err := hedged(t, sc, hedge20, WithObserver(func(e Event) { events = append(events, e) }))
	require.NoError(t, err)
	require.Len(t, events, 1)
	assert.True(t, events[0].Hedge)
	assert.NoError(t, events[0].Err)
	assert.Equal(t, 20*time.Millisecond, events[0].Wait)
	assert.Zero(t, events[0].Failures)
}

// TestHedgeEachWaitIsSinceThePreviousSend: with three attempts, the
// second hedge is told with Wait the delay since the first hedge, not
// since the first attempt.
func TestHedgeEachWaitIsSinceThePreviousSend(t *testing.T) {
	sc := &hscript{steps: []step{{took: time.Second}, {took: time.Second}, {took: time.Millisecond}}}
	var waits []time.Duration
	_, _, _, err := hedged(t, sc, hedge20x(3), WithoutBudget(), WithObserver(func(e Event) { waits = append(waits, e.Wait) }))
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{20 * time.Millisecond, 20 * time.Millisecond}, waits)
}

// TestHedgeAFastAnswerNotRetriedWins: a 404 from the hedge beats the first
// attempt's slower success, and the call ended well (it deposits).
func TestHedgeAFastAnswerNotRetriedWins(t *testing.T) {
	b, err := NewBudget(0.5, 2)
	require.NoError(t, err)
	sc := &hscript{steps: []step{{took: time.Second}, {took: time.Millisecond, err: err404}}}
	_, end, _, err := hedged(t, sc, hedge20, WithBudget(b))
	var g *GiveUpError
	require.ErrorAs(t, err, &g)
	assert.Equal(t, NotRetryable, g.Reason)
	assert.Equal(t, 1, g.Failures)
	assert.True(t, end.HedgeWon)
	assert.InDelta(t, 1.5, b.Tokens(), 1e-9, "a hedge withdrew one token, the call deposited 0.5")
}

// TestHedgeSendsAtMostAttempts: every attempt failing slowly, Attempts
// bounds the sends; bounded's max_attempts caps Attempts; none never
// hedges.
func TestHedgeSendsAtMostAttempts(t *testing.T) {
	slow := []step{{took: 100 * time.Millisecond, err: errSlow}}
	for _, c := range []struct {
		name   string
		s      retrypolicy.Strategy
		n      int
		want   int
		reason Reason
	}{
		{"unless_stopped", forever, 4, 4, AttemptsExhausted},
		{"bounded", retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Second}}, 5, 3, AttemptsExhausted},
		{"none", retrypolicy.Strategy{Kind: retrypolicy.None}, 5, 1, StrategyNone},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sc := &hscript{steps: slow}
				_, err := Hedge(context.Background(), c.s, sc.op, WithoutBudget(), hedge20x(c.n))
				var g *GiveUpError
				require.ErrorAs(t, err, &g)
				assert.Equal(t, c.reason, g.Reason)
				assert.Equal(t, int32(c.want), sc.sent.Load())
				assert.Equal(t, c.want, g.Failures)
			})
		})
	}
}

// TestHedgeNotSentPastTheDeadline: a hedge due after the caller's deadline
// (a server asked a wait that ends past it) is not sent: the call gives up
// past_deadline at once rather than sleep into the deadline.
func TestHedgeNotSentPastTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := &hscript{steps: []step{{took: 5 * time.Millisecond, err: After(errSlow, 50*time.Millisecond)}, {took: time.Millisecond}}}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := Hedge(ctx, forever, sc.op, hedge20)
		var g *GiveUpError
		require.ErrorAs(t, err, &g)
		assert.Equal(t, PastDeadline, g.Reason)
		assert.Equal(t, 5*time.Millisecond, time.Since(start))
		assert.Equal(t, int32(1), sc.sent.Load())
	})
}

// TestHedgeAnEmptyBudgetStopsHedgesButNoAttempt: with no token, no hedge
// is sent and the first attempt still answers; with every attempt
// failing, the call gives up budget_exhausted.
func TestHedgeAnEmptyBudgetStopsHedgesButNoAttempt(t *testing.T) {
	b, err := NewBudget(0.1, 1)
	require.NoError(t, err)
	require.True(t, b.Withdraw())
	sc := &hscript{steps: []step{{took: time.Second}}}
	v, end, took, err := hedged(t, sc, hedge20, WithBudget(b))
	require.NoError(t, err)
	assert.Equal(t, 0, v)
	assert.Equal(t, time.Second, took, "the attempt in flight was not cancelled")
	assert.Equal(t, 1, end.Attempts)
	assert.InDelta(t, 0.1, b.Tokens(), 1e-9, "one deposit, no withdrawal")

	sc = &hscript{steps: []step{{took: time.Second, err: errSlow}}}
	_, _, _, err = hedged(t, sc, hedge20, WithBudget(b))
	var g *GiveUpError
	require.ErrorAs(t, err, &g)
	assert.Equal(t, BudgetExhausted, g.Reason)
	assert.InDelta(t, 0.1, b.Tokens(), 1e-9, "a call that ended badly deposits nothing")
}

// TestHedgeAServersWaitDelaysTheNext: a wait asked within the limit holds
// the next attempt back until it ends; one beyond it stops hedging and the
// call gives up retry_after_too_long.
func TestHedgeAServersWaitDelaysTheNext(t *testing.T) {
	sc := &hscript{steps: []step{{took: 5 * time.Millisecond, err: After(errSlow, 50*time.Millisecond)}, {took: time.Millisecond}}}
	_, _, took, err := hedged(t, sc, hedge20)
	require.NoError(t, err)
	assert.Equal(t, 56*time.Millisecond, took, "sent when the wait asked ended")

	sc = &hscript{steps: []step{{took: 5 * time.Millisecond, err: After(errSlow, time.Hour)}, {took: time.Millisecond}}}
	_, _, _, err = hedged(t, sc, hedge20, WithWaitLimit(time.Minute))
	var g *GiveUpError
	require.ErrorAs(t, err, &g)
	assert.Equal(t, RetryAfterTooLong, g.Reason)
	assert.Equal(t, time.Hour, g.Wait)
	assert.Equal(t, int32(1), sc.sent.Load())
}

// TestHedgeARefusalStopsHedgesAndWaitsForTheOthers: a server's refusal on
// the hedge stops hedging; the first attempt, outstanding, still wins; with
// none to win, the call gives up not_retryable.
func TestHedgeARefusalStopsHedgesAndWaitsForTheOthers(t *testing.T) {
	refused := PermanentFailure(errors.New("overloaded"))
	sc := &hscript{steps: []step{{took: 100 * time.Millisecond}, {took: time.Millisecond, err: refused}, {took: time.Millisecond}}}
	v, end, took, err := hedged(t, sc, hedge20x(3))
	require.NoError(t, err)
	assert.Equal(t, 0, v, "the first attempt won")
	assert.Equal(t, 100*time.Millisecond, took)
	assert.Equal(t, 2, end.Attempts, "no hedge after the refusal")

	sc = &hscript{steps: []step{{took: 100 * time.Millisecond, err: errSlow}, {took: time.Millisecond, err: refused}}}
	_, _, _, err = hedged(t, sc, hedge20x(3))
	var g *GiveUpError
	require.ErrorAs(t, err, &g)
	assert.Equal(t, NotRetryable, g.Reason)
	assert.Equal(t, 2, g.Failures)
}

// TestHedgeRetriedBelowStopsHedges: an attempt retried below stops
// hedging, and the call gives up retried_below once the others failed; a
// loop inside a hedged call's attempt does not hedge.
func TestHedgeRetriedBelowStopsHedges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var inner atomic.Int32
		op := func(ctx context.Context) (int, error) {
			return Hedge(ctx, forever, func(context.Context) (int, error) {
				inner.Add(1)
				time.Sleep(30 * time.Millisecond)
				return 0, Permanent(errSlow) // not retried below: one attempt
			}, hedge20)
		}
		_, err := Hedge(context.Background(), forever, op, hedge20x(2))
		assert.Equal(t, int32(2), inner.Load(), "the inner loop hedged nothing: one attempt under each outer one")
		var g *GiveUpError
		require.ErrorAs(t, err, &g)
		assert.Equal(t, NotRetryable, g.Reason)

		op = func(ctx context.Context) (int, error) {
			Report(ctx)
			time.Sleep(5 * time.Millisecond)
			return 0, errSlow
		}
		var sent atomic.Int32
		_, err = Hedge(context.Background(), forever, func(ctx context.Context) (int, error) { sent.Add(1); return op(ctx) }, hedge20x(4))
		require.ErrorAs(t, err, &g)
		assert.Equal(t, RetriedBelow, g.Reason)
		assert.Equal(t, int32(1), sent.Load())
	})
}

// closer is a value whose Close is counted.
type closer struct{ closed *atomic.Int32 }

func (c closer) Close() error { c.closed.Add(1); return nil }

// TestHedgeALosersCloserIsClosed: a loser that answered after the call
// ended has its value closed; the winner's is not.
func TestHedgeALosersCloserIsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var closed, n atomic.Int32
		op := func(ctx context.Context) (closer, error) {
			if n.Add(1) == 1 {
				time.Sleep(time.Second) // deaf to its context: answers anyway
			}
			return closer{&closed}, nil
		}
		_, err := Hedge(context.Background(), forever, op, hedge20)
		require.NoError(t, err)
		assert.Equal(t, int32(1), closed.Load())
	})
}

// TestHedgeRefusedWhereItDoesNotBelong: Do and Loop.Do refuse WithHedging
// naming Hedge; Hedge needs it and refuses a Quantile; New refuses an
// invalid Hedging.
func TestHedgeRefusedWhereItDoesNotBelong(t *testing.T) {
	op := func(context.Context) (int, error) { return 1, nil }
	_, err := Do(context.Background(), forever, op, hedge20)
	assert.ErrorContains(t, err, "retry.Hedge")
	l, err := New[int](forever, hedge20)
	require.NoError(t, err)
	_, err = l.Do(context.Background(), op)
	assert.ErrorContains(t, err, "Loop.Hedge")
	_, err = Hedge(context.Background(), forever, op)
	assert.ErrorContains(t, err, "retry.WithHedging")
	_, err = Hedge(context.Background(), forever, op, WithHedging(Hedging{Delay: time.Millisecond, Quantile: 0.9}))
	assert.ErrorContains(t, err, "Quantile")
	for _, h := range []Hedging{{}, {Delay: 1, Attempts: 6}, {Delay: 1, Attempts: 1}, {Delay: 1, Quantile: 1}, {Delay: 1, MinDelay: 2, MaxDelay: 1}} {
		_, err = New[int](forever, WithHedging(h))
		assert.ErrorContains(t, err, "retry.WithHedging: ", "%+v", h)
	}
	_, err = New[int](forever, hedge20, hedge20)
	assert.ErrorContains(t, err, "given twice")
}

// TestHedgeTheDelayFollowsTheLatency: a loop with a Quantile hedges at its
// Delay until it has seen HedgeWarmup latencies, then at their quantile
// within MinDelay.
func TestHedgeTheDelayFollowsTheLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := New[int](forever, WithoutBudget(), WithHedging(Hedging{Delay: 50 * time.Millisecond, Quantile: 0.5, MinDelay: 2 * time.Millisecond}))
		require.NoError(t, err)
		var sent atomic.Int32
		op := func(d time.Duration) func(context.Context) (int, error) {
			return func(context.Context) (int, error) { sent.Add(1); time.Sleep(d); return 0, nil }
		}
		for range HedgeWarmup - 1 {
			_, _ = l.Hedge(context.Background(), op(10*time.Millisecond))
		}
		sent.Store(0)
		_, _ = l.Hedge(context.Background(), op(30*time.Millisecond))
		assert.Equal(t, int32(1), sent.Load(), "the fixed delay until 20 samples")
		sent.Store(0)
		_, _ = l.Hedge(context.Background(), op(30*time.Millisecond))
		assert.Equal(t, int32(2), sent.Load(), "the median, 10 ms, once 20 were seen")
	})
}

// TestHedgeAWinningHedgesLatencyIsFromItsOwnSend: a hedge that wins is
// sampled from its own send, not the call's first: hedges sent at 20 ms
// that answer 5 ms later make a following delay of 5 ms, so a first
// attempt of 10 ms is then hedged (from the call's start, 25 ms, it would
// not be).
func TestHedgeAWinningHedgesLatencyIsFromItsOwnSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := New[int](forever, WithoutBudget(), WithHedging(Hedging{Delay: 20 * time.Millisecond, Quantile: 0.5, MinDelay: time.Millisecond}))
		require.NoError(t, err)
		for range HedgeWarmup {
			sc := &hscript{steps: []step{{took: time.Second}, {took: 5 * time.Millisecond}}}
			_, err := l.Hedge(context.Background(), sc.op)
			require.NoError(t, err)
		}
		sc := &hscript{steps: []step{{took: 10 * time.Millisecond}}}
		_, err = l.Hedge(context.Background(), sc.op)
		require.NoError(t, err)
		assert.Equal(t, int32(2), sc.sent.Load(), "hedged at the median of the hedges' own latencies, 5 ms")
	})
}

// TestHedgeLeavesNoGoroutine: many hedged calls, each with a loser, leave
// no goroutine behind.
func TestHedgeLeavesNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		before := runtime.NumGoroutine()
		for range 1000 {
			sc := &hscript{steps: []step{{took: time.Second}, {took: time.Millisecond}}}
			_, err := Hedge(context.Background(), forever, sc.op, hedge20, WithoutBudget())
			require.NoError(t, err)
		}
		synctest.Wait()
		// The count is the process's: a goroutine of the test runner's may
		// start meanwhile, so 2 are tolerated; a leak would be one a call.
		assert.LessOrEqual(t, runtime.NumGoroutine(), before+2, "goroutines left by 1,000 hedged calls")
	})
}

// TestHedgeTheObserverMayBeCalledConcurrently: calls that run at once call
// a shared observer at once (run with -race: the observer locks).
func TestHedgeTheObserverMayBeCalledConcurrently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		hedges := 0
		l, err := New[int](forever, hedge20, WithoutBudget(), WithObserver(func(e Event) { mu.Lock(); hedges++; mu.Unlock() }))
		require.NoError(t, err)
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				sc := &hscript{steps: []step{{took: time.Second}, {took: time.Millisecond}}}
				_, _ = l.Hedge(context.Background(), sc.op)
			})
		}
		wg.Wait()
		assert.Equal(t, 10, hedges)
	})
}

// hedgeCallSpec is one call of the property below: hedged or retried,
// its hedging's Attempts, its strategy's max_attempts, and its attempts'
// latencies and outcomes by order of sending.
type hedgeCallSpec struct {
	hedge    bool
	attempts int
	most     int
	steps    []step
}

var errNotFound = errors.New("404")

// TestHedgePropertyOneBudgetBoundsRetriesAndHedges pins the rule of a
// token budget shared by retries and hedges: for any sequence of calls
// (retried by Do, hedged by Hedge), latencies and outcomes, retries plus
// hedges <= burst + ratio × calls that ended well; and no call sends more
// attempts than its maximum (bounded's max_attempts, and Hedging.Attempts
// for a hedged one).
func TestHedgePropertyOneBudgetBoundsRetriesAndHedges(t *testing.T) {
	outcomes := []error{nil, errSlow, Permanent(errNotFound), PermanentFailure(errSlow), After(errSlow, 3*time.Millisecond)}
	rapid.Check(t, func(rt *rapid.T) {
		ratio := rapid.SampledFrom([]float64{0, 0.1, 0.5, 1}).Draw(rt, "ratio")
		burst := rapid.IntRange(1, 4).Draw(rt, "burst")
		genStep := rapid.Custom(func(rt *rapid.T) step {
			return step{took: time.Duration(rapid.IntRange(0, 40).Draw(rt, "ms")) * time.Millisecond, err: rapid.SampledFrom(outcomes).Draw(rt, "outcome")}
		})
		specs := rapid.SliceOfN(rapid.Custom(func(rt *rapid.T) hedgeCallSpec {
			return hedgeCallSpec{
				hedge: rapid.Bool().Draw(rt, "hedge"), attempts: rapid.IntRange(2, MaxHedgeAttempts).Draw(rt, "attempts"),
				most: rapid.IntRange(1, 6).Draw(rt, "max_attempts"), steps: rapid.SliceOfN(genStep, 1, 6).Draw(rt, "steps"),
			}
		}), 1, 30).Draw(rt, "calls")
		b, err := NewBudget(ratio, burst)
		require.NoError(rt, err)
		extra, well := 0, 0
		bubble(t, func() {
			for i, c := range specs {
				s := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: c.most, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}
				sc := &hscript{steps: c.steps}
				var end End
				opts := []Option{WithBudget(b), WithEnd(func(e End) { end = e })}
				limit := c.most
				if c.hedge {
					_, err = Hedge(context.Background(), s, sc.op, append(opts, WithHedging(Hedging{Attempts: c.attempts, Delay: 10 * time.Millisecond}))...)
					limit = min(c.attempts, c.most)
				} else {
					_, err = Do(context.Background(), s, sc.op, opts...)
				}
				if end.Attempts > limit || int(sc.sent.Load()) != end.Attempts {
					rt.Fatalf("call %d sent %d attempts (told %d), its maximum %d", i, sc.sent.Load(), end.Attempts, limit)
				}
				extra += end.Attempts - 1
				if err == nil || errors.Is(err, errNotFound) {
					well++
				}
			}
		})
		if bound := float64(burst) + ratio*float64(well); float64(extra) > bound+1e-9 {
			rt.Fatalf("%d retries and hedges, more than burst %d + %v × %d calls that ended well", extra, burst, ratio, well)
		}
	})
}

// TestAHedgingLayerReportsAsARetryingOne: a hedged call that sent two
// attempts and gave up reports to the layer it runs under, which then
// gives up retried_below rather than retry it.
func TestAHedgingLayerReportsAsARetryingOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var outer int
		three := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Second}}
		_, err := Do(context.Background(), three, func(ctx context.Context) (int, error) {
			outer++
			sc := &hscript{steps: []step{{took: 30 * time.Millisecond, err: errSlow}}}
			return Hedge(ctx, forever, sc.op, hedge20, WithoutBudget())
		})
		var g *GiveUpError
		require.ErrorAs(t, err, &g)
		assert.Equal(t, RetriedBelow, g.Reason)
		assert.Equal(t, 1, outer, "the outer layer did not retry")
	})
}

// TestAFollowingDelayAllocatesNothingPerCall: once warm, a loop whose
// delay follows the latency allocates per call what a fixed one does.
func TestAFollowingDelayAllocatesNothingPerCall(t *testing.T) {
	op := func(context.Context) (int, error) { return 1, nil }
	allocs := func(h Hedging) float64 {
		l, err := New[int](forever, WithHedging(h))
		require.NoError(t, err)
		for range 2 * HedgeSamples {
			_, _ = l.Hedge(context.Background(), op)
		}
		// Several calls a run, so that the quantile's recomputing (every
		// few samples) is in each run.
		return testing.AllocsPerRun(20, func() {
			for range 2 * sketchRefresh {
				_, _ = l.Hedge(context.Background(), op)
			}
		})
	}
	fixed := allocs(Hedging{Delay: time.Second})
	following := allocs(Hedging{Delay: time.Second, Quantile: 0.95, MinDelay: time.Second})
	assert.Equal(t, fixed, following)
}

// TestAHedgedCallAnsweredInTimeAllocatesLittle: a hedged call answered
// before its delay allocates its state (one object, its first attempt's
// context inside) and its delay's timer (the timer and its function): no
// channel, no goroutine, no copy of its settings. (It had allocated 6
// times through a Loop and 8 through Hedge.)
func TestAHedgedCallAnsweredInTimeAllocatesLittle(t *testing.T) {
	op := func(context.Context) (int, error) { return 1, nil }
	hour := WithHedging(Hedging{Delay: time.Hour}) // never passes, however slow the machine
	l, err := New[int](forever, hour)
	require.NoError(t, err)
	assert.LessOrEqual(t, testing.AllocsPerRun(100, func() { _, _ = l.Hedge(context.Background(), op) }), 3.0, "Loop.Hedge")
	assert.LessOrEqual(t, testing.AllocsPerRun(100, func() { _, _ = Hedge(context.Background(), forever, op, hour) }), 3.0, "Hedge")
}

// TestHedgeALongWaitInAJobIsDeferred: inside a queue's job, a server's
// wait beyond the limit ends the hedged call deferred, carrying the wait.
func TestHedgeALongWaitInAJobIsDeferred(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := &hscript{steps: []step{{took: 5 * time.Millisecond, err: After(errSlow, time.Hour)}}}
		_, err := Hedge(DeferAfter(context.Background(), 5*time.Second), forever, sc.op, hedge20, WithWaitLimit(time.Minute))
		var g *GiveUpError
		require.ErrorAs(t, err, &g)
		assert.Equal(t, Deferred, g.Reason)
		assert.Equal(t, time.Hour, g.Wait)
		w, ok := DeferredWait(err)
		assert.True(t, ok)
		assert.Equal(t, time.Hour, w)
	})
}

// TestAHedgedCallIsThrottledAndCountsItsResends: a hedged call asks its
// throttle before its first attempt (a call it rejects sends nothing and
// gives up throttled), each hedge is a request and the winner's answer an
// accept; and the hidden resends of its attempts, the loser's included,
// are counted in its End.
func TestAHedgedCallIsThrottledAndCountsItsResends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		th, err := NewThrottle(2, time.Minute)
		require.NoError(t, err)
		var sent atomic.Int32
		var end End
		v, err := Hedge(context.Background(), forever, func(ctx context.Context) (int, error) {
			n := sent.Add(1)
			WatchHidden(ctx)
			HiddenResend(ctx) // each attempt sent again once on its own, free
			if n == 1 {
				<-ctx.Done() // slow: the hedge wins
				return 0, ctx.Err()
			}
			return 7, nil
		}, hedge20, WithThrottle(th), WithEnd(func(e End) { end = e }))
		require.NoError(t, err)
		assert.Equal(t, 7, v)
		assert.Equal(t, 1, end.Hedges)
		assert.True(t, end.HedgeWon)
		assert.Equal(t, 2, end.HiddenResends, "the loser's resend too")
		assert.True(t, end.HiddenSeen)
		assert.Equal(t, int64(2), th.ring.SumA, "two requests: the first attempt, as the throttle let it through, and the hedge")
		assert.Equal(t, int64(1), th.ring.SumB, "one accept: the winner")

		for range 1000 {
			th.Sent() // a dependency that accepted nothing: p = 1002 - 2 / 1003
		}
		th.Seed(3)
		rejected := 0
		for range 20 {
			before := sent.Load()
			_, err := Hedge(context.Background(), forever, func(context.Context) (int, error) { sent.Add(1); return 1, nil }, hedge20, WithThrottle(th))
			if ge, _ := errors.AsType[*GiveUpError](err); ge != nil && ge.Reason == Throttled {
				rejected++
				assert.Equal(t, before, sent.Load(), "a rejected call sends nothing")
			}
		}
		assert.Greater(t, rejected, 15, "nearly every call rejected")
	})
}
