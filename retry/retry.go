package retry

import (
	"context"
	"errors"
	"math/bits"
	"math/rand/v2"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/splitmix"
)

// End is how a call of the loop ended.
type End struct {
	// Attempts counts the calls of op: 0 when the context was done before
	// the first.
	Attempts int
	// GaveUp is the error the loop returns when op never succeeded, nil
	// when it did.
	GaveUp *GiveUpError
	// Took is the time from the call's start to its return.
	Took time.Duration
	// Context is the call's context, as WithStart made it.
	Context context.Context
	// HiddenResends counts the sends of the call's attempts that their
	// transport made on its own, out of the loop's sight (see
	// HiddenResend): none of them is an attempt. It is known only when
	// HiddenSeen is true.
	HiddenResends int
	// HiddenSeen reports whether the adapter saw the attempts' hidden
	// resends (a retryhttp transport over net/http's; retrygrpc with its
	// stats handler, WithHiddenResends): when false, HiddenResends is 0
	// because none could be seen, not because none were made.
	HiddenSeen bool
	// Hedges counts the attempts a hedged call sent after its first
	// (WithHedging); Attempts counts them too.
	Hedges int
	// HedgeWon says whether a hedge's answer (a success, or an answer not
	// retried) ended the call.
	HedgeWon bool
}

// Event is a retry about to happen, or a hedge being sent (Hedge); or,
// with Failures 0 and Hedge false, what an adapter
// tells the observers that is not a retry (Loop.Observe): its Err says
// what.
type Event struct {
	// Failures counts op's failures so far, this one included.
	Failures int
	// Err is the error op returned.
	Err error
	// Decision is the strategy's decision on the failures so far; its Due
	// leaves out an After's wait and the full jitter.
	Decision retrypolicy.Decision
	// Wait is how long after the failure Do calls op again.
	Wait time.Duration
	// Wake is when: the failure's moment plus Wait.
	Wake time.Time
	// Context is the call's context, as WithStart made it (not the
	// attempt's).
	Context context.Context
	// Hidden reports that the event is a hidden resend, not a retry: the
	// attempt's transport sent it again on its own (see HiddenResend).
	// Failures then counts the failures before the attempt, Err is
	// ErrHiddenResend, and Decision, Wait and Wake are zero.
	Hidden bool
	// Hedge: a hedged call (WithHedging) sends another attempt while
	// earlier ones are outstanding. Failures then counts the attempts that
	// failed so far, Err is the failure that sent it at once or nil when
	// its delay did, Wait the time since the previous send (0 when a
	// failure sent it at once), Wake the moment it is sent, and Decision
	// the zero value. With hedging, the observers may be called
	// concurrently, by the calls that run at once.
	Hedge bool
}

// Do calls op until it succeeds, deciding each retry as a scheduler would:
// each call is a run, its length the uptime, the moment it returned the
// failure, and the wait is what retrypolicy.Decide makes of the failures
// so far. So bounded gives up at max_attempts failures within its window,
// and an op that ran an hour before failing is retried almost at once.
//
// It returns op's value at the first success, or else the zero T and a
// *GiveUpError that unwraps to op's last error and says why, checked in
// this order: the context done, a permanent error (context.Canceled from
// op is one), an attempt retried below, a fatal decision, a wait a durable
// layer above takes over (Deferred), a wait a server asked beyond the
// loop's limit (RetryAfterTooLong: never retried sooner than asked), a
// next retry due past the context's deadline (Do returns at once rather
// than sleep into it), or a spent budget; before all these, a throttle
// (WithThrottle) may reject the call unsent (Throttled). Marks are read through every
// branch of a joined error. An invalid strategy is a
// *retrypolicy.ValidationError, and an invalid option (one of an adapter's,
// a nil hook, WithBudget beside WithoutBudget) an error naming it, before
// op is called.
//
// Do retries at one layer. It calls op under a context that is op's
// attempt: a loop of this library that runs under it (another Do, a
// retryhttp transport) and gives up after retrying reports to it, and Do
// then gives up at once with the reason RetriedBelow rather than multiply
// the calls below (WithNestedRetries turns this off). Do reports so to the
// layer it runs under when it gives up after more than one call, or for
// RetriedBelow, Deferred or BudgetExhausted. Three loops nested in one
// another each allowing 3 attempts make 3 calls at the bottom, not 27.
//
// Only idempotent operations are safe to retry: one that creates something
// should carry an idempotency key made once and sent with every call. Do
// starts no goroutine; cancelling the context wakes it at once.
func Do[T any](ctx context.Context, s retrypolicy.Strategy, op func(context.Context) (T, error), opts ...Option) (T, error) {
	var zero T
	if err := s.Validate(); err != nil {
		return zero, err
	}
	cfg, err := apply(opts)
	if err != nil {
		return zero, err
	}
	if cfg.hedge != nil {
		return zero, errHedgeInDo
	}
	return call(ctx, &s, &cfg, op)
}

