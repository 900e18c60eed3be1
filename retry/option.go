package retry

import (
	"context"
	"strings"
	"time"

	"github.com/retrypolicy/retrypolicy"
)

// Option configures a loop: Do, New, and every adapter of this library that
// runs one (a retryhttp transport, a retrygrpc interceptor), which take the
// same Options. The With functions of this package make the loop's own; an
// adapter makes options of its own with AdapterOption, which only that
// adapter takes. The zero Option changes nothing.
type Option struct {
	name string              // the function that made it, "retry.WithBudget"
	set  func(config) config // the loop's own; by value, so that a call's configuration stays on its stack
	own  any                 // an adapter's: a func(*A) of AdapterOption[A]
}

// Name returns the name of the function that made o, such as
// "retry.WithBudget" or "retryhttp.WithClassifier", as errors about it
// say; "" for the zero Option.
func (o Option) Name() string { return o.name }

// config is one call's configuration, and what the call has done.
type config struct {
	permanent  func(error) bool
	waitLimit  time.Duration
	budget     *Budget
	noBudget   bool
	seed       uint64
	seeded     bool
	fullJitter bool
	begin      func(context.Context) context.Context
	observe    func(Event)
	end        func(End)
	nested     bool
	err        string              // the first option that is invalid, and why
	policy     *retrypolicy.Policy // the strategy compiled, by New; nil: compiled at the first failure
	calls      int                 // op's calls so far
	quiet      bool                // the loop gave up on a wait asked beyond its limit
	answered   bool                // the last failure was an answer, not transient: the call ended well
}

// loopOption returns an Option of the loop's own, named name.
func loopOption(name string, set func(config) config) Option {
	return Option{name: "retry." + name, set: set}
}

// refuse records that the option named name is invalid, unless an earlier
// one was.
func (c config) refuse(name, why string) config {
	if c.err == "" {
		c.err = "retry." + name + ": " + why
	}
	return c
}

// apply returns the configuration opts make, or an error naming the first
// option that is invalid, that conflicts with another, or that is an
// adapter's.
func apply(opts []Option) (config, error) {
	var cfg config
	for _, opt := range opts {
		switch {
		case opt.own != nil:
			return cfg, optionError(opt.name + " is an option of " + owner(opt.name) + ", not of this loop")
		case opt.set != nil:
			cfg = opt.set(cfg) // by value, so that cfg stays on the stack
		}
	}
	switch {
	case cfg.err != "":
		return cfg, optionError(cfg.err)
	case cfg.budget != nil && cfg.noBudget:
		return cfg, optionError("retry.WithBudget and retry.WithoutBudget: choose one")
	}
	return cfg, nil
}

// optionError is an invalid option: a string, so that making one costs no
// more than its message.
type optionError string

func (e optionError) Error() string { return string(e) }

// owner returns the package of the option named name.
func owner(name string) string {
	pkg, _, _ := strings.Cut(name, ".")
	return pkg
}

// AdapterOption returns an Option of an adapter's own, named name (the
// function that makes it, "retryhttp.WithClassifier"): set applies it to
// the adapter's configuration, of type A. The adapter reads it with
// ApplyAdapterOptions; a loop given it (Do, New, another adapter) refuses
// it, naming it. So every part of the library takes one kind of option,
// and a setting the loop already has is said with the loop's option, once.
func AdapterOption[A any](name string, set func(*A)) Option {
	return Option{name: name, own: set}
}

// ApplyAdapterOptions applies to a, in order, the options of opts that
// AdapterOption[A] made, and returns the others, the loop's own, for New or
// Do. An option of another adapter is an error naming it.
func ApplyAdapterOptions[A any](a *A, opts []Option) ([]Option, error) {
	loop := make([]Option, 0, len(opts))
	for _, opt := range opts {
		switch set := opt.own.(type) {
		case nil:
			loop = append(loop, opt)
		case func(*A):
			set(a)
		default:
			return nil, optionError(opt.name + " is an option of " + owner(opt.name) + ", not of this one")
		}
	}
	return loop, nil
}

// WithNestedRetries makes the loop retry an attempt that was retried below
// as if its failure were fresh, as it did before it retried at one layer.
// The loop still reports to the layer above it when it gives up after
// retrying.
func WithNestedRetries() Option {
	return loopOption("WithNestedRetries", func(c config) config { c.nested = true; return c })
}

// WithPermanent classifies the errors op returns that the caller does not
// wrap with Permanent (a 4xx status, say): when it reports true, the loop
// gives up at once with the reason NotRetryable.
func WithPermanent(isPermanent func(error) bool) Option {
	return loopOption("WithPermanent", func(c config) config {
		if isPermanent == nil {
			return c.refuse("WithPermanent", "the function is nil")
		}
		c.permanent = isPermanent
		return c
	})
}

