package retrypolicy

import (
	"math"
	"strconv"
	"time"

	"github.com/retrypolicy/retrypolicy/internal/echo"
)

// StrategyKind names a retry strategy. The zero value is not a strategy.
type StrategyKind uint8

const (
	// None never retries: every failure is fatal.
	None StrategyKind = iota + 1
	// Bounded retries until the window holds MaxAttempts failures.
	Bounded
	// UnlessStopped retries forever.
	UnlessStopped
)

var strategyEnum = enum{typ: "StrategyKind", what: "strategy", names: []string{"", "none", "bounded", "unless_stopped"}}

// String returns the descriptor's name for k, or "StrategyKind(N)".
func (k StrategyKind) String() string { return strategyEnum.string(uint8(k)) }

// MarshalText returns the descriptor's name for k; it fails for a value
// that is not a strategy.
func (k StrategyKind) MarshalText() ([]byte, error) { return strategyEnum.marshal(uint8(k)) }

// UnmarshalText reads a descriptor's strategy name, exactly.
func (k *StrategyKind) UnmarshalText(text []byte) error {
	v, err := strategyEnum.unmarshal(text)
	if err == nil {
		*k = StrategyKind(v)
	}
	return err
}

// BackoffKind names how the delay grows with the failures in the window.
// The zero value is not a backoff kind.
type BackoffKind uint8

const (
	// Fixed waits BaseDelay after every failure.
	Fixed BackoffKind = iota + 1
	// Exponential waits BaseDelay × Multiplier^(k-1) after the window's
	// k-th failure, at most MaxDelay when it is set.
	Exponential
	// ExponentialWithJitter is Exponential plus up to a quarter of the
	// credited delay, drawn from the caller's jitter seed.
	ExponentialWithJitter
)

var backoffEnum = enum{typ: "BackoffKind", what: "backoff kind", names: []string{"", "fixed", "exponential", "exponential_with_jitter"}}

// String returns the descriptor's name for k, or "BackoffKind(N)".
func (k BackoffKind) String() string { return backoffEnum.string(uint8(k)) }

// MarshalText returns the descriptor's name for k; it fails for a value
// that is not a backoff kind.
func (k BackoffKind) MarshalText() ([]byte, error) { return backoffEnum.marshal(uint8(k)) }

// UnmarshalText reads a descriptor's backoff kind name, exactly.
func (k *BackoffKind) UnmarshalText(text []byte) error {
	v, err := backoffEnum.unmarshal(text)
	if err == nil {
		*k = BackoffKind(v)
	}
	return err
}

// exponential reports whether k grows the delay with a multiplier.
func (k BackoffKind) exponential() bool {
	return k == Exponential || k == ExponentialWithJitter
}

// Limits of the descriptor and of the arithmetic.
const (
	// maxWindow is the longest window of a Bounded strategy: the seven days
	// a scheduler keeps failures for.
	maxWindow = 7 * 24 * time.Hour
	// defaultWindow is the window of a Bounded descriptor without window_secs.
	defaultWindow = time.Hour
	// unlessStoppedWindow is the window UnlessStopped counts its backoff over.
	unlessStoppedWindow = time.Hour
	// ceiling is the longest delay the library computes: 100 years of 365
	// days. Longer delays saturate at it; jitter may add a quarter on top.
	ceiling = 100 * 365 * 24 * time.Hour
	// minDelay is the shortest delay a Strategy built in Go may use.
	minDelay = time.Millisecond
)

// A due time is the newest failure plus at most the ceiling and a quarter
// of it for the jitter: that sum must stay a Duration. (This constant does
// not compile if it would not.)
const _ = uint64(math.MaxInt64 - int64(ceiling) - int64(ceiling/4))

// Strategy is a retry strategy: what to do with a job that failed with an
// error a retry may fix.
//
// It is a plain comparable value; fields the Kind does not use must be zero,
// and the zero Strategy is invalid: [Default] is the strategy of a job that
// names none. Delays built in Go are whole milliseconds of at least 1 ms;
// the descriptor (JSON and flags) counts whole seconds, so only strategies
// in whole seconds encode. Windows are whole seconds. [Strategy.Validate]
// checks all of it.
type Strategy struct {
	// Kind is the strategy. Required.
	Kind StrategyKind
	// MaxAttempts is, for Bounded only, how many failures within Window
	// make the job fatal: at least 1.
	MaxAttempts int
	// Window is, for Bounded only, how far back from the newest failure
	// failures count: 1 s to 7 days, whole seconds.
	Window time.Duration
	// Backoff is how long a job waits before its retry: required for
	// Bounded and UnlessStopped, zero for None.
	Backoff Backoff
}

// Backoff says how long a failed job waits before it is retried. Multiplier
// and MaxDelay belong to the exponential kinds and are zero for Fixed.
type Backoff struct {
	// Kind is how the delay grows. Required.
	Kind BackoffKind
	// BaseDelay is the first delay, and every delay for Fixed.
	BaseDelay time.Duration
	// Multiplier multiplies each delay for the exponential kinds: greater
	// than 0 and finite.
	Multiplier float64
	// MaxDelay caps the delay for the exponential kinds, at least
	// BaseDelay; zero means no cap (delays still saturate at 100 years).
	MaxDelay time.Duration
}

// defaultBackoff is the backoff of the default strategy: exponential, 1 s,
// ×2, at most an hour.
func defaultBackoff() Backoff {
	return Backoff{Kind: Exponential, BaseDelay: time.Second, Multiplier: 2, MaxDelay: time.Hour}
}

// Default returns the strategy of a job that names none: UnlessStopped,
// waiting 1, 2, 4, 8 … seconds after successive failures, at most an hour.
func Default() Strategy {
	return Strategy{Kind: UnlessStopped, Backoff: defaultBackoff()}
}

// window returns the span over which s counts failures.
func (s *Strategy) window() time.Duration {
	if s.Kind == Bounded {
		return s.Window
	}
	return unlessStoppedWindow
}

// enum is the text form of one of the package's small enumerations: names
// by value, names[0] being "" when the zero value has no name.
type enum struct {
	typ   string // the Go type, for String of a value without a name
	what  string // what a value is, for errors ("strategy")
	names []string
	zero  bool // the zero value is valid, with the name ""
}

func (e *enum) valid(v uint8) bool { return int(v) < len(e.names) && (v > 0 || e.zero) }

// string returns v's name, or "TYPE(v)" for a value without one.
func (e *enum) string(v uint8) string {
	if e.valid(v) {
		return e.names[v]
	}
	return e.typ + "(" + strconv.Itoa(int(v)) + ")"
}

// marshal returns v's name, or an error for a value without one.
func (e *enum) marshal(v uint8) ([]byte, error) {
	if !e.valid(v) {
		return nil, &textError{what: e.what, text: strconv.Itoa(int(v)), names: e.names}
	}
	return []byte(e.names[v]), nil
}

// unmarshal returns the value whose name is text, exactly.
func (e *enum) unmarshal(text []byte) (uint8, error) {
	for i, name := range e.names {
		if string(text) == name && e.valid(uint8(i)) {
			return uint8(i), nil
		}
	}
	return 0, &textError{what: e.what, text: echo.Quote(string(text)), names: e.names}
}

// textError is a text that names no value of an enumeration.
type textError struct {
	what, text string
	names      []string
}

func (e *textError) Error() string {
	return "retrypolicy: " + e.text + " is not a " + e.what + ", " + oneOf(e.names)
}
