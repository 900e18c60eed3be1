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

// Policy is a strategy checked once and compiled for many decisions: what
// [regexp.Compile] is to a pattern. It tabulates the delays up to the cap
// and takes at most 8.3 KiB (about 200 bytes for the usual strategies). A
// Policy is immutable and safe for concurrent use by multiple goroutines;
// share one among the jobs of a strategy.
type Policy struct {
	s      Strategy
	window time.Duration
	d      delays
}

// Compile checks s and returns it as a Policy. It returns a
// *ValidationError for an invalid s.
func Compile(s Strategy) (*Policy, error) {
	var t tables // on the stack: the Policy keeps copies of what it needs
	p, err := compilePolicy(s, &t)
	if err != nil {
		return nil, err
	}
	return &Policy{s: p.s, window: p.window, d: p.d.own()}, nil
}

// compilePolicy checks s and compiles it, into t for the tables. It
// returns the Policy by value, which lets t stay on the caller's stack.
func compilePolicy(s Strategy, t *tables) (Policy, error) {
	if err := s.Validate(); err != nil {
		return Policy{}, err
	}
	return Policy{s: s, window: s.window(), d: compileDelays(&s.Backoff, t)}, nil
}

// Strategy returns the strategy p was compiled from.
func (p *Policy) Strategy() Strategy { return p.s }
