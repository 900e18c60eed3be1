package retry

import (
	"context"

	"github.com/retrypolicy/retrypolicy"
)

// Loop is Do prepared once: a strategy validated and compiled, and options
// applied, for the calls that share them (a worker's every call to one
// service). Its Do is the package's Do without that work on each call.
// Make one with New. It is safe for concurrent use, as the hooks and the
// budget its options give must be.
type Loop[T any] struct {
	s   retrypolicy.Strategy
	cfg config
}

// New returns the Loop of s and opts, or the strategy's
// *retrypolicy.ValidationError when s is invalid.
func New[T any](s retrypolicy.Strategy, opts ...Option) (*Loop[T], error) {
	p, err := retrypolicy.Compile(s)
	if err != nil {
		return nil, err
	}
	l := &Loop[T]{s: s, cfg: apply(opts)}
	l.cfg.policy = p
	return l, nil
}

// Do calls op until it succeeds, as the package's Do does under the
// loop's strategy and options.
func (l *Loop[T]) Do(ctx context.Context, op func(context.Context) (T, error)) (T, error) {
	cfg := l.cfg // the call's own, on its stack
	return call(ctx, &l.s, &cfg, op)
}
