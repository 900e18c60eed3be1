package retrypolicy

import (
	"cmp"
	"context"
	"errors"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// GiveUpError is Retry's error when op never succeeded.
type GiveUpError struct {
	// Reason says why Retry gave up.
	Reason Reason
	// Failures counts the calls of op that failed.
	Failures int
	// Err is op's last error (unwrapped from Permanent or RetryAfter);
	// when the context ended the loop, the context's cause joined with it.
	Err error
}

// Error names the reason and the number of failures, then Err.
func (e *GiveUpError) Error() string {
	noun, cause := " failures (", "no error"
	if e.Failures == 1 {
		noun = " failure ("
	}
	if e.Err != nil {
		cause = e.Err.Error()
	}
	return "retrypolicy: gave up after " + strconv.Itoa(e.Failures) + noun + e.Reason.String() + "): " + cause
}

// Unwrap returns Err.
func (e *GiveUpError) Unwrap() error { return e.Err }

// permanentError marks an error that must not be retried.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as final: Retry returns at once, with the reason
// NotRetryable and err unwrapped. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

// retryAfterError carries a server's request to wait.
type retryAfterError struct {
	err  error
	wait time.Duration
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// RetryAfter marks err as carrying a server's request to wait at least d
// before the next call (an HTTP Retry-After header, say): Retry waits the
// longer of d and the strategy's delay, but never more than the cap
// (WithRetryAfterCap). RetryAfter(nil, d) is nil.
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &retryAfterError{err, max(d, 0)}
}

// IsPermanent reports whether err, or an error it wraps, must not be
// retried: one that Permanent marked, or the *GiveUpError of a Retry that
// gave up because its error was not retryable (reason NotRetryable), so
// that a loop around Retry, or a queue running a job that calls it, stops
// too.
func IsPermanent(err error) bool {
	var pe *permanentError
	var gu *GiveUpError
	return errors.As(err, &pe) || errors.As(err, &gu) && gu.Reason == NotRetryable
}

// RetryAfterWait returns the wait RetryAfter marked err or an error it wraps
// with, capped as Retry caps it by default (MaxDelay, or an hour), if any.
func RetryAfterWait(err error, s Strategy) (time.Duration, bool) {
	s = s.effective()
	return (&retryConfig{}).retryAfter(err, &s)
}

// httpDates are the three forms of an HTTP-date (RFC 9110, 5.6.7).
var httpDates = [...]string{
	"Mon, 02 Jan 2006 15:04:05 GMT",  // IMF-fixdate
	"Monday, 02-Jan-06 15:04:05 GMT", // obsolete RFC 850
	time.ANSIC,                       // asctime
}

// ParseRetryAfter reads an HTTP Retry-After value (RFC 9110, 10.2.3):
// delay-seconds, or an HTTP-date, which counts from now. A date in the
// past is a wait of 0; seconds past the longest Duration saturate. It
// returns false for anything else.
func ParseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	value = strings.TrimSpace(value)
	if value != "" && strings.Trim(value, "0123456789") == "" {
		secs, err := strconv.ParseUint(value, 10, 64)
		if err != nil || secs > uint64(maxDelaySecs) {
			return math.MaxInt64, true
		}
		return time.Duration(secs) * time.Second, true
	}
	for i, layout := range httpDates {
		if t, err := time.Parse(layout, value); err == nil {
			if i == 1 { // RFC 850's two digits: this century's year, the last one's if over 50 years ahead
				y := now.Year() - now.Year()%100 + t.Year()%100
				if y > now.Year()+50 {
					y -= 100
				}
				t = t.AddDate(y-t.Year(), 0, 0)
			}
			return max(t.Sub(now), 0), true
		}
	}
	return 0, false
}

// RetryOption configures Retry; the With functions make them.
type RetryOption struct{ set func(retryConfig) retryConfig }

type retryConfig struct {
	permanent  func(error) bool
	afterCap   time.Duration
	budget     *Budget
	seed       uint64
	seeded     bool
	fullJitter bool
	observe    func(RetryEvent)
	end        func(RetryEnd)
	calls      int // op's calls so far
}

// WithPermanent classifies the errors op returns that the caller does not
// wrap with Permanent (a 4xx status, say): when it reports true, Retry
// gives up at once with the reason NotRetryable.
func WithPermanent(isPermanent func(error) bool) RetryOption {
	return RetryOption{func(c retryConfig) retryConfig { c.permanent = isPermanent; return c }}
}

