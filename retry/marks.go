package retry

import (
	"context"
	"time"
)

// Marks are what an error's chain says to a retry layer: whether it must
// not be retried, and how long a server asked, or a loop below deferred,
// to wait. [ReadMarks] reads them all in one walk; [IsPermanent],
// [AfterWait] and [DeferredWait] are its parts.
type Marks struct {
	// Permanent: the chain holds an error marked Permanent, or the
	// *GiveUpError of a loop that gave up NotRetryable. It wins over
	// every wait.
	Permanent bool
	// Asked is the longest wait a server asked for (an error marked
	// After, or the *GiveUpError of a loop that gave up
	// RetryAfterTooLong), uncut; HasAsked says whether any did.
	Asked    time.Duration
	HasAsked bool
	// Deferred is the longest wait a loop below deferred to the durable
	// layer it ran under (a *GiveUpError with the reason Deferred);
	// HasDeferred says whether any did.
	Deferred    time.Duration
	HasDeferred bool
	// Below: a loop of this library in the chain gave up after retrying
	// and reported so to the layer above it (the one-layer rule).
	Below bool
	// Failure: a Permanent mark in the chain says the dependency failed
	// (PermanentFailure), so the call did not end well.
	Failure bool
	// Canceled and DeadlineExceeded: the chain holds context.Canceled,
	// context.DeadlineExceeded (by == or an Is method, as errors.Is
	// finds them): a context's end, which a queue tells from a failure.
	Canceled, DeadlineExceeded bool

	marked error // the error inside the first Permanent mark
}

// Wait returns the wait a layer above must make at least before it runs
// the work again: the longer of the deferred and the asked waits, and
// false when neither was.
func (m Marks) Wait() (time.Duration, bool) {
	return max(m.Asked, m.Deferred), m.HasAsked || m.HasDeferred
}

// ReadMarks returns the marks of err's chain, read in one walk,
// breadth-first through every branch of a joined error (Unwrap() []error)
// over at most 1,000 errors in all, repeats counted, so that a chain made
// to hold itself ends. It allocates nothing while at most 8 errors wait
// in the walk at once (any plain chain of %w, however deep); more queued
// at once (wide joins) cost one buffer. A method of an error in the chain
// (Unwrap, Is) is called as errors.Is calls it: a caller that reads the
// errors of strangers recovers from their panics.
func ReadMarks(err error) Marks {
	var m Marks
	walk(err, func(e error) bool { m.read(e); return true })
	return m
}

// IsPermanent reports whether err, or an error it wraps (through every
// branch of a joined error), must not be retried: one that Permanent
// marked, or the *GiveUpError of a Do that gave up because its error was
// not retryable (reason NotRetryable), so that a loop around Do, or a
// queue running a job that calls it, stops too. It is ReadMarks(err).Permanent.
func IsPermanent(err error) bool { return ReadMarks(err).Permanent }

// AfterWait returns the longest wait a server asked for anywhere in err's
// chain, uncut: an error marked After, or the *GiveUpError of a loop that
// gave up RetryAfterTooLong. It returns false when none asked.
func AfterWait(err error) (time.Duration, bool) {
	m := ReadMarks(err)
	return m.Asked, m.HasAsked
}

// DeferredWait returns the longest wait of a layer that gave up Deferred,
// found anywhere in err's chain (a layer above it gives up RetriedBelow,
// with the deferred one inside), and false when none did.
func DeferredWait(err error) (time.Duration, bool) {
	m := ReadMarks(err)
	return m.Deferred, m.HasDeferred
}

// maxErrors is the most errors a reader of marks looks at in one chain,
// repeats counted: far more than any chain of calls holds, so that a
// chain made to hold itself ends.
const maxErrors = 1000

// read adds what e itself says, not what it wraps.
func (m *Marks) read(e error) {
	switch e := e.(type) {
	case *permanentError:
		if !m.Permanent || m.marked == nil {
			m.marked = e.err
		}
		m.Permanent = true
		m.Failure = m.Failure || e.failure
	case *afterError:
		m.ask(e.wait)
	case *GiveUpError:
		m.gaveUp(e)
	}
	m.Canceled = m.Canceled || says(e, context.Canceled) // on this error alone
	m.DeadlineExceeded = m.DeadlineExceeded || says(e, context.DeadlineExceeded)
}

// gaveUp adds what a loop's giving up says.
func (m *Marks) gaveUp(e *GiveUpError) {
	m.Below = m.Below || e.reported
	switch e.Reason {
	case NotRetryable:
		m.Permanent = true
	case RetryAfterTooLong:
		m.ask(e.Wait)
	case Deferred:
		m.Deferred, m.HasDeferred = max(m.Deferred, e.Wait), true
	}
}

// says reports whether e is target, or says so by its own Is method,
// without looking at what e wraps.
func says(e, target error) bool {
	if e == target {
		return true
	}
	is, ok := e.(interface{ Is(error) bool })
	return ok && is.Is(target)
}

// ask records a wait asked.
func (m *Marks) ask(d time.Duration) { m.Asked, m.HasAsked = max(m.Asked, d), true }

// walk calls visit on err and the errors it wraps, breadth-first through
// every branch of a joined error (Unwrap() []error), at most maxErrors in
// all, until visit returns false. The errors waiting to be visited are a
// ring of 8 on the stack, so a chain that never holds more than 8 waiting
// at once (any chain of single wraps, however deep) allocates nothing;
// past 8, they move to a slice on the heap.
func walk(err error, visit func(error) bool) {
	if err == nil {
		return
	}
	var q queue
	q.push(err)
	for seen := 0; q.n > 0 && seen < maxErrors; seen++ {
		e := q.pop()
		if !visit(e) {
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			if w := u.Unwrap(); w != nil && seen+q.n < maxErrors {
				q.push(w)
			}
		case interface{ Unwrap() []error }:
			for _, w := range u.Unwrap() {
				if w != nil && seen+q.n < maxErrors {
					q.push(w)
				}
			}
		}
	}
}

// queue is walk's first-in first-out queue: a ring of 8 errors, then a
// slice (more[head:]) once more wait at once.
type queue struct {
	ring    [8]error
	head, n int
	more    []error
}

func (q *queue) push(e error) {
	if q.more == nil && q.n == len(q.ring) {
		q.more = make([]error, 0, 2*len(q.ring))
		for i := range q.n {
			q.more = append(q.more, q.ring[(q.head+i)%len(q.ring)])
		}
		q.head = 0
	}
	if q.more != nil {
		q.more = append(q.more, e)
	} else {
		q.ring[(q.head+q.n)%len(q.ring)] = e
	}
	q.n++
}

func (q *queue) pop() error {
	q.n--
	if q.more != nil {
		q.head++
		return q.more[q.head-1]
	}
	e := q.ring[q.head]
	q.head = (q.head + 1) % len(q.ring)
	return e
}
