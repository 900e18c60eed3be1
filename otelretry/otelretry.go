// Package otelretry records OpenTelemetry metrics and traces of every retry
// retrypolicy decides.
//
// [Instruments.Options] instruments any loop of the library, which all
// take the same retry.Options: a [retry.Do] call, a retryhttp transport's
// requests, a retrygrpc interceptor's calls. A River client's jobs
// (package otelretry/otelriver), JetStream's messages
// (otelretry/otelnats) and a scheduler's own controller tick are recorded
// by their decisions.
//
//	in, err := otelretry.New() // the global providers; WithMeterProvider, WithTracerProvider
//	body, err := retry.Do(ctx, strategy, fetch, in.Options("retry", "fetch-report")...)
//
// The instruments, their units and attributes are a stable table in the
// module's README. Attributes stay of low cardinality: an operation's name
// that the caller chooses, a job kind, a reason, an action; never a job
// id, an error's text or a URL. With the global no-op providers (nothing
// set up), an instrumented retry allocates nothing more than a plain one.
package otelretry

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/retrypolicy/retrypolicy/otelretry"

// The attributes the instruments and spans carry.
const (
	// Operation names what is retried, as the caller calls it.
	Operation = attribute.Key("retrypolicy.operation")
	// Source says where the retry was decided: retry (Retry), http
	// (retryhttp), grpc (retrygrpc, through Options), river (riverretry),
	// nats (natsretry) or tick (a scheduler's controller).
	Source = attribute.Key("retrypolicy.source")
	// Reason is why a retry was given up: a retrypolicy.Reason's text.
	Reason = attribute.Key("retrypolicy.reason")
	// Action is a decision's action: retry_now, wait or fatal.
	Action = attribute.Key("retrypolicy.action")
	// Outcome is how an operation ended: success or give_up; for a hedge
	// (retrypolicy.hedges), won or lost.
	Outcome = attribute.Key("retrypolicy.outcome")
	// Budget names a retry budget, as ObserveBudget is given it.
	Budget = attribute.Key("retrypolicy.budget")
	// ResendCount is the semantic conventions' attribute of an HTTP client
	// span: how many times the request was sent before (attempt - 1).
	ResendCount = attribute.Key("http.request.resend_count")
)

// WaitBuckets are the wait histogram's bucket boundaries, in seconds: from
// a millisecond to a day, in steps a reader counts time in.
var WaitBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400}

// AttemptBuckets are the attempts histogram's bucket boundaries.
var AttemptBuckets = []float64{1, 2, 3, 4, 5, 7, 10, 15, 20, 30, 50, 100}

// Instruments records retries. Make one with New and share it: it is safe
// for concurrent use.
type Instruments struct {
	tracer    trace.Tracer
	meter     metric.Meter
	retries   metric.Int64Counter
	wait      metric.Float64Histogram
	giveUps   metric.Int64Counter
	decisions metric.Int64Counter
	attempts  metric.Int64Histogram
	tokens    metric.Float64ObservableGauge
	hidden    metric.Int64Counter // retrypolicy.hidden_resends
	hedges    metric.Int64Counter // retrypolicy.hedges
	events    int                 // the retries of a call that get a span event each
}

// DefaultSpanEvents is how many retries of a call get a span event
// each, unless WithSpanEvents says otherwise: the rest are summed on the
// span as it ends, so that a call that retries ten thousand times does not
// write ten thousand events.
const DefaultSpanEvents = 8

// Option configures New; the With functions make them. Like
// retry.Option, it returns the configuration it changes.
type Option struct{ set func(config) config }

type config struct {
	mp        metric.MeterProvider
	tp        trace.TracerProvider
	events    int
	eventsSet bool
}

// WithMeterProvider records the metrics through mp; nil, and the default,
// is otel.GetMeterProvider().
func WithMeterProvider(mp metric.MeterProvider) Option {
	return Option{func(c config) config { c.mp = mp; return c }}
}

// WithTracerProvider records the spans through tp; nil, and the default,
// is otel.GetTracerProvider().
func WithTracerProvider(tp trace.TracerProvider) Option {
	return Option{func(c config) config { c.tp = tp; return c }}
}

