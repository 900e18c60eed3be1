package retrypolicy

import (
	"errors"
	"log/slog"
	"strconv"
	"time"
)

// Action is what a scheduler does with a job in ERROR. The zero value is not
// an action; every Decision that Decide returns without error has one.
type Action uint8

const (
	// Fatal: the job has no retries left; move it to FATAL.
	Fatal Action = iota + 1
	// RetryNow: the backoff has passed; schedule the job again.
	RetryNow
	// Wait: the backoff has not passed; check again at or after Due.
	Wait
)

// String returns "fatal", "retry_now" or "wait".
func (a Action) String() string {
	switch a {
	case Fatal:
		return "fatal"
	case RetryNow:
		return "retry_now"
	case Wait:
		return "wait"
	}
	return "Action(" + strconv.Itoa(int(a)) + ")"
}

// MarshalText encodes a as its String form.
func (a Action) MarshalText() ([]byte, error) {
	if a < Fatal || a > Wait {
		return nil, errors.New("retrypolicy: invalid action " + a.String())
	}
	return []byte(a.String()), nil
}

// Reason says why a decision is Fatal. The zero value, NoReason, goes with
// the other actions.
type Reason uint8

const (
	// NoReason is the Reason of a decision that is not Fatal.
	NoReason Reason = iota
	// StrategyNone: the strategy is none, which never retries.
	StrategyNone
	// AttemptsExhausted: a bounded strategy's window holds max_attempts
	// failures.
	AttemptsExhausted
)

// String returns "", "strategy_none" or "attempts_exhausted".
func (r Reason) String() string {
	switch r {
	case NoReason:
		return ""
	case StrategyNone:
		return "strategy_none"
	case AttemptsExhausted:
		return "attempts_exhausted"
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}

// MarshalText encodes r as its String form.
func (r Reason) MarshalText() ([]byte, error) {
	if r > AttemptsExhausted {
		return nil, errors.New("retrypolicy: invalid reason " + r.String())
	}
	return []byte(r.String()), nil
}

// Input is what Decide knows about a job in ERROR, apart from the clock.
type Input struct {
	// Failures holds the job's failure times still on record, in any order,
	// each entry one failure. The newest is the failure being decided.
	// At least one is required. Decide neither modifies nor retains it.
	Failures []time.Time
	// Uptime is how long the job was RUNNING before its newest failure:
	// zero when it failed before it started running. Negative counts as zero.
	Uptime time.Duration
	// JitterSeed is the caller's stable identity for the job, such as
	// [SeedFromString] of its id. Only ExponentialWithJitter uses it.
	JitterSeed uint64
}

// Decision is the verdict on a job in ERROR, with the numbers that explain
// it. It is a plain value.
type Decision struct {
	// Action is Fatal, RetryNow or Wait.
	Action Action
	// Reason says why, when Action is Fatal; NoReason otherwise.
	Reason Reason
	// Failures is the number of failures counted in the window, at least 1.
	Failures int
	// Last is the newest failure, where the window ends.
	Last time.Time
	// Owed is the backoff owed after the Failures-th failure.
	Owed time.Duration
	// Credited is Owed after the last run's uptime credit: at most Owed.
	Credited time.Duration
	// Jitter is the extra added on top of Credited, in [0, Credited/4);
	// zero unless the backoff is ExponentialWithJitter.
	Jitter time.Duration
	// Due is when the backoff has passed: Last + Credited + Jitter.
	// The delay fields and Due are zero when Action is Fatal.
	Due time.Time
}

// LogValue implements slog.LogValuer, so that a scheduler can log a whole
// decision as one attribute.
func (d Decision) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("action", d.Action.String()),
		slog.Int("failures_in_window", d.Failures),
	}
	if d.Action == Fatal {
		attrs = append(attrs, slog.String("reason", d.Reason.String()))
		return slog.GroupValue(attrs...)
	}
	attrs = append(attrs,
		slog.Duration("owed", d.Owed),
		slog.Duration("credited", d.Credited),
		slog.Duration("jitter", d.Jitter),
		slog.Time("due", d.Due),
	)
	return slog.GroupValue(attrs...)
}

// ErrNoFailures is returned by Decide for an Input without failures: there
// is no failure to decide on.
var ErrNoFailures = errors.New("retrypolicy: no failures to decide on")

// Decide returns what to do with a job in ERROR under strategy s at time now.
//
// The window ends at the newest failure (see [CountWindow]). The verdict is
// Fatal for None, and for Bounded when the window holds MaxAttempts failures
// or more, whatever the uptime. Otherwise the job owes the backoff's delay
// for that count, less the uptime credit (see [Backoff.Credited]), plus the
// jitter for ExponentialWithJitter; Due is the newest failure plus that, and
// the verdict is RetryNow iff now is not before Due. Only RetryNow versus
// Wait depends on now: every tick and every replica that decides the same
// failure gets the same Due. A clock behind the newest failure simply waits.
//
// Times compare as wall-clock instants, whatever their location. Monotonic
// clock readings are ignored: failure times read back from storage have
// none, and a process that recorded them in memory must decide as a replica
// that read them back does.
//
// Decide is a pure function: it reads no clock and no global random source,
// and does not allocate. It returns a *ValidationError for an invalid s and
// ErrNoFailures for an empty history.
func Decide(s Strategy, in Input, now time.Time) (Decision, error) {
	if !s.valid() {
		return Decision{}, s.Validate()
	}
	if len(in.Failures) == 0 {
		return Decision{}, ErrNoFailures
	}
	var d Decision
	d.Last, d.Failures = CountWindow(in.Failures, s.window())
	s.decide(&d, in.Uptime, in.JitterSeed, now)
	return d, nil
}

// decide completes d, whose Last and Failures are counted, in place (a
// Decision is large enough for copies to show); s is valid and
// d.Failures >= 1.
func (s *Strategy) decide(d *Decision, uptime time.Duration, seed uint64, now time.Time) {
	last, n := d.Last, d.Failures
	switch {
	case s.Kind == None:
		d.Action, d.Reason = Fatal, StrategyNone
		return
	case s.Kind == Bounded && n >= s.MaxAttempts:
		d.Action, d.Reason = Fatal, AttemptsExhausted
		return
	}
	d.Owed, d.Credited = s.Backoff.credit(n, uptime)
	if s.Backoff.Kind == ExponentialWithJitter {
		d.Jitter = jitterFor(d.Credited, jitterUnit(seed, last, n))
	}
	d.Due = last.Add(d.Credited + d.Jitter) // at most 1.25 × MaxDelay: no overflow
	d.Action = Wait
	if !instantOf(now).before(instantOf(d.Due)) {
		d.Action = RetryNow
	}
}

// SeedFromString returns a jitter seed for a job identity, such as its id:
// the 64-bit FNV-1a hash of id. It does not allocate.
func SeedFromString(id string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	return h
}
