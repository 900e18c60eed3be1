package retry

import (
	"context"
	"errors"
	"reflect"
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
	// limit (WithAfterCap), and the loop gave up rather than retry sooner
	// than asked; GiveUpError.Wait holds the wait asked, and a loop above
	// reads it as an After mark (AfterWait), so that it waits as long.
	RetryAfterTooLong Reason = 9
)

// reasonNames are the reasons' names, by value.
var reasonNames = [...]string{"", "strategy_none", "attempts_exhausted", "not_retryable", "context_done", "past_deadline", "budget_exhausted",
	"retried_below", "deferred", "retry_after_too_long"}

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

// Permanent marks err as final: Do returns at once, with the reason
// NotRetryable and err unwrapped. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
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
// beyond the loop's limit (WithAfterCap) is not cut to it: Do gives up,
// RetryAfterTooLong, or Deferred inside a queue's job, carrying d.
// After(nil, d) is nil.
func After(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &afterError{err, max(d, 0)}
}

// IsPermanent reports whether err, or an error it wraps (through every
// branch of a joined error), must not be retried: one that Permanent
// marked, or the *GiveUpError of a Do that gave up because its error was
// not retryable (reason NotRetryable), so that a loop around Do, or a
// queue running a job that calls it, stops too.
func IsPermanent(err error) bool { return readMarks(err).permanent }

// AfterWait returns the longest wait a server asked for anywhere in err's
// chain, uncut: an error marked After, or the *GiveUpError of a loop that
// gave up RetryAfterTooLong. It returns false when none asked. A queue
// adapter caps what it takes of it at its job's strategy's cap.
func AfterWait(err error) (time.Duration, bool) {
	m := readMarks(err)
	return m.asked, m.hasAsked
}

// DeferredWait returns the longest wait of a layer that gave up Deferred,
// found anywhere in err's chain (a layer above it gives up RetriedBelow,
// with the deferred one inside), and false when none did.
func DeferredWait(err error) (time.Duration, bool) {
	m := readMarks(err)
	return m.deferred, m.hasDeferred
}

// maxErrors is the most errors a reader of marks looks at in one chain,
// repeats counted: far more than any chain of calls holds, so that a
// chain made to hold itself ends.
const maxErrors = 1000

// marks are what an error's chain says to a retry layer.
type marks struct {
	permanent   bool          // a Permanent mark, or a give-up NotRetryable
	marked      error         // the error inside the first Permanent mark
	canceled    bool          // context.Canceled
	asked       time.Duration // the longest wait asked (After, RetryAfterTooLong)
	hasAsked    bool
	deferred    time.Duration // the longest wait deferred (Deferred)
	hasDeferred bool
}

// readMarks walks err's chain (walk) and returns the marks it finds.
func readMarks(err error) marks {
	var m marks
	walk(err, func(e error) bool { m.read(e); return true })
	return m
}

// Is reports whether err or an error in its chain is target, by == or by
// an Is(error) bool method, as errors.Is does, but walking breadth-first
// through every branch of a joined error over at most 1,000 errors in all,
// repeats counted: an error that holds itself ends. Like IsPermanent, it
// is for code that reads errors a stranger returned.
func Is(err, target error) bool {
	if err == nil || target == nil {
		return err == target
	}
	comparable := reflect.TypeOf(target).Comparable() // == on an uncomparable type panics
	found := false
	walk(err, func(e error) bool {
		is, ok := e.(interface{ Is(error) bool })
		found = comparable && e == target || ok && is.Is(target)
		return !found
	})
	return found
}

// walk calls visit on err and the errors it wraps, breadth-first through
// every branch of a joined error (Unwrap() []error), at most maxErrors in
// all, until visit returns false. It allocates nothing for a chain that
// never queues more than 8 errors at once.
func walk(err error, visit func(error) bool) {
	if err == nil {
		return
	}
	var room [8]error
	queue := append(room[:0], err)
	for seen := 0; len(queue) > 0 && seen < maxErrors; seen++ {
		e := queue[0]
		queue = queue[1:]
		if !visit(e) {
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			if w := u.Unwrap(); w != nil && seen+len(queue) < maxErrors {
				queue = append(queue, w)
			}
		case interface{ Unwrap() []error }:
			for _, w := range u.Unwrap() {
				if w != nil && seen+len(queue) < maxErrors {
					queue = append(queue, w)
				}
			}
		}
	}
}

// read adds what e itself says, not what it wraps.
func (m *marks) read(e error) {
	switch e := e.(type) {
	case *permanentError:
		if !m.permanent || m.marked == nil {
			m.marked = e.err
		}
		m.permanent = true
	case *afterError:
		m.ask(e.wait)
	case *GiveUpError:
		switch e.Reason {
		case NotRetryable:
			m.permanent = true
		case RetryAfterTooLong:
			m.ask(e.Wait)
		case Deferred:
			m.deferred, m.hasDeferred = max(m.deferred, e.Wait), true
		}
	}
	if is, ok := e.(interface{ Is(error) bool }); e == context.Canceled || ok && is.Is(context.Canceled) {
		m.canceled = true // as Is(e, context.Canceled), on this error alone
	}
}

// ask records a wait asked.
func (m *marks) ask(d time.Duration) { m.asked, m.hasAsked = max(m.asked, d), true }

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