// WithSpanEvents gives the first n retries of each call a span event
// each (DefaultSpanEvents without it; 0: none); the retries past them are
// summed on the span as it ends: retrypolicy.summed_retries, their total
// wait retrypolicy.summed_wait_secs and the largest
// retrypolicy.summed_max_wait_secs. A negative n is 0.
func WithSpanEvents(n int) Option {
	return Option{func(c config) config { c.events, c.eventsSet = max(n, 0), true; return c }}
}

// New makes the instruments; its error is the meter's, for an instrument
// it could not make.
func New(opts ...Option) (*Instruments, error) {
	var c config
	for _, o := range opts {
		if o.set != nil {
			c = o.set(c)
		}
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	in := &Instruments{tracer: c.tp.Tracer(ScopeName), meter: c.mp.Meter(ScopeName), events: DefaultSpanEvents}
	if c.eventsSet {
		in.events = c.events
	}
	m := in.meter
	var errs [6]error
	in.retries, errs[0] = m.Int64Counter("retrypolicy.retries", metric.WithUnit("{retry}"),
		metric.WithDescription("Retries decided: an operation, request or job that failed and will run again."))
	in.wait, errs[1] = m.Float64Histogram("retrypolicy.wait.duration", metric.WithUnit("s"),
		metric.WithDescription("The wait before each retry."), metric.WithExplicitBucketBoundaries(WaitBuckets...))
	in.giveUps, errs[2] = m.Int64Counter("retrypolicy.give_ups", metric.WithUnit("{give_up}"),
		metric.WithDescription("Operations, requests and jobs given up, by reason."))
	in.decisions, errs[3] = m.Int64Counter("retrypolicy.decisions", metric.WithUnit("{decision}"),
		metric.WithDescription("Decisions on a failed job, by action: retry_now, wait or fatal."))
	in.attempts, errs[4] = m.Int64Histogram("retrypolicy.operation.attempts", metric.WithUnit("{attempt}"),
		metric.WithDescription("The attempts an operation or request took, at its end."), metric.WithExplicitBucketBoundaries(AttemptBuckets...))
	in.tokens, errs[5] = m.Float64ObservableGauge("retrypolicy.budget.tokens", metric.WithUnit("{token}"),
		metric.WithDescription("The retries a budget allows now."))
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if err := in.newHidden(); err != nil {
		return nil, err
	}
	if err := in.newHedges(); err != nil {
		return nil, err
	}
	return in, nil
}

// Options returns the options that make a loop of the library record
// each of its calls: retry.Do, a retry.Loop, a retryhttp transport, a
// retrygrpc interceptor, or a loop of your own that takes retry.Options.
// Each call is a span named for its operation, the parent of its attempts'
// spans (otelhttp's or otelgrpc's, under the loop), with an event for each
// of its first retries (WithSpanEvents) and its status an error when it
// gives up; its metrics count each retry and its wait, the attempts at its
// end, and a give-up by reason. An observer's event that is no retry is
// not counted as one: a hedge (counted by outcome at the call's end), a
// hidden resend (counted apart), an adapter's notice of no failure (a
// retryhttp host's budget or throttle that could not be made). source is the Source attribute ("retry",
// "http", "grpc", or a name of yours); operation is the Operation
// attribute and the span's name. An operation of "" names each call by
// retry.CallName of its context (retrygrpc names a call by its method), or
// source when it has none. The same options serve any number of loops and
// calls at once.
func (in *Instruments) Options(source, operation string) []retry.Option {
	o := &operations{in: in, source: source, fixed: operation}
	if operation != "" {
		o.one = in.setsOf(source, operation)
	}
	return []retry.Option{retry.WithStart(o.start), retry.WithObserver(o.retried), retry.WithEnd(o.ended)}
}

// operations records the calls of the loops its options are given to.
type operations struct {
	in     *Instruments
	source string
	fixed  string   // the operation every call is, "" for each call's name
	one    *opSets  // fixed's attributes
	names  sync.Map // a call's name → *opSets, when fixed is ""
	nnames atomic.Int64
}

// maxNames is the most call names whose attributes are kept made: a
// service's methods are far fewer; past them, each call makes its own.
const maxNames = 1024

// opSets are an operation's attributes, made once.
type opSets struct {
	name string
	set  attribute.Set
	rec  []metric.RecordOption
	add  []metric.AddOption
}

func (in *Instruments) setsOf(source, name string) *opSets {
	set := attribute.NewSet(Source.String(source), Operation.String(name))
	opt := metric.WithAttributeSet(set)
	return &opSets{name: name, set: set, rec: []metric.RecordOption{opt}, add: []metric.AddOption{opt}}
}

// sets returns the attributes of the call whose context is ctx.
func (o *operations) sets(ctx context.Context) *opSets {
	if o.one != nil {
		return o.one
	}
	name := retry.CallName(ctx)
	if name == "" {
		name = o.source
	}
	if s, ok := o.names.Load(name); ok {
		return s.(*opSets)
	}
	s := o.in.setsOf(o.source, name)
	if o.nnames.Load() < maxNames {
		if _, loaded := o.names.LoadOrStore(name, s); !loaded {
			o.nnames.Add(1)
		}
	}
	return s
}

// callKey is the context key of a call's recorder.
type callKey struct{}

// start opens the call's span, and keeps the call's recorder in its
// context when the span records (its events are counted per call).
func (o *operations) start(ctx context.Context) context.Context {
	sets := o.sets(ctx)
	ctx, span := o.in.tracer.Start(ctx, sets.name, trace.WithAttributes(Operation.String(sets.name)))
	if !span.IsRecording() {
		return ctx
	}
	return context.WithValue(ctx, callKey{}, &call{in: o.in, span: span, sets: sets})
}

// recorder returns the call's recorder (kept in its context by start when
// its span records), or a metrics-only one.
func (o *operations) recorder(ctx context.Context) (c *call, own bool) {
	if c, ok := ctx.Value(callKey{}).(*call); ok {
		return c, true
	}
	return &call{in: o.in, sets: o.sets(ctx)}, false
}

// retried records an observer's event that is a retry, or a hidden
// resend. A hedge is not a retry (the hedges are counted by outcome at the
// call's end), nor is an event of no failure: an adapter's notice
// (retry.Loop.Observe: a retryhttp host's budget or throttle that could
// not be made).
func (o *operations) retried(e retry.Event) {
	switch {
	case e.Hidden:
		o.hiddenResend(e)
	case !e.Hedge && e.Failures > 0:
		c, _ := o.recorder(e.Context)
		c.retried(e)
	}
}

func (o *operations) ended(e retry.End) {
	c, own := o.recorder(e.Context)
	c.ended(e)
	if own {
		c.span.End()
		return
	}
	trace.SpanFromContext(e.Context).End() // the span start opened, which does not record
}

// ResendCountTransport sets http.request.resend_count on the span of each
// request it sends again: under otelhttp's transport, itself under a
// retryhttp Transport, that span is the attempt's client span.
func ResendCountTransport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return resendCount{next}
}

