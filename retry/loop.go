package retry

import (
	"context"
	"slices"
	"time"

	"github.com/retrypolicy/retrypolicy"
)

// Loop is Do prepared once: a strategy validated and compiled, and options
// applied, for the calls that share them (a worker's every call to one
// service). Its Do is the package's Do without that work on each call.
// Make one with New. It is safe for concurrent use, as the hooks and the
// budget its options give must be.
type Loop[T any] struct {
	s    retrypolicy.Strategy
	opts []Option // as given, for With
	cfg  config
}

// New returns the Loop of s and opts, or the strategy's
// *retrypolicy.ValidationError when s is invalid, or an error naming an
// option that is invalid.
func New[T any](s retrypolicy.Strategy, opts ...Option) (*Loop[T], error) {
	p, err := retrypolicy.Compile(s)
	if err != nil {
		return nil, err
	}
	cfg, err := apply(opts)
	if err != nil {
		return nil, err
	}
	cfg.policy = p
	cfg.hedge = cfg.hedge.forLoop()
	return &Loop[T]{s: s, opts: opts, cfg: cfg}, nil
}

// With returns a Loop of l's strategy and options with opts after them, the
// strategy compiled once for both: a call of its own options (a gRPC
// call's, say). A setting of one value that opts give replaces l's (a
// budget, WithBudget or WithoutBudget, replaces l's budget); hooks are
// called beside l's. It returns an error naming an option that is invalid,
// or a setting of one value that opts give twice.
func (l *Loop[T]) With(opts ...Option) (*Loop[T], error) {
	var given uint32 // the settings of one value opts give
	for _, o := range opts {
		if o.kind.single() {
			given |= o.kind.bit()
		}
	}
	replaced := func(o Option) bool { return o.kind.single() && given&o.kind.bit() != 0 }
	var all []Option
	if slices.ContainsFunc(l.opts, replaced) {
		all = slices.DeleteFunc(slices.Clone(l.opts), replaced)
	} else {
		all = l.opts[:len(l.opts):len(l.opts)]
	}
	all = append(all, opts...)
	cfg, err := apply(all)
	if err != nil {
		return nil, err
	}
	cfg.policy = l.cfg.policy
	cfg.hedge = cfg.hedge.forLoop() // samples of its own
	return &Loop[T]{s: l.s, opts: all, cfg: cfg}, nil
}

// AttemptTimeout returns the loop's attempt timeout (WithAttemptTimeout),
// 0 for none: an adapter bounds with it what an attempt sends under
// another context than the attempt's (a response body that outlives the
// attempt, a stream that goes on under the call's context).
func (l *Loop[T]) AttemptTimeout() time.Duration { return l.cfg.attemptTimeout }

// Observe calls the loop's observers (WithObserver), in order, with e:
// an adapter tells them so of what is not a retry, with Failures 0 (a
// retryhttp transport's host budget that could not be made).
func (l *Loop[T]) Observe(e Event) {
	if l.cfg.observe != nil {
		l.cfg.observe(e)
	}
}

// Do calls op until it succeeds, as the package's Do does under the
// loop's strategy and options. It never hedges: a loop made with
// WithHedging refuses it, naming Loop.Hedge.
func (l *Loop[T]) Do(ctx context.Context, op func(context.Context) (T, error)) (T, error) {
	if l.cfg.hedge != nil {
		var zero T
		return zero, errHedgeInDo
	}
	cfg := l.cfg // the call's own, on its stack
	return call(ctx, &l.s, &cfg, op)
}
