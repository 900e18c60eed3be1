package retrypolicy

import "time"

// Policy is a strategy checked once, ready for many decisions: what
// [regexp.Compile] is to a pattern. A Policy is immutable and safe for
// concurrent use by multiple goroutines.
type Policy struct {
	s      Strategy
	window time.Duration
	st     steps
}

// Compile checks s and returns it as a Policy. It returns a
// *ValidationError for an invalid s.
func Compile(s Strategy) (*Policy, error) {
	p := new(Policy)
	if err := p.init(s); err != nil {
		return nil, err
	}
	p.st.prepare()
	return p, nil
}

// init checks s and prepares p for it.
func (p *Policy) init(s Strategy) error {
	if err := s.Validate(); err != nil {
		return err
	}
	p.s, p.window = s, s.window()
	p.st.init(&s.Backoff)
	return nil
}

// Decide is [Decide] under the policy's strategy, which it does not check
// again. It does not allocate.
func (p *Policy) Decide(failures []time.Time, uptime time.Duration, seed uint64, now time.Time) (d Decision, err error) {
	if len(failures) == 0 {
		return d, errNoFailures
	}
	p.decideOn(&d, failures, uptime, seed, now)
	return d, nil
}
