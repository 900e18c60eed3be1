package retrypolicy

import "time"

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
	return strategyEnum.unmarshal(text, (*uint8)(k))
}

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