// call is Do for a valid strategy and its configuration: the loop, then
// the report to the layer it runs under and the end callback.
func call[T any](ctx context.Context, s *retrypolicy.Strategy, cfg *config, op func(context.Context) (T, error)) (T, error) {
	up := enclosingOf(ctx) // the layer Do runs under, as Do starts
	var begin time.Time
	if cfg.end != nil {
		begin = time.Now()
	}
	if cfg.begin != nil {
		ctx = cfg.begin(ctx)
	}
	v, err := loop(ctx, s, cfg, op)
	gaveUp, _ := err.(*GiveUpError)
	if cfg.reports(gaveUp) {
		gaveUp.reported = true
		if up != nil {
			up.report()
		}
	}
	if cfg.end != nil {
		cfg.end(End{Attempts: cfg.calls, GaveUp: gaveUp, Took: time.Since(begin), Context: ctx, HiddenResends: cfg.hiddenResends, HiddenSeen: cfg.hiddenSeen})
	}
	return v, err
}

// failure is one call of op that failed: the calls failed so far, its
// error, its uptime and when it returned.
type failure struct {
	n        int
	err      error
	uptime   time.Duration
	failedAt time.Time
	below    bool  // the attempt was retried below
	marks    Marks // err's, read by decide
}

// loop is Do's loop, for a valid strategy and its options.
func loop[T any](ctx context.Context, s *retrypolicy.Strategy, cfg *config, op func(context.Context) (T, error)) (T, error) {
	var zero T
	if gu := cfg.admit(ctx); gu != nil {
		return zero, gu
	}
	var h *retrypolicy.History
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for failures := 1; ; failures++ {
		if err := ctx.Err(); err != nil {
			return zero, &GiveUpError{Reason: ContextDone, Failures: failures - 1, Err: context.Cause(ctx)}
		}
		// The first call's uptime is not measured: its failure is the only
		// one in the window, which owes the first step whatever the uptime,
		// so a call that succeeds at once reads the clock not at all.
		var start time.Time
		if failures > 1 {
			start = time.Now()
		}
		// Each attempt is a context of its own, so that a report made
		// through an earlier one after it returned (a goroutine left
		// behind) counts for none.
		attempt := cfg.startAttempt(ctx, failures-1)
		if cfg.attemptTimeout > 0 {
			attempt.limit(cfg.attemptTimeout)
		}
		cfg.sent()
		v, opErr := op(attempt)
		below := cfg.endAttempt(attempt)
		attempt.cancel() // what the attempt left waiting on its context ends
		if opErr == nil {
			cfg.endedWell()
			return v, nil
		}
		failedAt := time.Now()
		if h == nil {
			h = cfg.setup(*s)
		}
		var uptime time.Duration
		if failures > 1 {
			uptime = failedAt.Sub(start)
		}
		wait, giveUp := cfg.decide(ctx, h, &failure{n: failures, err: opErr, uptime: uptime, failedAt: failedAt, below: below})
		if giveUp != nil {
			if cfg.answered {
				cfg.endedWell()
			}
			return zero, giveUp
		}
		if sleep(ctx, wait-time.Since(failedAt), &timer) != nil {
			return zero, &GiveUpError{Reason: ContextDone, Failures: failures, Err: errors.Join(context.Cause(ctx), unwrapMarks(opErr))}
		}
	}
}

// endedWell deposits into the budget, if any: the call ended well; and
// its last attempt is an accept for the throttle, if any.
func (c *config) endedWell() {
	if c.budget != nil {
		c.budget.Deposit()
	}
	if c.throttle != nil {
		c.throttle.Accept()
	}
}

// setup prepares the first retry: the history of failures, and the jitter's
// seed when the caller chose none.
func (c *config) setup(s retrypolicy.Strategy) *retrypolicy.History {
	if c.policy == nil {
		c.policy, _ = retrypolicy.Compile(s) // s was validated
	}
	if !c.seeded {
		c.seed = rand.Uint64()
	}
	return retrypolicy.NewHistory(c.policy)
}