type resendCount struct{ next http.RoundTripper }

func (t resendCount) RoundTrip(req *http.Request) (*http.Response, error) {
	if n := retryhttp.Attempt(req.Context()); n > 1 {
		trace.SpanFromContext(req.Context()).SetAttributes(ResendCount.Int(n - 1))
	}
	return t.next.RoundTrip(req)
}

// Decided records d, a decision a scheduler's controller acted on (it
// scheduled the retry, or failed the job): once per failure, not on each
// tick a job waits. attrs (low-cardinality: a job kind, a queue) are added
// to its metrics.
func (in *Instruments) Decided(ctx context.Context, d retrypolicy.Decision, attrs ...attribute.KeyValue) {
	in.DecidedBy(ctx, "tick", d, retry.Reason(d.Reason), attrs...)
}

// DecidedBy is Decided for a decision made in source, an adapter's name
// (otelriver's is river): the value of the Source attribute. gaveUp is
// why a fatal decision gives the job up (its own reason, or the adapter's,
// such as retry.NotRetryable for a permanent error).
func (in *Instruments) DecidedBy(ctx context.Context, source string, d retrypolicy.Decision, gaveUp retry.Reason, attrs ...attribute.KeyValue) {
	kv := append([]attribute.KeyValue{Source.String(source), Action.String(d.Action.String())}, attrs...)
	if d.Action == retrypolicy.Fatal {
		kv = append(kv, Reason.String(gaveUp.String()))
	}
	in.decisions.Add(ctx, 1, metric.WithAttributes(kv...))
	kv = append(kv[:0], Source.String(source))
	kv = append(kv, attrs...)
	if d.Action == retrypolicy.Fatal {
		in.giveUps.Add(ctx, 1, metric.WithAttributes(append(kv, Reason.String(gaveUp.String()))...))
		return
	}
	set := metric.WithAttributes(kv...)
	in.retries.Add(ctx, 1, set)
	in.wait.Record(ctx, (d.Delay + d.Jitter).Seconds(), set)
}

