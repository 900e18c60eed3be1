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
	if len(failures) <= 32 {
		var room [32]time.Time
		return decideIn(room[:0], pol, failures, uptime, seed, now)
	}
	buf := timesPool.Get().(*[]time.Time)
	*buf = slices.Grow((*buf)[:0], len(failures))
	d := decideIn(*buf, pol, failures, uptime, seed, now)
	timesPool.Put(buf)
	return d
}

// decideIn is Decide, converting the failures into times[:0], which has
// room for them.
func decideIn(times []time.Time, pol *retrypolicy.Policy, failures []int64, uptime time.Duration, seed uint64, now time.Time) retrypolicy.Decision {
	for _, ns := range failures {
		times = append(times, time.Unix(0, ns))
	}
	d, _ := pol.Decide(times, uptime, seed, now) // its only error is for no failures
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
// d, the strategy's decision on it: an error marked retry.Permanent gives
// the job up (retry.NotRetryable); otherwise one marked retry.After waits
// at least what it asks, within the strategy's cap, and one that a retry
// loop in the run deferred (retry.DeferredWait) waits at least what the
// loop had left to wait. err may be nil (a panic, a run that never ended).
func Judge(pol *retrypolicy.Policy, d retrypolicy.Decision, err error, at time.Time) Verdict {
	v := Verdict{Decision: d, GaveUp: retry.Reason(d.Reason)}
	if err == nil {
		return v
	}
	switch {
	case retry.IsPermanent(err):
		return Verdict{Decision: retrypolicy.Decision{Action: retrypolicy.Fatal, InWindow: d.InWindow}, GaveUp: retry.NotRetryable}
	case d.Action != retrypolicy.Fatal:
		if wait, ok := retry.AfterWait(err, pol.Strategy()); ok && at.Add(wait).After(v.Due) {
			v.Action, v.Due = retrypolicy.Wait, at.Add(wait)
		}
		if wait, ok := retry.DeferredWait(err); ok && at.Add(wait).After(v.Due) {
			v.Action, v.Due = retrypolicy.Wait, at.Add(wait)
		}
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
