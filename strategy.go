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
// error a retry may fix. It is a plain comparable value. A zero field means
// its default, as an omitted descriptor field does: the zero Strategy is
// [Default]; a zero Window is an hour, a zero Backoff the default one, and
// within a Backoff a zero BaseDelay is 1 s, Multiplier 2, MaxDelay no cap.
// Fields the Kind does not use must be zero. Delays are any positive whole
// number of nanoseconds (an in-process loop may wait microseconds); only
// strategies in whole seconds encode as a descriptor, which counts
// seconds. [Strategy.Validate] checks all of it.
type Strategy struct {
	// Kind is the strategy; zero only in the zero Strategy, [Default].
	Kind StrategyKind
	// MaxAttempts is, for Bounded only, how many failures within Window
	// make the job fatal: at least 1.
	MaxAttempts int
	// Window is, for Bounded only, how far back from the newest failure
	// failures count: 1 s to 7 days, whole seconds; zero is an hour.
	Window time.Duration
	// Backoff is how long a job waits before its retry; zero is the
	// default backoff, and None takes none.
	Backoff Backoff
}

// Default returns the strategy of a job that names none: UnlessStopped,
// waiting 1, 2, 4, 8 … seconds after successive failures, at most an hour.
func Default() Strategy {
	return Strategy{Kind: UnlessStopped, Backoff: defaultBackoff()}
}

// effective returns s with its zero fields filled as the omitted
// descriptor fields are.
func (s Strategy) effective() Strategy {
	if s == (Strategy{}) {
		return Default()
	}
	if s.Kind == Bounded && s.Window == 0 {
		s.Window = defaultWindow
	}
	if s.Kind == Bounded || s.Kind == UnlessStopped {
		if s.Backoff == (Backoff{}) {
			s.Backoff = defaultBackoff()
		}
		if s.Backoff.Kind == 0 { // a Go struct cannot say "given": other fields set mean the default kind
			s.Backoff.Kind = Exponential
		}
		if s.Backoff.BaseDelay == 0 {
			s.Backoff.BaseDelay = time.Second
		}
		if s.Backoff.Kind.exponential() && s.Backoff.Multiplier == 0 {
			s.Backoff.Multiplier = 2
		}
	}
	return s
}

// window returns the span over which s counts failures.
func (s *Strategy) window() time.Duration {
	if s.Kind == Bounded {
		return s.Window
	}
	return unlessStoppedWindow
}
