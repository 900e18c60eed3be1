package retrypolicy

import (
	"errors"
	"log/slog"
	"time"
)

// Action is what a scheduler does with a failed job. The zero value is not
// an action.
type Action uint8

const (
	// Fatal: no retries are left; the job is FATAL.
	Fatal Action = iota + 1
	// RetryNow: the backoff has passed; schedule the job again.
	RetryNow
	// Wait: the backoff has not passed; look again at Due.
	Wait
)

var actionEnum = enum{typ: "Action", what: "action", names: []string{"", "fatal", "retry_now", "wait"}}

// String returns "fatal", "retry_now" or "wait", or "Action(N)".
func (a Action) String() string { return actionEnum.string(uint8(a)) }

// MarshalText returns a's name; it fails for a value that is not an action.
func (a Action) MarshalText() ([]byte, error) { return actionEnum.marshal(uint8(a)) }

// UnmarshalText reads an action's name, exactly.
func (a *Action) UnmarshalText(text []byte) error {
	v, err := actionEnum.unmarshal(text)
	if err == nil {
		*a = Action(v)
	}
	return err
}

// Reason says why a job is given up: by the strategy (a Fatal decision), or
// by Retry for its own reasons. The zero value, named "", goes with the
// actions that are not Fatal.
type Reason uint8

const (
	// StrategyNone: the strategy is none, which never retries.
	StrategyNone Reason = iota + 1
	// AttemptsExhausted: a bounded strategy's window holds max_attempts
	// failures.
	AttemptsExhausted
)

var reasonEnum = enum{typ: "Reason", what: "reason", zero: true,
	names: []string{"", "strategy_none", "attempts_exhausted", "not_retryable", "context_done", "past_deadline", "budget_exhausted"}}

// String returns the reason's name ("attempts_exhausted"), "" for the zero
// Reason, or "Reason(N)".
func (r Reason) String() string { return reasonEnum.string(uint8(r)) }

// MarshalText returns r's name; it fails for a value that is not a reason.
func (r Reason) MarshalText() ([]byte, error) { return reasonEnum.marshal(uint8(r)) }

// UnmarshalText reads a reason's name, exactly ("" is the zero Reason).
func (r *Reason) UnmarshalText(text []byte) error {
	v, err := reasonEnum.unmarshal(text)
	if err == nil {
		*r = Reason(v)
	}
	return err
}

// Decision is the verdict on a failed job, with the numbers that explain it.
// Its JSON form is the command's output; see [Decision.MarshalJSON].
type Decision struct {
	// Action is Fatal, RetryNow or Wait.
	Action Action
	// Reason says why, when Action is Fatal; it is zero otherwise.
	Reason Reason
	// Failures counts the failures in the window, at least 1.
	Failures int
	// Owed is the backoff owed after the Failures-th failure.
	Owed time.Duration
	// Credited is Owed less the last run's uptime credit: at most Owed.
	Credited time.Duration
	// Jitter is added to Credited: in [0, Credited/4), and zero unless the
	// backoff is ExponentialWithJitter.
	Jitter time.Duration
	// Due is when the backoff has passed: the newest failure + Credited +
	// Jitter, in the newest failure's location and without a monotonic
	// clock reading, as every replica computes it. The delay fields and Due
	// are zero when Action is Fatal.
	Due time.Time
}

// LogValue implements slog.LogValuer with the names and values of the JSON
// form, so that a scheduler logs a whole decision as one attribute.
func (d Decision) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, 7)
	attrs = append(attrs, slog.String("action", d.Action.String()))
	if d.Action == Fatal {
		attrs = append(attrs, slog.String("reason", d.Reason.String()))
	}
	attrs = append(attrs, slog.Int("failures_in_window", d.Failures))
	if d.Action != Fatal {
		attrs = append(attrs,
			slog.Any("owed_secs", seconds(d.Owed)),
			slog.Any("credited_secs", seconds(d.Credited)),
			slog.Any("jitter_secs", seconds(d.Jitter)),
			slog.String("due", string(appendDue(nil, d.Due))),
		)
	}
	return slog.GroupValue(attrs...)
}

// errNoFailures is Decide's error for a history without failures.
var errNoFailures = errors.New("retrypolicy: no failures to decide on")

