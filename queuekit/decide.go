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
	// GaveUp is why the job is given up: the fatal decision's reason, or
	// retry.NotRetryable for an error marked retry.Permanent; zero when
	// the job goes on.
	GaveUp retry.Reason
}

// Judge returns the verdict on a run that failed at at with err, given
// d, the strategy's decision on it: an error marked retry.Permanent
// anywhere in its chain gives the job up (retry.NotRetryable); otherwise
// the job waits at least the longest wait a retry loop in the run deferred
// (retry.DeferredWait) or a server asked (retry.AfterWait), never sooner,
// up to the strategy's cap (its MaxDelay, or an hour). err may be nil (a panic, a run that
// never ended).
func Judge(pol *retrypolicy.Policy, d retrypolicy.Decision, err error, at time.Time) Verdict {
	v := Verdict{Decision: d, GaveUp: retry.Reason(d.Reason)}
	if err == nil {
		return v
	}
	if retry.IsPermanent(err) {
		return Verdict{Decision: retrypolicy.Decision{Action: retrypolicy.Fatal, InWindow: d.InWindow}, GaveUp: retry.NotRetryable}
	}
	if d.Action == retrypolicy.Fatal {
		return v
	}
	deferred, isDeferred := retry.DeferredWait(err)
	asked, isAsked := retry.AfterWait(err)
	if !isDeferred && !isAsked {
		return v
	}
	if due := at.Add(min(max(deferred, asked), waitCap(pol))); due.After(v.Due) {
		v.Action, v.Due = retrypolicy.Wait, due
	}
	return v
}

// waitCap is the longest a job's run may be put off by a wait asked or
// deferred within it: its strategy's MaxDelay, or an hour when it has
// none, so that a server can park a job no longer than that.
func waitCap(pol *retrypolicy.Policy) time.Duration {
	if d := pol.Strategy().Backoff.MaxDelay; d > 0 {
		return d
	}
	return time.Hour
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