// WithRetryAfterCap caps the wait a RetryAfter error may ask for. The
// default is the strategy's MaxDelay, or one hour when it has none.
func WithRetryAfterCap(d time.Duration) RetryOption {
	return RetryOption{func(c retryConfig) retryConfig { c.afterCap = max(d, 0); return c }}
}

// WithBudget makes the calls share b: each call of Retry deposits in it,
// each retry withdraws, and Retry gives up with the reason BudgetExhausted
// when it allows no more.
func WithBudget(b *Budget) RetryOption {
	return RetryOption{func(c retryConfig) retryConfig { c.budget = b; return c }}
}

// WithJitterSeed sets the seed the strategy's jitter is drawn from, for
// waits that are the same on every run. The default is a random seed per
// call of Retry.
func WithJitterSeed(seed uint64) RetryOption {
	return RetryOption{func(c retryConfig) retryConfig { c.seed, c.seeded = seed, true; return c }}
}

// WithFullJitter makes each wait uniform in [0, credited delay] instead of
// the delay plus the strategy's additive jitter: the spread that best
// separates many clients that failed together.
func WithFullJitter() RetryOption {
	return RetryOption{func(c retryConfig) retryConfig { c.fullJitter = true; return c }}
}

// WithObserver calls observe before each retry, to log it or count it.
// Retry itself never logs. Given more than once, each observer is called,
// in the order given.
func WithObserver(observe func(RetryEvent)) RetryOption {
	return RetryOption{func(c retryConfig) retryConfig { c.observe = both(c.observe, observe); return c }}
}

// WithEnd calls end once, as Retry returns, with how the call ended: to
// count the attempts an operation took, or why it gave up. Given more than
// once, each is called, in the order given.
func WithEnd(end func(RetryEnd)) RetryOption {
	return RetryOption{func(c retryConfig) retryConfig { c.end = both(c.end, end); return c }}
}

// both returns a hook that calls first, then then; either may be nil.
func both[E any](first, then func(E)) func(E) {
	switch {
	case first == nil:
		return then
	case then == nil:
		return first
	}
	return func(e E) { first(e); then(e) }
}

// RetryEnd is how a call of Retry ended.
type RetryEnd struct {
	// Attempts counts the calls of op: 0 when the context was done before
	// the first.
	Attempts int
	// GaveUp is the error Retry returns when op never succeeded, nil when
	// it did.
	GaveUp *GiveUpError
	// Took is the time from Retry's call to its return.
	Took time.Duration
}

// RetryEvent is a retry about to happen.
type RetryEvent struct {
	// Failures counts op's failures so far, this one included.
	Failures int
	// Err is the error op returned.
	Err error
	// Decision is the strategy's decision on the failures so far; its Due
	// leaves out a RetryAfter's wait and the full jitter.
	Decision Decision
	// Wait is how long after the failure Retry calls op again.
	Wait time.Duration
	// Wake is when: the failure's moment plus Wait.
	Wake time.Time
}

// Retry calls op until it succeeds, deciding each retry as a scheduler
// would: each call is a run, its length the uptime, the moment it returned
// the failure, and the wait is what Decide makes of the failures so far.
// So bounded gives up at max_attempts failures within its window, and an op
// that ran an hour before failing is retried almost at once.
//
// It returns op's value at the first success, or else the zero T and a
// *GiveUpError that unwraps to op's last error and says why: a fatal
// decision, a permanent error (context.Canceled from op is one), the
// context done, a next retry due past the context's deadline (Retry returns
// at once rather than sleep into it), or a spent budget. An invalid
// strategy is a *ValidationError, before op is called.
//
// Only idempotent operations are safe to retry: one that creates something
// should carry an idempotency key made once and sent with every call. Retry
// starts no goroutine; cancelling the context wakes it at once.
func Retry[T any](ctx context.Context, s Strategy, op func(context.Context) (T, error), opts ...RetryOption) (T, error) {
	var zero T
	s = s.effective()
	if err := s.validate(); err != nil {
		return zero, err
	}
	var cfg retryConfig
	for _, opt := range opts {
		if opt.set != nil { // the zero RetryOption changes nothing
			cfg = opt.set(cfg) // by value, so that cfg stays on the stack
		}
	}
	if cfg.end == nil {
		return retry(ctx, &s, &cfg, op)
	}
	begin := time.Now()
	v, err := retry(ctx, &s, &cfg, op)
	end := RetryEnd{Attempts: cfg.calls, Took: time.Since(begin)}
	end.GaveUp, _ = err.(*GiveUpError)
	cfg.end(end)
	return v, err
}