// Meter is the meter of the instruments, named ScopeName: an adapter
// (otelriver) makes its own instruments with it, in the same scope.
func (in *Instruments) Meter() metric.Meter { return in.meter }

// ObserveBudget reports b's tokens (Budget.Tokens) as
// retrypolicy.budget.tokens with the attribute retrypolicy.budget=name, at
// each collection, until the registration is unregistered.
func (in *Instruments) ObserveBudget(name string, b *retry.Budget) (metric.Registration, error) {
	attrs := metric.WithAttributes(Budget.String(name))
	return in.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveFloat64(in.tokens, b.Tokens(), attrs)
		return nil
	}, in.tokens)
}

// call records one call's retries: its attributes are made once per
// operation, so that a retry allocates nothing more.
type call struct {
	in   *Instruments
	span trace.Span // nil: no span that records
	sets *opSets
	// The span's events so far, and the retries past them, summed.
	events              int
	summed              int
	summedWait, longest time.Duration
}

// retried records a retry about to happen.
func (r *call) retried(e retry.Event) {
	if r.span != nil && r.events >= r.in.events {
		// Past the span's events: the retry is summed for the span's end,
		// and its metrics are recorded without the span, whose exemplars
		// the first retries' metrics carry already.
		r.summed++
		r.summedWait += e.Wait
		r.longest = max(r.longest, e.Wait)
		r.in.retries.Add(context.Background(), 1, r.sets.add...)
		r.in.wait.Record(context.Background(), e.Wait.Seconds(), r.sets.rec...)
		return
	}
	r.in.retries.Add(e.Context, 1, r.sets.add...)
	r.in.wait.Record(e.Context, e.Wait.Seconds(), r.sets.rec...)
	if r.span == nil || !r.span.IsRecording() {
		return
	}
	r.events++
	d := e.Decision
	r.span.AddEvent("retrypolicy.retry", trace.WithAttributes(
		attribute.Int("retrypolicy.failures", e.Failures),
		attribute.Int("retrypolicy.in_window", d.InWindow),
		attribute.Float64("retrypolicy.owed_secs", d.Owed.Seconds()),
		attribute.Float64("retrypolicy.delay_secs", d.Delay.Seconds()),
		attribute.Float64("retrypolicy.wait_secs", e.Wait.Seconds()),
	), trace.WithTimestamp(e.Wake.Add(-e.Wait)))
}

// ended records the end of the operation: its attempts, a give-up, and
// the retries summed rather than written as events.
func (r *call) ended(e retry.End) {
	r.hedged(e)
	if r.summed > 0 && r.span != nil {
		r.span.SetAttributes(attribute.Int("retrypolicy.summed_retries", r.summed),
			attribute.Float64("retrypolicy.summed_wait_secs", r.summedWait.Seconds()),
			attribute.Float64("retrypolicy.summed_max_wait_secs", r.longest.Seconds()))
	}
	if e.GaveUp == nil {
		r.in.attempts.Record(e.Context, int64(e.Attempts), metric.WithAttributeSet(r.with(Outcome.String("success"))))
		return
	}
	reason := e.GaveUp.Reason.String()
	r.in.attempts.Record(e.Context, int64(e.Attempts), metric.WithAttributeSet(r.with(Outcome.String("give_up"))))
	r.in.giveUps.Add(e.Context, 1, metric.WithAttributeSet(r.with(Reason.String(reason))))
	if r.span != nil {
		r.span.AddEvent("retrypolicy.give_up", trace.WithAttributes(Reason.String(reason), attribute.Int("retrypolicy.failures", e.GaveUp.Failures)))
		r.span.SetStatus(codes.Error, "gave up: "+reason)
	}
}

// with is the call's attributes and kv.
func (r *call) with(kv attribute.KeyValue) attribute.Set {
	return attribute.NewSet(append(r.sets.set.ToSlice(), kv)...)
}
