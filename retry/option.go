package retry

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/retrypolicy/retrypolicy"
)

// Option configures a loop: Do, New, and every adapter of this library that
// runs one (a retryhttp transport, a retrygrpc interceptor), which take the
// same Options. The With functions of this package make the loop's own; an
// adapter makes options of its own with an AdapterSetting, which only that
// adapter takes. The zero Option changes nothing.
//
// An option is known by the setting it is, not by its name. A list of
// options gives each setting of one value once: a second WithWaitLimit,
// or WithBudget beside WithoutBudget, is refused, naming both. Hooks
// (WithStart, WithObserver, WithEnd) and an adapter's additive settings
// (retrygrpc's safe methods) accumulate, each called or added in the order
// given.
type Option struct {
	name    string              // the function that made it, "retry.WithBudget"
	kind    kind                // the loop's setting it is
	set     func(config) config // the loop's own; by value, so that a call's configuration stays on its stack
	own     any                 // an adapter's: the func(*A) of AdapterSetting[A].Option
	setting any                 // an adapter's: its *AdapterSetting[A]
}

// kind is a setting of the loop: the hooks, which accumulate, and the
// settings of one value, which a list gives once.
type kind uint8

const (
	kindNone kind = iota // the zero Option, and an adapter's
	kindHook             // WithStart, WithObserver, WithEnd
	kindNested
	kindPermanent
	kindWaitLimit
	kindBudget
	kindNoBudget // one setting with kindBudget
	kindJitterSeed
	kindFullJitter
	kindAttemptTimeout
	kindStart // a hook, but one adapters ask about (IsStart)
	kindThrottle
	kindHedging
)

// single reports whether k is a setting of one value.
func (k kind) single() bool { return k > kindHook && k != kindStart }

// bit returns k's bit in a set of settings: WithBudget's and
// WithoutBudget's are one.
func (k kind) bit() uint32 {
	if k == kindNoBudget {
		k = kindBudget
	}
	return 1 << k
}

// Name returns the name of the function that made o, such as
// "retry.WithBudget" or "retryhttp.WithClassifier", as errors about it
// say; "" for the zero Option.
func (o Option) Name() string { return o.name }

// NamesBudget reports whether o says which budget a loop takes: it is
// WithBudget or WithoutBudget. An adapter that gives its calls a budget by
// default gives it only when none of its options does.
func (o Option) NamesBudget() bool { return o.kind == kindBudget || o.kind == kindNoBudget }

// IsStart reports whether o is a start hook (WithStart): an adapter that
// sends its attempts under the call's context when the loop has one asks.
func (o Option) IsStart() bool { return o.kind == kindStart }

// config is one call's configuration, and what the call has done.
type config struct {
	permanent      func(error) bool
	waitLimit      time.Duration
	attemptTimeout time.Duration
	budget         *Budget
	noBudget       bool
	throttle       *Throttle // WithThrottle's, nil for none
	hiddenResends  int       // the attempts' hidden resends so far
	hiddenSeen     bool      // an adapter saw an attempt's hidden resends
	seed           uint64
	seeded         bool
	fullJitter     bool
	begin          func(context.Context) context.Context
	observe        func(Event)
	end            func(End)
	nested         bool
	err            string              // the first option that is invalid, and why
	policy         *retrypolicy.Policy // the strategy compiled, by New; nil: compiled at the first failure
	calls          int                 // op's calls so far
	quiet          bool                // the loop gave up on a wait asked beyond its limit
	answered       bool                // the last failure was an answer, not transient: the call ended well
	hedge          *hedging            // WithHedging's, nil for none
}

