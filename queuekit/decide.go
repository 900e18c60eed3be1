package queuekit

import (
	"math"
	"slices"
	"sync"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
)

// Decide decides at now on a job's failures, Unix nanoseconds in any
// order, the newest after a run of uptime, with the job's jitter seed.
// With no failures it returns the zero Decision. It does not allocate but
// to grow a buffer it keeps for the next call, for more than 32 failures.
func Decide(pol *retrypolicy.Policy, failures []int64, uptime time.Duration, seed uint64, now time.Time) retrypolicy.Decision {
	var room [32]time.Time
	times := room[:0]
	var buf *[]time.Time
	if len(failures) > len(room) {
		buf = timesPool.Get().(*[]time.Time)
		*buf = slices.Grow((*buf)[:0], len(failures))
		times = *buf
	}
	for _, ns := range failures {
		times = append(times, time.Unix(0, ns))
	}
	d, _ := pol.Decide(times, uptime, seed, now) // its only error is for no failures
	if buf != nil {
		timesPool.Put(buf)
	}
	return d
}

// timesPool holds the buffers Decide converts more than 32 failures in.
var timesPool = sync.Pool{New: func() any { return new([]time.Time) }}

// Verdict is a decision on a job's failure and, when the job is given up,
// why.
type Verdict struct {
	retrypolicy.Decision
	// GaveUp is why the job is given up: the fatal decision's reason,
	// retry.NotRetryable for an error marked retry.Permanent, or
	// retry.RetryAfterTooLong for a wait asked beyond the job's limit;
	// zero when the job goes on.
	GaveUp retry.Reason
	// Asked is the wait a server asked, or a loop in the run deferred, that
	// the verdict holds to: the job runs no sooner than its failure plus
	// Asked. For retry.RetryAfterTooLong it is the wait asked beyond the
	// job's limit, and the fatal Decision's Due, unlike any other fatal
	// decision's, is the failure plus it: when the job could have run.
	// Zero when none was asked.
	Asked time.Duration
}

// Judge returns the verdict on a run that failed at at, given d, the
// strategy's decision on it, m, the marks of the run's error
// (retry.ReadMarks; the zero Marks for a run that returned none, such as a
// panic), and limit, the job's limit on a server's wait
// (Policies.WaitLimit). In order: a permanent mark gives the job up
// (retry.NotRetryable); a fatal decision stays fatal; a wait asked or
// deferred (the longer, Marks.Wait) beyond limit gives the job up
// (retry.RetryAfterTooLong, the wait in Asked and Due); one within it
// makes the job wait at least that long after its failure, never sooner,
// and never cut.
func Judge(d retrypolicy.Decision, m retry.Marks, at time.Time, limit time.Duration) Verdict {
	v := Verdict{Decision: d, GaveUp: retry.Reason(d.Reason)}
	if m.Permanent {
		return Verdict{Decision: retrypolicy.Decision{Action: retrypolicy.Fatal, InWindow: d.InWindow}, GaveUp: retry.NotRetryable}
	}
	wait, asked := m.Wait()
	if d.Action == retrypolicy.Fatal || !asked {
		return v
	}
	v.Asked = wait
	due := at.Add(wait)
	if wait > limit {
		v.Decision = retrypolicy.Decision{Action: retrypolicy.Fatal, InWindow: d.InWindow, Due: due}
		v.GaveUp = retry.RetryAfterTooLong
		return v
	}
	if due.After(v.Due) {
		v.Action, v.Due = retrypolicy.Wait, due
	}
	return v
}

// Keep sorts failures and returns those that deciding under pol can need
// again after d, the decision on them: the newest d.InWindow, and for a
// bounded strategy no more than its MaxAttempts (a window holding that
// many is fatal). It is what a record keeps, so that a record is bounded
// by its strategy's window.
func Keep(pol *retrypolicy.Policy, failures []int64, d retrypolicy.Decision) []int64 {
	slices.Sort(failures) // the failure just decided is the newest, unless a clock stepped back
	return failures[len(failures)-min(d.InWindow, MostKept(pol), len(failures)):]
}

// MostKept is the most failures deciding under pol can need: for a
// bounded strategy its MaxAttempts, and no bound otherwise.
func MostKept(pol *retrypolicy.Policy) int {
	if s := pol.Strategy(); s.Kind == retrypolicy.Bounded {
		return s.MaxAttempts
	}
	return math.MaxInt
}
