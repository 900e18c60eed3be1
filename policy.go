package retrypolicy

import "time"

// Policy is a strategy checked once and compiled for many decisions: what
// [regexp.Compile] is to a pattern. It tabulates the delays up to the cap
// and takes at most 8.5 KiB (about 500 bytes for the usual strategies). A
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
	s = s.effective()
	if err := s.validate(); err != nil {
		return Policy{}, err
	}
	return Policy{s: s, window: s.window(), d: compileDelays(&s.Backoff, t)}, nil
}

// Strategy returns the strategy p was compiled from, its zero fields
// filled with their defaults.
func (p *Policy) Strategy() Strategy { return p.s }