// loopOption returns an Option of the loop's own, named name, of kind k.
func loopOption(name string, k kind, set func(config) config) Option {
	return Option{name: "retry." + name, kind: k, set: set}
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
// option that is invalid, that repeats a setting of one value, or that is
// an adapter's.
func apply(opts []Option) (config, error) {
	var cfg config
	var given uint32 // the settings of one value given so far, a bit each
	for i, opt := range opts {
		switch {
		case opt.own != nil:
			return cfg, optionError(opt.name + " is an option of " + owner(opt.name) + ", not of this loop")
		case opt.kind.single() && given&opt.kind.bit() != 0:
			return cfg, repeated(opts[:i], opt)
		case opt.set != nil:
			given |= opt.kind.bit()
			cfg = opt.set(cfg) // by value, so that cfg stays on the stack
		}
	}
	if cfg.err != "" {
		return cfg, optionError(cfg.err)
	}
	return cfg, nil
}

// repeated is the error of opt, a setting of one value that one of before
// already gave.
func repeated(before []Option, opt Option) error {
	for _, b := range before {
		if b.setting == opt.setting && b.kind != opt.kind && b.kind.bit() == opt.kind.bit() {
			return optionError(b.name + " and " + opt.name + ": choose one")
		}
	}
	return optionError(opt.name + ": given twice; give each setting once")
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

// AdapterSetting is a setting of an adapter whose configuration is A (a
// retryhttp transport's classifier, say): the options that give it are
// made by its Option method, and an option is known by its setting. Make
// one per setting, once, in a package variable, with NewAdapterSetting or
// NewAdditiveSetting.
type AdapterSetting[A any] struct {
	name     string
	additive bool
}

// NewAdapterSetting returns a setting of one value named name (the
// function that makes its options, "retryhttp.WithClassifier"): one list
// of options gives it once, and a second is refused, naming it.
func NewAdapterSetting[A any](name string) *AdapterSetting[A] {
	return &AdapterSetting[A]{name: name}
}

// NewAdditiveSetting returns a setting named name that a list of options
// may give any number of times, each adding to what the ones before it
// gave (retrygrpc's safe methods).
func NewAdditiveSetting[A any](name string) *AdapterSetting[A] {
	return &AdapterSetting[A]{name: name, additive: true}
}

// Option returns an option of the setting that applies set to the
// adapter's configuration. The adapter reads it with ApplyAdapterOptions;
// a loop given it (Do, New, another adapter) refuses it, naming it. So
// every part of the library takes one kind of option, and a setting the
// loop already has is said with the loop's option, once.
func (s *AdapterSetting[A]) Option(set func(*A)) Option {
	return Option{name: s.name, own: set, setting: s}
}

// ApplyAdapterOptions applies to a, in order, the options of opts that an
// AdapterSetting[A] made, and returns the others, the loop's own, for New or
// Do. An option of another adapter, and a second option of a setting of
// one value, are errors naming them.
func ApplyAdapterOptions[A any](a *A, opts []Option) ([]Option, error) {
	loop := make([]Option, 0, len(opts))
	for i, opt := range opts {
		switch set := opt.own.(type) {
		case nil:
			loop = append(loop, opt)
		case func(*A):
			if s, _ := opt.setting.(*AdapterSetting[A]); s != nil && !s.additive && slices.ContainsFunc(opts[:i], func(b Option) bool { return b.setting == opt.setting }) {
				return nil, repeated(opts[:i], opt)
			}
			set(a)
		default:
			return nil, optionError(opt.name + " is an option of " + owner(opt.name) + ", not of this one")
		}
	}
	return loop, nil
}

// WithNestedRetries makes the loop retry an attempt that was retried below
// as if its failure were fresh.
// The loop still reports to the layer above it when it gives up after
// retrying.
func WithNestedRetries() Option {
	return loopOption("WithNestedRetries", kindNested, func(c config) config { c.nested = true; return c })
}

// WithPermanent classifies the errors op returns that the caller does not
// wrap with Permanent (a 4xx status, say): when it reports true, the loop
// gives up at once with the reason NotRetryable.
func WithPermanent(isPermanent func(error) bool) Option {
	return loopOption("WithPermanent", kindPermanent, func(c config) config {
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
// minute, or an hour when it has no cap. d must be positive.
func WithWaitLimit(d time.Duration) Option {
	return loopOption("WithWaitLimit", kindWaitLimit, func(c config) config {
		if d <= 0 {
			return c.refuse("WithWaitLimit", "must be positive, got "+d.String())
		}
		c.waitLimit = d
		return c
	})
}

// WithAttemptTimeout bounds each attempt: the context the loop hands op
// (the attempt's) has a deadline d after the attempt starts, or the call's
// when that is sooner. An attempt that fails because its deadline passed,
// while the call's context lives, is retried as any transient failure is.
// An adapter bounds what each attempt sends: a retryhttp transport from
// sending a request to its response's headers (and to the end of draining
// a retried response's body), a retrygrpc unary call by its deadline
// (which gRPC sends the server), a server-streaming call until its first
// message arrives. The default is no bound of the loop's own: the call's
// context's. d must be positive.
func WithAttemptTimeout(d time.Duration) Option {
	return loopOption("WithAttemptTimeout", kindAttemptTimeout, func(c config) config {
		if d <= 0 {
			return c.refuse("WithAttemptTimeout", "must be positive, got "+d.String())
		}
		c.attemptTimeout = d
		return c
	})
}

// WithBudget makes the calls share b, a retry budget: each retry withdraws
// from it, and the loop gives up with the reason BudgetExhausted when it
// allows no more. Give each dependency a budget of its own. It is one
// setting with WithoutBudget: a list gives one of them.
func WithBudget(b *Budget) Option {
	return loopOption("WithBudget", kindBudget, func(c config) config {
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
// none with it. It is one setting with WithBudget: a list gives one of
// them.
func WithoutBudget() Option {
	return loopOption("WithoutBudget", kindNoBudget, func(c config) config { c.noBudget = true; return c })
}

// WithJitterSeed sets the seed the strategy's jitter is drawn from, for
// waits that are the same on every run. The default is a random seed per
// call.
func WithJitterSeed(seed uint64) Option {
	return loopOption("WithJitterSeed", kindJitterSeed, func(c config) config { c.seed, c.seeded = seed, true; return c })
}

// WithFullJitter makes each wait uniform in [0, credited delay] instead of
// the delay plus the strategy's additive jitter: the spread that best
// separates many clients that failed together.
func WithFullJitter() Option {
	return loopOption("WithFullJitter", kindFullJitter, func(c config) config { c.fullJitter = true; return c })
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
	return loopOption("WithStart", kindStart, func(c config) config {
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
// in the order given. A hedged call (WithHedging) calls it as each hedge
// is sent (Event.Hedge), and the calls that run at once may call it at
// once: it must be safe for concurrent use.
func WithObserver(observe func(Event)) Option {
	return loopOption("WithObserver", kindHook, func(c config) config {
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
	return loopOption("WithEnd", kindHook, func(c config) config {
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
// its method, with a NamedContext.
func NameCall(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, callNameKey{}, name)
}

// NamedContext is a context that names its call as NameCall does, for an
// adapter that keeps each call's state in a struct of its own: a field of
// that struct, handed to the loop by its address, names the call without a
// context made for it (retrygrpc names each call by its method so).
type NamedContext struct {
	context.Context
	// Name is the call's name, as CallName returns it.
	Name string
}

// Value returns the call's name for CallName, and asks the context it
// wraps for any other key.
func (n *NamedContext) Value(key any) any {
	if key == (callNameKey{}) {
		return n.Name
	}
	return n.Context.Value(key)
}

// CallName returns the name NameCall (or a NamedContext) gave ctx's call,
// "" for none.
func CallName(ctx context.Context) string {
	name, _ := ctx.Value(callNameKey{}).(string)
	return name
}
