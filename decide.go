package retrypolicy

import (
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/retrypolicy/retrypolicy/internal/seedhash"
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
func (a *Action) UnmarshalText(text []byte) error { return actionEnum.unmarshal(text, (*uint8)(a)) }

// Reason says why a Fatal decision gives a job up. The zero value, named "",
// goes with the actions that are not Fatal. (The in-process loop's own
// reasons for giving up are package retry's.)
type Reason uint8

const (
	// StrategyNone: the strategy is none, which never retries.
	StrategyNone Reason = iota + 1
	// AttemptsExhausted: a bounded strategy's window holds max_attempts
	// failures.
	AttemptsExhausted
)

var reasonEnum = enum{typ: "Reason", what: "reason", zero: true,
	names: []string{"", "strategy_none", "attempts_exhausted"}}

// String returns the reason's name ("attempts_exhausted"), "" for the zero
// Reason, or "Reason(N)".
func (r Reason) String() string { return reasonEnum.string(uint8(r)) }

// MarshalText returns r's name; it fails for a value that is not a reason.
func (r Reason) MarshalText() ([]byte, error) { return reasonEnum.marshal(uint8(r)) }

// UnmarshalText reads a reason's name, exactly ("" is the zero Reason).
func (r *Reason) UnmarshalText(text []byte) error { return reasonEnum.unmarshal(text, (*uint8)(r)) }

// Decision is the verdict on a failed job, with the numbers that explain it.
// Its JSON form is the command's output; see [Decision.MarshalJSON].
type Decision struct {
	// Action is Fatal, RetryNow or Wait.
	Action Action
	// Reason says why, when Action is Fatal; it is zero otherwise.
	Reason Reason
	// InWindow counts the failures in the window, the newest included: >= 1.
	InWindow int
	// Owed is the backoff owed after the InWindow-th failure.
	Owed time.Duration
	// Delay is what is left of Owed after the last run's uptime credit:
	// at most Owed, and the wait before the jitter.
	Delay time.Duration
	// Jitter is added to Delay: in [0, Delay/4), zero but for ExponentialWithJitter.
	Jitter time.Duration
	// Due is when the backoff has passed: the newest failure + Delay +
	// Jitter, in the newest failure's location and without a monotonic
	// clock reading, as every replica computes it. The delay fields and Due
	// are zero when Action is Fatal.
	Due time.Time
}

// String reads d as a sentence, for a log line or a debugger: "wait until
// 2026-11-02T15:00:04Z: failure 4 in the window owes 8s, 4s after uptime
// credit, plus 0s of jitter", "retry now: due at …" with the same numbers,
// or "fatal (attempts_exhausted) at failure 5 in the window".
func (d Decision) String() string {
	switch d.Action {
	case Fatal:
		return "fatal (" + d.Reason.String() + ") at failure " + strconv.Itoa(d.InWindow) + " in the window"
	case Wait, RetryNow:
	default:
		return d.Action.String()
	}
	verdict := "wait until "
	if d.Action == RetryNow {
		verdict = "retry now: due at "
	}
	return verdict + d.Due.Format(time.RFC3339Nano) + ": failure " + strconv.Itoa(d.InWindow) + " in the window owes " +
		d.Owed.String() + ", " + d.Delay.String() + " after uptime credit, plus " + d.Jitter.String() + " of jitter"
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
	var t tables
	p, err := compilePolicy(s, &t)
	if err != nil {
		return Decision{}, err
	}
	return p.Decide(failures, uptime, seed, now)
}

// Decide is [Decide] under the policy's strategy, which it does not check
// again. It does not allocate.
func (p *Policy) Decide(failures []time.Time, uptime time.Duration, seed uint64, now time.Time) (d Decision, err error) {
	// Small enough to inline, so that decideOn fills the caller's result
	// in place rather than a copy of it.
	if len(failures) == 0 {
		return d, errNoFailures
	}
	p.decideOn(&d, failures, asked{uptime, seed, now})
	return d, nil
}

// asked is what a decision takes beside the failures: the last run's
// uptime, the jitter seed and the clock.
type asked struct {
	uptime time.Duration
	seed   uint64
	now    time.Time
}

// decideOn completes d for failures, at least one.
func (p *Policy) decideOn(d *Decision, failures []time.Time, q asked) {
	if len(failures) == 1 { // the first failure: nothing to count
		p.decideCounted(d, counted{1, instantOf(failures[0]), failures[0].Location()}, q)
		return
	}
	newest, at, n := countWindow(failures, p.window)
	p.decideCounted(d, counted{n, at, failures[newest].Location()}, q)
}

// counted is a window counted: n failures, the newest at an instant, in a
// location that its due time keeps.
type counted struct {
	n      int
	newest instant
	loc    *time.Location
}

// decideCounted completes d for the counted window w.
func (p *Policy) decideCounted(d *Decision, w counted, q asked) {
	n, at, loc := w.n, w.newest, w.loc
	d.InWindow = n
	switch {
	case p.s.Kind == None:
		d.Action, d.Reason = Fatal, StrategyNone
		return
	case p.s.Kind == Bounded && n >= p.s.MaxAttempts:
		d.Action, d.Reason = Fatal, AttemptsExhausted
		return
	}
	owed, delay := p.d.owe(int64(n), q.uptime)
	d.Owed, d.Delay = time.Duration(owed), time.Duration(delay)
	if p.s.Backoff.Kind == ExponentialWithJitter {
		d.Jitter = jitterFor(d.Delay, jitterUnit(q.seed, at, n))
	}
	wait := d.Delay + d.Jitter // at most 1.25 × the ceiling: no overflow
	due := at.plus(wait)
	if due.sec <= maxUnix {
		d.Due = due.time(loc)
	} else {
		d.Due = at.time(loc).Add(wait) // past time.Time's range: saturating as Add does
	}
	d.Action = Wait
	if !instantOf(q.now).before(due) {
		d.Action = RetryNow
	}
}

// SeedFromString returns a jitter seed for a job identity, such as its id:
// the 64-bit FNV-1a hash of its bytes. It does not allocate.
func SeedFromString(id string) uint64 {
	h := seedhash.New()
	for i := 0; i < len(id); i++ {
		h.Add(id[i])
	}
	return uint64(h)
}

// LogValue implements slog.LogValuer with the names and values of the JSON
// form, so that a scheduler logs a whole decision as one attribute.
func (d Decision) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, 7)
	attrs = append(attrs, slog.String("action", d.Action.String()))
	if d.Action == Fatal {
		attrs = append(attrs, slog.String("reason", d.Reason.String()))
	}
	attrs = append(attrs, slog.Int("failures_in_window", d.InWindow))
	if d.Action != Fatal {
		attrs = append(attrs,
			slog.Any("owed_secs", seconds(d.Owed)),
			slog.Any("delay_secs", seconds(d.Delay)),
			slog.Any("jitter_secs", seconds(d.Jitter)),
			slog.String("due", string(appendDue(nil, d.Due))),
		)
	}
	return slog.GroupValue(attrs...)
}
