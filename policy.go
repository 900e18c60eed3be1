package retrypolicy

import (
	"strconv"
	"time"
)

// StrategyKind names a retry strategy. The zero value is not a strategy:
// a Strategy whose Kind is zero fails validation with "strategy: required".
type StrategyKind uint8

const (
	// None never retries: every retryable failure is fatal.
	None StrategyKind = iota + 1
	// Bounded retries until the job has failed MaxAttempts times within
	// the sliding Window, and is fatal from then on.
	Bounded
	// UnlessStopped retries forever. Its backoff counts failures over a
	// fixed one-hour window.
	UnlessStopped
)

// String returns the descriptor's name for k ("none", "bounded",
// "unless_stopped"), or "StrategyKind(N)" for a value that is not a strategy.
func (k StrategyKind) String() string {
	switch k {
	case None:
		return "none"
	case Bounded:
		return "bounded"
	case UnlessStopped:
		return "unless_stopped"
	}
	return "StrategyKind(" + strconv.Itoa(int(k)) + ")"
}

// BackoffKind names how the delay grows with the failures in the window.
// The zero value is not a backoff kind.
type BackoffKind uint8

const (
	// Fixed waits BaseDelay after every failure.
	Fixed BackoffKind = iota + 1
	// Exponential waits BaseDelay × Multiplier^(k-1) after the window's
	// k-th failure, up to MaxDelay when it is set.
	Exponential
	// ExponentialWithJitter is Exponential plus an extra of up to a quarter
	// of the (credited) delay, derived from the caller's jitter seed.
	ExponentialWithJitter
)

// String returns the descriptor's name for k ("fixed", "exponential",
// "exponential_with_jitter"), or "BackoffKind(N)" for a value that is not one.
func (k BackoffKind) String() string {
	switch k {
	case Fixed:
		return "fixed"
	case Exponential:
		return "exponential"
	case ExponentialWithJitter:
		return "exponential_with_jitter"
	}
	return "BackoffKind(" + strconv.Itoa(int(k)) + ")"
}

// exponential reports whether k grows the delay with a multiplier.
func (k BackoffKind) exponential() bool {
	return k == Exponential || k == ExponentialWithJitter
}

// Limits of the descriptor and of the arithmetic.
const (
	// MaxWindow is the longest failure window a Bounded strategy may use:
	// seven days, the history a scheduler keeps failures for.
	MaxWindow = 7 * 24 * time.Hour

	// UnlessStoppedWindow is the window over which an UnlessStopped
	// strategy counts failures for its backoff.
	UnlessStoppedWindow = time.Hour

	// MaxDelay is the ceiling of every delay the library computes:
	// 100 years of 365 days. A delay that would be longer saturates at
	// MaxDelay; jitter may add up to a quarter of it on top.
	MaxDelay = 100 * 365 * 24 * time.Hour

	// DefaultWindow is the Bounded window used when the descriptor
	// omits window_secs.
	DefaultWindow = time.Hour
)

// Strategy is a validated-or-not retry strategy descriptor: what to do with
// a job that failed with an error a retry may fix.
//
// A Strategy is a plain comparable value. Fields that the Kind does not use
// must be zero: MaxAttempts and Window belong to Bounded only, and Backoff is
// zero for None. Every field is explicit; the zero Strategy is invalid, and
// [Default] returns the strategy a job gets when it names none. Durations
// are whole seconds, because the JSON descriptor counts in seconds: a value
// the descriptor cannot express fails [Strategy.Validate].
//
// A Strategy holds no references and is never modified by this package, so
// it is safe for concurrent use by multiple goroutines.
type Strategy struct {
	// Kind is the strategy. Required.
	Kind StrategyKind
	// MaxAttempts is, for Bounded, how many failures within Window make
	// the job fatal: at least 1. Zero for the other kinds.
	MaxAttempts int
	// Window is, for Bounded, how far back from the newest failure
	// failures count: whole seconds from 1 s to MaxWindow. Zero for the
	// other kinds.
	Window time.Duration
	// Backoff is how long a job waits before its retry. Required for
	// Bounded and UnlessStopped, zero for None.
	Backoff Backoff
}

// Backoff says how long a failed job waits before it is retried.
//
// The zero Backoff is invalid for the strategies that retry; use
// [DefaultBackoff] or fill in Kind and BaseDelay. Multiplier and MaxDelay
// belong to the exponential kinds and must be zero for Fixed.
type Backoff struct {
	// Kind is how the delay grows. Required.
	Kind BackoffKind
	// BaseDelay is the first delay, and every delay for Fixed: whole
	// seconds, at least 1 s.
	BaseDelay time.Duration
	// Multiplier is what each delay is multiplied by for the exponential
	// kinds: greater than 0 and finite. Zero for Fixed.
	Multiplier float64
	// MaxDelay caps the delay for the exponential kinds: zero means no cap
	// (the delay still saturates at the package's MaxDelay ceiling);
	// otherwise whole seconds, at least BaseDelay.
	MaxDelay time.Duration
}

// DefaultBackoff returns the backoff of the default strategy: exponential,
// 1 second, ×2, capped at one hour.
func DefaultBackoff() Backoff {
	return Backoff{Kind: Exponential, BaseDelay: time.Second, Multiplier: 2, MaxDelay: time.Hour}
}

// Default returns the strategy of a job that names none: UnlessStopped with
// [DefaultBackoff], so 1, 2, 4, 8 … seconds after successive failures, up to
// an hour, forever.
func Default() Strategy {
	return Strategy{Kind: UnlessStopped, Backoff: DefaultBackoff()}
}

// window returns the span over which s counts failures.
func (s Strategy) window() time.Duration {
	if s.Kind == Bounded {
		return s.Window
	}
	return UnlessStoppedWindow
}