// WithWaitLimit sets the longest wait a server may ask the loop to sleep
// (an error marked After, a retryhttp response's Retry-After, a gRPC
// pushback). A longer one is never cut to it: the loop gives up at once,
// with the reason RetryAfterTooLong and the wait asked (Deferred inside a
// queue's job), rather than call sooner than the server asked. The default
// is WaitLimit's for a synchronous layer: the backoff's longest delay (a
// fixed backoff's delay, an exponential one's MaxDelay) but at least a
// minute, or an hour when it has no cap. d must be positive. (It was
// WithAfterCap, and retryhttp's WithRetryAfterCap.)
func WithWaitLimit(d time.Duration) Option {
	return loopOption("WithWaitLimit", func(c config) config {
		if d <= 0 {
			return c.refuse("WithWaitLimit", "must be positive, got "+d.String())
		}
		c.waitLimit = d
		return c
	})
}

// WithBudget makes the calls share b, a retry budget: each retry withdraws
// from it, and the loop gives up with the reason BudgetExhausted when it
// allows no more. Give each dependency a budget of its own. It conflicts
// with WithoutBudget.
func WithBudget(b *Budget) Option {
	return loopOption("WithBudget", func(c config) config {
		if b == nil {
			return c.refuse("WithBudget", "the budget is nil; WithoutBudget says none")
		}
		c.budget = b
		return c
	})
}

// WithoutBudget says that the loop takes no retry budget. Do and New take
// none unless given one; an adapter that gives its calls a budget by
// default (a retryhttp transport, a retrygrpc client interceptor) takes
// none with it. It conflicts with WithBudget.
func WithoutBudget() Option {
	return loopOption("WithoutBudget", func(c config) config { c.noBudget = true; return c })
}

// WithJitterSeed sets the seed the strategy's jitter is drawn from, for
// waits that are the same on every run. The default is a random seed per
// call.
func WithJitterSeed(seed uint64) Option {
	return loopOption("WithJitterSeed", func(c config) config { c.seed, c.seeded = seed, true; return c })
}

// WithFullJitter makes each wait uniform in [0, credited delay] instead of
// the delay plus the strategy's additive jitter: the spread that best
// separates many clients that failed together.
func WithFullJitter() Option {
	return loopOption("WithFullJitter", func(c config) config { c.fullJitter = true; return c })
}

// WithStart calls start as each call of the loop begins, with the call's
// context: the loop runs the call under the context start returns (each
// attempt's context derives from it), and hands it to the observers as
// Event.Context and End.Context; an adapter sends its attempts under it
// (CallContext). An instrumentation opens a span around a whole call with
// it, and ends it in its end callback. Given more than
// once, each is called, in the order given, on the context the one before
// returned.
func WithStart(start func(ctx context.Context) context.Context) Option {
	return loopOption("WithStart", func(c config) config {
		if start == nil {
			return c.refuse("WithStart", "the function is nil")
		}
		if first := c.begin; first != nil {
			c.begin = func(ctx context.Context) context.Context { return start(first(ctx)) }
		} else {
			c.begin = start
		}
		return c
	})
}

// WithObserver calls observe before each retry, to log it or count it. The
// loop itself never logs. Given more than once, each observer is called,
// in the order given.
func WithObserver(observe func(Event)) Option {
	return loopOption("WithObserver", func(c config) config {
		if observe == nil {
			return c.refuse("WithObserver", "the function is nil")
		}
		c.observe = both(c.observe, observe)
		return c
	})
}

// WithEnd calls end once, as the call returns, with how it ended: to count
// the attempts an operation took, or why it gave up. Given more than once,
// each is called, in the order given.
func WithEnd(end func(End)) Option {
	return loopOption("WithEnd", func(c config) config {
		if end == nil {
			return c.refuse("WithEnd", "the function is nil")
		}
		c.end = both(c.end, end)
		return c
	})
}

// both returns a hook that calls first, then then; first may be nil.
func both[E any](first, then func(E)) func(E) {
	if first == nil {
		return then
	}
	return func(e E) { first(e); then(e) }
}

// callNameKey is the context key of NameCall.
type callNameKey struct{}

// NameCall returns ctx naming the call a loop runs under it, for its hooks
// (an instrumentation labels the call by it): retrygrpc names each call by
// its method.
func NameCall(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, callNameKey{}, name)
}

// CallName returns the name NameCall gave ctx's call, "" for none.
func CallName(ctx context.Context) string {
	name, _ := ctx.Value(callNameKey{}).(string)
	return name
}
