package retry

import (
	"errors"
	"strconv"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/echo"
)

// Reason says why Do gave up: by the strategy (a fatal decision, whose
// retrypolicy.Reason converts to the Reason of the same name), or for one
// of the loop's own reasons. The zero value, named "", is no reason.
type Reason uint8

const (
	// StrategyNone: the strategy is none, which never retries.
	StrategyNone = Reason(retrypolicy.StrategyNone)
	// AttemptsExhausted: a bounded strategy's window holds max_attempts
	// failures.
	AttemptsExhausted = Reason(retrypolicy.AttemptsExhausted)
	// NotRetryable: op returned an error marked Permanent, or one the
	// WithPermanent option classifies so.
	NotRetryable Reason = 3
	// ContextDone: the context was cancelled or passed its deadline.
	ContextDone Reason = 4
	// PastDeadline: the next retry would be due after the context's
	// deadline, so Do returned at once instead of sleeping into it.
	PastDeadline Reason = 5
	// BudgetExhausted: the retry budget (WithBudget) allowed no more
	// retries.
	BudgetExhausted Reason = 6
	// RetriedBelow: the attempt that failed was retried below, by a layer
	// that ran under it and gave up after retrying (or reported so with
	// Report), so Do retried at one layer, that one, and gave up at once.
	// WithNestedRetries turns this off.
	RetriedBelow Reason = 7
	// Deferred: the next wait was longer than the defer threshold of the
	// durable layer (a queue's job) Do ran under (DeferAfter), which runs
	// the work again after that wait instead; GiveUpError.Wait holds it.
	Deferred Reason = 8
	// RetryAfterTooLong: a server asked for a wait longer than the loop's
	// limit (WithWaitLimit), and the loop gave up rather than retry sooner
	// than asked; GiveUpError.Wait holds the wait asked, and a loop above
	// reads it as an After mark (AfterWait), so that it waits as long.
	RetryAfterTooLong Reason = 9
	// Throttled: the loop's throttle (WithThrottle) rejected the call
	// before its first attempt, which was not sent.
	Throttled Reason = 10
)

// reasonNames are the reasons' names, by value.
var reasonNames = [...]string{"", "strategy_none", "attempts_exhausted", "not_retryable", "context_done", "past_deadline", "budget_exhausted",
	"retried_below", "deferred", "retry_after_too_long", "throttled"}

// String returns the reason's name ("not_retryable"), "" for the zero
// Reason, or "Reason(N)".
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}

// MarshalText returns the reason's name, or an error for a value without
// one.
func (r Reason) MarshalText() ([]byte, error) {
	if int(r) >= len(reasonNames) {
		return nil, errors.New("retry: no reason " + strconv.Itoa(int(r)))
	}
	return []byte(reasonNames[r]), nil
}

// UnmarshalText reads a reason's name, exactly ("" is the zero Reason),
// and leaves r unchanged on error.
func (r *Reason) UnmarshalText(text []byte) error {
	for i, n := range reasonNames {
		if n == string(text) {
			*r = Reason(i)
			return nil
		}
	}
	return errors.New("retry: unknown reason " + echo.Quote(string(text)))
}

// GiveUpError is Do's error when op never succeeded.
type GiveUpError struct {
	// Reason says why Do gave up.
	Reason Reason
	// Failures counts the calls of op that failed.
	Failures int
	// Err is op's last error (unwrapped from Permanent or After); when the
	// context ended the loop, the context's cause joined with it.
	Err error
	// Wait is, for the reason Deferred, the wait Do would have made before
	// its next call, from the failure; for RetryAfterTooLong, the wait the
	// server asked for. Neither is cut to the loop's cap.
	Wait time.Duration

	reported bool // the loop reported to the layer above it as it gave up
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

// permanentError marks an error that must not be retried; failure says
// the call did not end well (PermanentFailure).
type permanentError struct {
	err     error
	failure bool
}

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as final: Do returns at once, with the reason
// NotRetryable and err unwrapped. Permanent(nil) is nil, and an error
// Permanent marked already is returned as it is.
func Permanent(err error) error {
	switch err.(type) {
	case nil, *permanentError:
		return err
	}
	return &permanentError{err: err}
}

// PermanentFailure marks err as final, as Permanent does, and as a
// failure of the dependency rather than an answer: a transient failure
// that is not retried because the work may not be sent again (an unsafe
// request's 503, its network error), or a retry the dependency refused
// (a server shedding load). A call that ends so did not end well, so a
// token budget gets no deposit from it; one that ends Permanent did.
// PermanentFailure(nil) is nil.
func PermanentFailure(err error) error {
	switch e := err.(type) {
	case nil:
		return nil
	case *permanentError:
		if e.failure {
			return err
		}
		return &permanentError{err: e.err, failure: true}
	}
	return &permanentError{err: err, failure: true}
}

// afterError carries a server's request to wait.
type afterError struct {
	err  error
	wait time.Duration
}

func (e *afterError) Error() string { return e.err.Error() }
func (e *afterError) Unwrap() error { return e.err }

// After marks err as carrying a server's request to wait at least d before
// the next call (an HTTP Retry-After header, say): Do waits the longer of
// d and the strategy's delay, and never retries sooner than asked. A d
// beyond the loop's limit (WithWaitLimit) is not cut to it: Do gives up,
// RetryAfterTooLong, or Deferred inside a queue's job, carrying d.
// After(nil, d) is nil.
func After(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &afterError{err, max(d, 0)}
}

// unwrapMarks returns err without the Permanent or After mark around it.
func unwrapMarks(err error) error {
	switch e := err.(type) {
	case *permanentError:
		return e.err
	case *afterError:
		return e.err
	}
	return err
}