// Decide returns what to do with a failed job under strategy s at time now.
//
// failures are the job's failure times still on record, in any order, each
// entry one failure; the newest is the failure being decided, and the window
// ends there, not at now. uptime is how long the job ran before that failure
// (negative counts as zero); seed is a stable identity of the job, such as
// [SeedFromString] of its id, from which the jitter is drawn.
//
// The verdict is Fatal for None, and for Bounded when the window holds
// MaxAttempts failures, whatever the uptime. Otherwise the job owes the
// backoff's delay for that count, less the uptime credit, plus the jitter;
// Due is the newest failure plus that, and the verdict is RetryNow once now
// is not before Due, Wait before. Only that last choice depends on now, so
// every tick and every replica that decides the same failure agrees on Due.
// Times compare as instants on the wall clock, whatever their location;
// monotonic clock readings are ignored, so that a process that recorded
// failures in memory decides as one that read them back.
//
// Decide is pure and does not allocate. It returns a *ValidationError for an
// invalid s, and an error for an empty failures. [Compile] checks s once for
// many decisions.
func Decide(s Strategy, failures []time.Time, uptime time.Duration, seed uint64, now time.Time) (Decision, error) {
	var p Policy
	if err := p.init(s); err != nil {
		return Decision{}, err
	}
	return p.Decide(failures, uptime, seed, now)
}

// decideOn completes d for failures, at least one. Policy.Decide stays
// small enough to inline, and hands decideOn its own result to fill: what
// is left is the caller's copy of that result. Returning the Decision by
// value from here instead, or filling it with one struct assignment, costs
// more (5 to 7 ns of a 20 to 40 ns decision, measured), and a Decide that
// does not inline more still (15 ns).
//
// A History, which counts its own failures, sets d.Failures and passes its
// newest failure alone.
func (p *Policy) decideOn(d *Decision, failures []time.Time, uptime time.Duration, seed uint64, now time.Time) {
	var (
		newest int // failures[newest] is the failure being decided
		at     instant
	)
	if len(failures) == 1 {
		at = instantOf(failures[0])
		if d.Failures == 0 {
			d.Failures = 1
		}
	} else {
		newest, at, d.Failures = countWindow(failures, p.window)
	}
	n := d.Failures
	switch {
	case p.s.Kind == None:
		d.Action, d.Reason = Fatal, StrategyNone
		return
	case p.s.Kind == Bounded && n >= p.s.MaxAttempts:
		d.Action, d.Reason = Fatal, AttemptsExhausted
		return
	}
	// The jitter is drawn before the delay: it does not depend on it, and
	// the processor overlaps the two.
	var u53 uint64
	jitter := p.s.Backoff.Kind == ExponentialWithJitter
	if jitter {
		u53 = jitterUnit(seed, at, n)
	}
	st := &p.st
	var owed, credited, extra time.Duration
	switch b := n - 1; {
	case st.m == 1: // Fixed, or a multiplier of 1: every delay is the base
		owed = time.Duration(st.base)
		credited = owed
	case st.q == 1 && b < len(st.delays) && (b == 0 || int64(uptime) < st.delays[b]):
		// Nothing paid, credit's first case, here without a call: the
		// uptime does not cover the step owed, or that step is the first.
		owed = time.Duration(st.delays[b])
		credited = owed
	case st.q == 1 && b < len(st.delays) && st.delays[b] < st.limit:
		// The uptime covers the step owed, below the limit, in the table.
		owed, credited = st.creditTabled(n, uptime)
	default:
		owed, credited = st.credit(n, uptime)
	}
	if jitter {
		extra = jitterFor(credited, u53)
	}
	wait := credited + extra // at most 1.25 × the ceiling: no overflow
	due := at.plus(wait)
	if uint64(due.sec+dueSpan) < 2*dueSpan {
		d.Due = time.Unix(due.sec, int64(due.nsec)).In(failures[newest].Location())
	} else {
		d.Due = failures[newest].Add(wait).Round(0) // saturates as Add does
	}
	d.Owed, d.Credited, d.Jitter = owed, credited, extra
	d.Action = Wait
	if !instantOf(now).before(due) {
		d.Action = RetryNow
	}
}

// dueSpan bounds the due times that decideOn builds from their instant:
// seconds within it of 1970 cannot overflow time.Time's own range.
const dueSpan = 1 << 62

// SeedFromString returns a jitter seed for a job identity, such as its id:
// the 64-bit FNV-1a hash of its bytes. It does not allocate.
func SeedFromString(id string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	return h
}