// decide classifies the failure's error, records it, and returns how long
// to wait before the next call, or why to give up.
func (c *config) decide(ctx context.Context, h *retrypolicy.History, f *failure) (time.Duration, *GiveUpError) {
	giveUp := func(r Reason, e error) (time.Duration, *GiveUpError) {
		return 0, &GiveUpError{Reason: r, Failures: f.n, Err: e}
	}
	if ctx.Err() != nil {
		return giveUp(ContextDone, errors.Join(context.Cause(ctx), unwrapMarks(f.err)))
	}
	f.marks = ReadMarks(f.err)
	m := &f.marks
	// An answer that is not transient ends the call well; a dependency's
	// failure (PermanentFailure) or a context's end does not.
	c.answered = !m.Failure && !m.Canceled && !m.DeadlineExceeded
	if m.marked != nil {
		return giveUp(NotRetryable, m.marked)
	}
	if m.Permanent || m.Canceled || c.permanent != nil && c.permanent(f.err) {
		return giveUp(NotRetryable, unwrapMarks(f.err))
	}
	c.answered = false
	if f.below && !c.nested {
		return giveUp(RetriedBelow, unwrapMarks(f.err))
	}
	if rerr := h.Record(f.failedAt, f.uptime); rerr != nil {
		return giveUp(NotRetryable, errors.Join(unwrapMarks(f.err), rerr))
	}
	d, derr := h.Decide(c.seed, f.failedAt)
	if derr != nil {
		return giveUp(NotRetryable, errors.Join(unwrapMarks(f.err), derr))
	}
	if d.Action == retrypolicy.Fatal {
		return giveUp(Reason(d.Reason), unwrapMarks(f.err))
	}
	return c.wait(ctx, d, f)
}

// wait returns how long to wait before the next call after a decision to
// retry, or why to give up: deferred to a queue's job, a server asking
// more than the limit, past the deadline, or the budget spent.
func (c *config) wait(ctx context.Context, d retrypolicy.Decision, f *failure) (time.Duration, *GiveUpError) {
	wait := d.Delay + d.Jitter
	if c.fullJitter {
		wait = fullJitter(d.Delay, splitmix.Unit(c.seed^0x5851f42d4c957f2d, f.failedAt, f.n))
	}
	// A wait asked by a server, or deferred by a loop below, is waited in
	// full: never sooner than asked.
	asked, isAsked := f.marks.Wait()
	tooLong := isAsked && asked > c.limit()
	wait = max(wait, asked)
	giveUp := func(r Reason, wait time.Duration) (time.Duration, *GiveUpError) {
		return 0, &GiveUpError{Reason: r, Failures: f.n, Err: unwrapMarks(f.err), Wait: wait}
	}
	// A durable layer above takes a long wait over, so the loop neither
	// sleeps it nor gives up at the deadline it would sleep into.
	if threshold, ok := deferAfter(ctx); ok && (wait > threshold || tooLong) {
		c.quiet = tooLong
		return giveUp(Deferred, wait)
	}
	if tooLong {
		c.quiet = true
		return giveUp(RetryAfterTooLong, wait)
	}
	if deadline, ok := ctx.Deadline(); ok && deadline.Sub(f.failedAt) <= wait {
		return giveUp(PastDeadline, 0)
	}
	if c.budget != nil && !c.budget.Withdraw() {
		return giveUp(BudgetExhausted, 0)
	}
	if c.observe != nil {
		c.observe(Event{Failures: f.n, Err: unwrapMarks(f.err), Decision: d, Wait: wait, Wake: f.failedAt.Add(wait), Context: ctx})
	}
	return wait, nil
}

// limit returns the longest wait a server may ask the loop to sleep:
// WithWaitLimit's, else WaitLimit's for a synchronous layer.
func (c *config) limit() time.Duration {
	if c.waitLimit > 0 {
		return c.waitLimit
	}
	return WaitLimit(c.policy, Synchronous)
}

// fullJitter returns floor(u × (credited + 1)) for u = u53/2^53: uniform
// in [0, credited].
func fullJitter(credited time.Duration, u53 uint64) time.Duration {
	hi, lo := bits.Mul64(uint64(credited)+1, u53)
	return time.Duration(hi<<11 | lo>>53)
}

// sleep waits d, or until ctx is done, whichever comes first, and returns
// ctx's error in the latter case. It makes *timer the first time and resets
// it after; Do stops it on return.
func sleep(ctx context.Context, d time.Duration, timer **time.Timer) error {
	if d <= 0 {
		return ctx.Err()
	}
	if *timer == nil {
		*timer = time.NewTimer(d)
	} else {
		(*timer).Reset(d)
	}
	select {
	case <-(*timer).C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
