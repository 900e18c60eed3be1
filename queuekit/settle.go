package queuekit

import (
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
)

// Failure is a job's failed run as an adapter hands it to Settle: what the
// job is, what its record holds, and how the run ended.
type Failure struct {
	// Policy is the policy of the job's strategy: its own, else its kind's
	// (Policies.Own, Policies.Kind).
	Policy *retrypolicy.Policy
	// Failures are the job's earlier failures that can still count (its
	// record's), Unix nanoseconds in any order. Settle appends the new
	// failure to it and reorders it: give it room for one more.
	Failures []int64
	// Ended is when the run returned; the failure is kept to the
	// millisecond.
	Ended time.Time
	// Uptime is how long the run ran before it failed: zero for a run
	// that ended unseen (its consumer died mid-run).
	Uptime time.Duration
	// Seed is the job's jitter seed (Seed).
	Seed uint64
	// Marks are the marks of the run's error (retry.ReadMarks): the zero
	// Marks for a run that returned none (a panic, a run that ended
	// unseen).
	Marks retry.Marks
	// Limit is the job's limit on a wait a server asked or a loop in the
	// run deferred (Policies.WaitLimit).
	Limit time.Duration
	// MaxDelay, when positive, is the longest the strategy's own wait (its
	// delay and jitter) may be, as for a strategy a publisher chose; a wait
	// a server asked is not cut by it. Zero: the strategy's wait as it is.
	MaxDelay time.Duration
}

// Settlement is what follows a job's failure: the verdict the adapter acts
// on, and what the job's record keeps.
type Settlement struct {
	Verdict
	// At is the failure, to the millisecond, as the record keeps it, and
	// Uptime the run's, as decided on (Failure.Uptime).
	At     time.Time
	Uptime time.Duration
	// Decided is how many failures the verdict was made on, the new one
	// included.
	Decided int
	// Kept is what the job's record keeps of its failures after the
	// verdict (Keep), oldest first: a part of Failure.Failures's array.
	Kept []int64
}

// Settle decides on a job's failed run, f, in one call, the same for every
// queue: the failure, to the millisecond, is added to the job's failures;
// the strategy decides on them (Decide), its wait reckoned from the failure
// (never later than the failure plus its delay and jitter, whatever
// instants the record holds, so that a clock stepped back never makes a
// wait longer) and cut to f.MaxDelay when one is given; the run's error
// then has its say (Judge: a permanent error gives the job up, a wait
// asked or deferred is waited in full, or beyond f.Limit gives the job
// up); and the failures the record keeps are chosen (Keep).
func Settle(f Failure) Settlement {
	at := f.Ended.Truncate(time.Millisecond)
	failures := append(f.Failures, at.UnixNano())
	d := Decide(f.Policy, failures, f.Uptime, f.Seed, at)
	if d.Action == retrypolicy.Wait {
		owed := d.Delay + d.Jitter
		if f.MaxDelay > 0 {
			owed = min(owed, f.MaxDelay)
		}
		if d.Due.Sub(at) > owed {
			d.Due = at.Add(owed)
		}
	}
	s := Settlement{Verdict: Judge(d, f.Marks, at, f.Limit), At: at, Uptime: f.Uptime, Decided: len(failures)}
	s.Kept = Keep(f.Policy, failures, s.Decision)
	return s
}