// retry is Retry's loop, for a valid strategy and its options.
func retry[T any](ctx context.Context, s *Strategy, cfg *retryConfig, op func(context.Context) (T, error)) (T, error) {
	var zero T
	if cfg.budget != nil {
		cfg.budget.deposit()
	}
	var h *History
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
		start := time.Now()
		cfg.calls++
		v, opErr := op(ctx)
		if opErr == nil {
			return v, nil
		}
		failedAt := time.Now()
		if h == nil {
			h = cfg.start(*s)
		}
		wait, giveUp := cfg.decide(ctx, h, failures, opErr, failedAt.Sub(start), failedAt, s)
		if giveUp != nil {
			return zero, giveUp
		}
		if sleep(ctx, wait-time.Since(failedAt), &timer) != nil {
			return zero, &GiveUpError{Reason: ContextDone, Failures: failures, Err: errors.Join(context.Cause(ctx), unwrapMarks(opErr))}
		}
	}
}

// start prepares the first retry: the history of failures, and the jitter's
// seed when the caller chose none.
func (c *retryConfig) start(s Strategy) *History {
	p, _ := Compile(s) // s was validated
	if !c.seeded {
		c.seed = rand.Uint64()
	}
	return NewHistory(p)
}

// decide classifies op's error, records the failure, and returns how long
// to wait before the next call, or why to give up.
func (c *retryConfig) decide(ctx context.Context, h *History, failures int, err error, uptime time.Duration, failedAt time.Time, s *Strategy) (time.Duration, *GiveUpError) {
	giveUp := func(r Reason, e error) (time.Duration, *GiveUpError) {
		return 0, &GiveUpError{Reason: r, Failures: failures, Err: e}
	}
	var pe *permanentError
	switch {
	case ctx.Err() != nil:
		return giveUp(ContextDone, errors.Join(context.Cause(ctx), unwrapMarks(err)))
	case errors.As(err, &pe):
		return giveUp(NotRetryable, pe.err)
	case errors.Is(err, context.Canceled), c.permanent != nil && c.permanent(err), IsPermanent(err):
		return giveUp(NotRetryable, unwrapMarks(err))
	}
	if rerr := h.Record(failedAt, uptime); rerr != nil {
		return giveUp(NotRetryable, errors.Join(unwrapMarks(err), rerr))
	}
	d, derr := h.Decide(c.seed, failedAt)
	if derr != nil {
		return giveUp(NotRetryable, errors.Join(unwrapMarks(err), derr))
	}
	if d.Action == Fatal {
		return giveUp(d.Reason, unwrapMarks(err))
	}
	wait := d.Delay + d.Jitter
	if c.fullJitter {
		wait = fullJitter(d.Delay, jitterUnit(c.seed^0x5851f42d4c957f2d, instantOf(failedAt), failures))
	}
	if asked, ok := c.retryAfter(err, s); ok {
		wait = max(wait, asked)
	}
	if deadline, ok := ctx.Deadline(); ok && deadline.Sub(failedAt) <= wait {
		return giveUp(PastDeadline, unwrapMarks(err))
	}
	if c.budget != nil && !c.budget.withdraw() {
		return giveUp(BudgetExhausted, unwrapMarks(err))
	}
	if c.observe != nil {
		c.observe(RetryEvent{Failures: failures, Err: unwrapMarks(err), Decision: d, Wait: wait, Wake: failedAt.Add(wait)})
	}
	return wait, nil
}

// retryAfter returns the wait a RetryAfter mark on err asks, at most the
// cap: WithRetryAfterCap's, else s's MaxDelay, else an hour.
func (c *retryConfig) retryAfter(err error, s *Strategy) (time.Duration, bool) {
	var ra *retryAfterError
	if !errors.As(err, &ra) {
		return 0, false
	}
	return min(ra.wait, cmp.Or(c.afterCap, max(s.Backoff.MaxDelay, 0), time.Hour)), true
}

// unwrapMarks returns err without the Permanent or RetryAfter mark around
// it.
func unwrapMarks(err error) error {
	switch e := err.(type) {
	case *permanentError:
		return e.err
	case *retryAfterError:
		return e.err
	}
	return err
}

// fullJitter returns floor(u × (credited + 1)) for u = u53/2^53: uniform
// in [0, credited].
func fullJitter(credited time.Duration, u53 uint64) time.Duration {
	hi, lo := bits.Mul64(uint64(credited)+1, u53)
	return time.Duration(hi<<11 | lo>>53)
}

// sleep waits d, or until ctx is done, whichever comes first, and returns
// ctx's error in the latter case. It makes *timer the first time and resets
// it after; Retry stops it on return.
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
