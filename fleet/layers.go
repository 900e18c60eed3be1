package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/say"
	"github.com/retrypolicy/retrypolicy/retry"
)

// maxLayersSpan is the longest Duration and Horizon of a Layers run: its
// per-second counts stay a few hundred KB.
const maxLayersSpan = 24 * time.Hour

// The most a Layers run holds at once, whatever its MaxCalls: calls in
// flight (each with its History, a few hundred bytes), and latencies kept
// for the percentiles (past it, a uniform sample of them). Variables only
// so that a test can lower them.
var (
	maxLiveCalls = 1_000_000
	maxLatencies = 1_000_000
)

// DefaultMaxCalls is the most calls a [Layers] run follows, at every layer
// and the bottom together, when its MaxCalls is zero: a few seconds of
// work.
const DefaultMaxCalls = 20_000_000

// Layer is one layer of a call chain: a client, a gateway, a service, a
// database driver. Each call into it is an in-process retry loop of its
// own, as retry.Do runs it: each attempt calls the layer below
// (or, for the last layer, the bottom dependency) after Latency, and fails
// when that call gives up or Timeout passes.
type Layer struct {
	// Name names the layer in results.
	Name string
	// Strategy decides the layer's retries, in milliseconds if it likes;
	// a strategy of kind None makes one attempt a call.
	Strategy retrypolicy.Strategy
	// BudgetSettings give the layer's calls one retry.Budget to share: a
	// token one when BudgetBurst is not zero, a windowed one when
	// BudgetInterval is not zero (counted on the simulation's clock from
	// t = 0), none when both are zero. A retry it refuses gives the call
	// up.
	BudgetSettings
	// OnlyRetryable makes the layer retry only the failures the layer
	// below reports as retryable: the bottom's are; a layer that retried
	// and gave up reports its failure as not retryable, and one that made
	// a single attempt passes on what it was told. So a chain of such
	// layers retries at one layer, the lowest that retries.
	OnlyRetryable bool
	// BreakerFailures, when not zero, puts a circuit breaker before the
	// layer's calls below: after that many failures in a row it opens for
	// BreakerOpen (zero: 10 s), during which an attempt fails at once
	// without calling below, and the call gives up (a permanent error).
	BreakerFailures int
	BreakerOpen     time.Duration
	// Latency is how long an attempt takes to reach the layer below.
	Latency time.Duration
	// Timeout, when not zero, fails an attempt that has not heard from
	// below within it; the call below goes on, its load unchanged.
	Timeout time.Duration
}

// Layers is a call chain through an outage: requests arrive at the top at
// Rate a second for Duration (evenly, or as a Poisson process), and go
// down through each of Layers (the first is the top) to a bottom
// dependency that is down for Down from t = 0, then serves at most
// Capacity calls a second (those beyond fail at once), each failing besides
// with probability FailRate. The run is deterministic for Seed, and
// bounded: it follows at most MaxCalls calls in all, and stops when its
// context is done. A zero field means its default.
type Layers struct {
	// Layers are the chain, top first; nil is DefaultLayers(3).
	Layers []Layer
	// Rate is how many requests a second arrive at the top; zero is 100.
	Rate float64
	// Poisson makes the arrivals a Poisson process of Rate, drawn from
	// Seed, rather than evenly spaced.
	Poisson bool
	// Duration is how long requests arrive; zero is 10 minutes.
	Duration time.Duration
	// Down is how long the bottom is down, from DownAt.
	Down time.Duration
	// DownAt is when the bottom goes down: a healthy stretch before the
	// outage; zero is t = 0.
	DownAt time.Duration
	// Capacity is the most calls a second the bottom serves; zero is no
	// limit.
	Capacity int
	// FailRate is the probability that the bottom fails a call it serves,
	// drawn from Seed: independent failures besides the outage.
	FailRate float64
	// Horizon is how long after the last arrival the run goes on, for the
	// retries in flight to end; zero is 10 minutes.
	Horizon time.Duration
	// Seed draws the arrivals, the failures and the jitter.
	Seed uint64
	// MaxCalls is the most calls followed in all, from 1 to 1e9; zero is
	// DefaultMaxCalls.
	MaxCalls int

	// onDecide, when set, sees each decision: the call (its slot and
	// generation), its layer, the failure and the attempt's uptime.
	onDecide func(call uint64, layer int, failure time.Time, uptime time.Duration)
}

// DefaultLayers is the chain of four layers of the general retry rules' example, a client, a
// gateway, a service and a database driver, each making up to k attempts
// a call (5 ms × 2 between them) with a 5 ms hop to the layer below.
func DefaultLayers(k int) []Layer {
	s := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: k, Window: time.Hour,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: 5 * time.Millisecond, Multiplier: 2}}
	out := make([]Layer, 0, 4)
	for _, name := range []string{"client", "gateway", "service", "driver"} {
		out = append(out, Layer{Name: name, Strategy: s, Latency: 5 * time.Millisecond})
	}
	return out
}

// LayersResult is what a Layers run shows.
type LayersResult struct {
	// Requests counts the requests that arrived; Succeeded and Failed those
	// that ended so; the rest were in flight at the horizon.
	Requests, Succeeded, Failed int
	// BottomCalls counts the calls the bottom received, and Amplification
	// is BottomCalls per request.
	BottomCalls   int
	Amplification float64
	// Attempts counts each layer's attempts, top first.
	Attempts []int
	// Decisions counts the retry decisions the layers made.
	Decisions int
	// Load counts the bottom's calls in each second from t = 0; Served
	// the requests that succeeded in it; Retries the retries the layers
	// decided on, by the second they are due, all layers together, up to
	// the horizon.
	Load, Served, Retries []int
	// PeakLoad is the busiest second's calls over Capacity (0 without a
	// capacity).
	PeakLoad float64
	// Latency is the successful requests' latency, from arrival to success:
	// over a uniform sample of a million of them when more succeeded.
	Latency Percentiles
	// Recovery is how long after the outage the first second came whose
	// load was within capacity and that served requests; Metastable when
	// none did before the horizon.
	Recovery   time.Duration
	Metastable bool
	// Truncated reports that the run stopped at a bound (MaxCalls, its
	// events, a million calls in flight at once, or its context): its
	// counts are lower bounds. TruncatedBy names the bound.
	Truncated   bool
	TruncatedBy Bound
}

// A layerCall is one call into a layer (its retry loop), or into the
// bottom.
type layerCall struct {
	layer         int32 // len(chain) for the bottom
	parent        int32 // the call above, or -1 for a request
	parentGen     uint32
	parentAttempt int32 // the parent's attempt that made this call
	gen           uint32
	attempt       int32 // the last attempt started, from 1
	waiting       bool  // that attempt has ended, and the next is due
	done          bool
	arrived       time.Duration // the request's arrival, for the top's calls
	started       time.Duration // the attempt in flight's start
	history       history
}

// layerEvent is a scheduled step: a request's arrival, an attempt to
// start, a timeout to fire, or the last layer's attempt reaching the
// bottom.
type layerEvent struct {
	call    int32
	gen     uint32
	attempt int32
	kind    uint8
}

// The kinds of layerEvent.
const (
	startAttempt uint8 = iota
	fireTimeout
	reachBottom
	arrive
)

// layersRun is a Layers run in progress.
type layersRun struct {
	l         *Layers
	chain     []Layer
	policies  []*retrypolicy.Policy
	budgets   []*retry.Budget // a layer's, nil for none
	breakers  []breaker
	calls     []layerCall
	free      []int32
	eng       *engine[layerEvent]
	hopQ      []int // the engine's queue of each layer's hops
	timeoutQ  []int // the engine's queue of each layer's timeouts, -1 for none
	rng       *rand.Rand
	latency   []time.Duration
	r         LayersResult
	followed  int
	latencies reservoir // the successes' latencies, or a sample
}

// breaker is a layer's circuit breaker.
type breaker struct {
	failures  int
	openUntil time.Duration
}

// Run runs the chain and returns what it shows, or an error for an invalid
// layer's strategy or budget, or when ctx is done (with the figures so
// far, Truncated).
func (l Layers) Run(ctx context.Context) (LayersResult, error) {
	run, err := newLayersRun(&l)
	if err != nil {
		return LayersResult{}, err
	}
	if err := run.run(ctx); err != nil {
		return run.result(), err
	}
	return run.result(), nil
}

// newLayersRun checks the chain and prepares its run.
func newLayersRun(l *Layers) (*layersRun, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	r := &layersRun{l: l, chain: l.Layers, rng: rand.New(rand.NewPCG(l.Seed, 0x6c617965))}
	r.eng = newEngine[layerEvent](EventsPerCall*l.MaxCalls, BoundEvents)
	r.eng.fifoTies, r.eng.alive = true, r.pending
	for i, layer := range l.Layers {
		p, err := retrypolicy.Compile(layer.Strategy)
		if err != nil {
			return nil, fmt.Errorf("fleet: Layers: layer %d (%s): %w", i+1, layer.Name, err)
		}
		r.policies = append(r.policies, p)
		b, err := layer.budget()
		if err != nil {
			return nil, fmt.Errorf("fleet: Layers: layer %d (%s): %w", i+1, layer.Name, err)
		}
		r.budgets = append(r.budgets, b)
		r.latency = append(r.latency, layer.Latency)
	}
	r.breakers = make([]breaker, len(l.Layers))
	r.hopQ = r.queuesFor(func(l Layer) (time.Duration, bool) { return l.Latency, true })
	r.timeoutQ = r.queuesFor(func(l Layer) (time.Duration, bool) { return l.Timeout, l.Timeout > 0 })
	r.r.Attempts = make([]int, len(l.Layers))
	return r, nil
}

// check fills l's zero fields with their defaults, and returns the error
// of the first field out of range.
func (l *Layers) check() error {
	l.defaults()
	switch {
	case len(l.Layers) == 0 || len(l.Layers) > 16:
		return errors.New("fleet: Layers: from 1 to 16 layers")
	case !(l.Rate > 0 && l.Rate <= 1e6):
		return fmt.Errorf("fleet: Layers: Rate must be above 0 and at most 1000000, got %v", l.Rate)
	case !(l.FailRate >= 0 && l.FailRate < 1):
		return fmt.Errorf("fleet: Layers: FailRate must be in [0, 1), got %v", l.FailRate)
	case l.MaxCalls < 1 || l.MaxCalls > 1e9 || l.Capacity < 0 || l.Down < 0:
		return errors.New("fleet: Layers: MaxCalls from 1 to 1e9, and no negative Capacity or Down")
	}
	if err := l.checkSpans(); err != nil {
		return err
	}
	return l.checkLayers()
}

// checkSpans returns the error of the first span out of range: Duration,
// Horizon and DownAt within a day.
func (l *Layers) checkSpans() error {
	switch {
	case l.Duration < 0 || l.Duration > maxLayersSpan || l.Horizon < 0 || l.Horizon > maxLayersSpan:
		return fmt.Errorf("fleet: Layers: Duration and Horizon from 0 to %s", say.GoDuration(maxLayersSpan))
	case l.DownAt < 0 || l.DownAt > maxLayersSpan:
		return fmt.Errorf("fleet: Layers: DownAt from 0 to %s, got %v", say.GoDuration(maxLayersSpan), l.DownAt)
	}
	return nil
}

// checkLayers returns the error of the first layer out of range, naming
// it.
func (l *Layers) checkLayers() error {
	for i, layer := range l.Layers {
		if err := layer.check(i); err != nil {
			return err
		}
	}
	return nil
}

// check returns the error of the layer's first field out of range, naming
// it as the i-th layer: times within a day (a breaker may open for longer:
// its end saturates), and no negative count.
func (l Layer) check(i int) error {
	at := fmt.Sprintf("fleet: Layers: layer %d (%s): ", i+1, l.Name)
	switch {
	case l.Latency < 0 || l.Latency > maxLayersSpan:
		return fmt.Errorf("%sLatency must be from 0 to %s, got %v", at, say.GoDuration(maxLayersSpan), l.Latency)
	case l.Timeout < 0 || l.Timeout > maxLayersSpan:
		return fmt.Errorf("%sTimeout must be from 0 to %s, got %v", at, say.GoDuration(maxLayersSpan), l.Timeout)
	case l.BreakerFailures < 0 || l.BreakerOpen < 0:
		return fmt.Errorf("%sBreakerFailures and BreakerOpen must not be negative, got %d and %v", at, l.BreakerFailures, l.BreakerOpen)
	}
	return nil
}

// defaults fills l's zero fields with their defaults.
func (l *Layers) defaults() {
	if l.Layers == nil {
		l.Layers = DefaultLayers(3)
	}
	l.Rate = cmp.Or(l.Rate, 100)
	l.Duration = cmp.Or(l.Duration, 10*time.Minute)
	l.Horizon = cmp.Or(l.Horizon, 10*time.Minute)
	l.MaxCalls = cmp.Or(l.MaxCalls, DefaultMaxCalls)
}

// run follows the arrivals and every call they make, in time order, until
// the horizon or a bound.
func (r *layersRun) run(ctx context.Context) error {
	r.scheduleArrival(r.arrival(0))
	var err error
	r.r.TruncatedBy, err = r.eng.run(ctx, r.l.Duration+r.l.Horizon, r.step)
	r.r.Truncated = r.r.TruncatedBy != ""
	if err != nil {
		return fmt.Errorf("fleet: Layers: %w", err)
	}
	return nil
}

// step runs an event at t, then stops the run at its calls' bounds.
func (r *layersRun) step(t time.Duration, e layerEvent) {
	r.handle(t, e)
	switch {
	case r.followed >= r.l.MaxCalls:
		r.eng.truncate(BoundMaxCalls)
	case len(r.calls)-len(r.free) >= maxLiveCalls:
		r.eng.truncate(BoundCallsInFlight)
	}
}

// handle runs an event at t: an arrival, an attempt that is due, or a
// timeout that fires, unless its call has ended or moved on.
func (r *layersRun) handle(t time.Duration, e layerEvent) {
	switch e.kind {
	case arrive:
		r.request(t)
		r.scheduleArrival(r.arrival(t))
		return
	case reachBottom:
		r.bottom(t, e)
		return
	}
	c := &r.calls[e.call]
	switch {
	case c.gen != e.gen || c.done:
		// the call ended
	case e.kind == fireTimeout && c.attempt == e.attempt && !c.waiting:
		r.failed(e.call, t, true)
	case e.kind == startAttempt && c.attempt == e.attempt-1:
		r.attempt(e.call, t)
	}
}

// pending reports whether a queued event still has a cause: a timeout
// whose attempt has ended has not.
func (r *layersRun) pending(e layerEvent) bool {
	if e.kind != fireTimeout {
		return true
	}
	c := &r.calls[e.call]
	return c.gen == e.gen && !c.done && c.attempt == e.attempt && !c.waiting
}

// scheduleArrival schedules the next request's arrival at t, when t is
// within the run's Duration.
func (r *layersRun) scheduleArrival(t time.Duration) {
	if t < r.l.Duration {
		r.eng.scheduleFirst(t, layerEvent{kind: arrive})
	}
}

// arrival returns when the request after one at t arrives: past every
// Duration (a day) when the gap is longer than that, as at a tiny Rate.
func (r *layersRun) arrival(t time.Duration) time.Duration {
	gap := 1 / r.l.Rate
	if r.l.Poisson {
		gap = r.rng.ExpFloat64() / r.l.Rate
	}
	if r.r.Requests == 0 && !r.l.Poisson {
		return t // the first at t = 0
	}
	ns := gap * float64(time.Second)
	if !(ns < float64(maxLayersSpan)) {
		return maxDuration
	}
	return t + time.Duration(ns)
}

// request starts a request at the top at t.
func (r *layersRun) request(t time.Duration) {
	r.r.Requests++
	id := r.newCall(layerCall{layer: 0, parent: -1, started: t})
	r.calls[id].arrived = t
	r.attempt(id, t)
}

// newCall makes a call of call's layer, by its parent's attempt, whose
// first attempt starts at call.started; the caller starts it.
func (r *layersRun) newCall(call layerCall) int32 {
	r.followed++
	var id int32
	if n := len(r.free); n > 0 {
		id, r.free = r.free[n-1], r.free[:n-1]
	} else {
		r.calls = append(r.calls, layerCall{})
		id = int32(len(r.calls) - 1)
	}
	call.gen = r.calls[id].gen + 1
	r.calls[id] = call
	if int(call.layer) < len(r.budgets) {
		budgetStart(r.budgets[call.layer], call.started)
	}
	return id
}

// budget returns the layer's budget, nil for none, or the error of its
// settings.
func (l Layer) budget() (*retry.Budget, error) {
	switch {
	case l.BudgetInterval != 0 && l.BudgetBurst != 0:
		return nil, errors.New("a token budget (BudgetBurst) and a windowed one (BudgetInterval): choose one")
	case l.BudgetInterval != 0:
		return l.windowBudget()
	case l.BudgetBurst != 0:
		return l.tokenBudget()
	}
	return nil, nil
}

// attempt starts the next attempt of call id at t: through the breaker,
// down to the layer below (or the bottom) after the hop, with a timeout.
func (r *layersRun) attempt(id int32, t time.Duration) {
	c := &r.calls[id]
	c.attempt++
	c.waiting = false
	c.started = t
	layer := c.layer
	r.r.Attempts[layer]++
	br := &r.breakers[layer]
	if r.chain[layer].BreakerFailures > 0 && t < br.openUntil {
		r.giveUp(id, t, false) // the open breaker: a permanent error
		return
	}
	at := t + r.latency[layer]
	if int(layer) == len(r.chain)-1 {
		r.eng.queue(r.hopQ[layer], at, layerEvent{call: id, gen: c.gen, attempt: c.attempt, kind: reachBottom})
	} else {
		child := r.newCall(layerCall{layer: layer + 1, parent: id, parentGen: c.gen, parentAttempt: c.attempt, started: at})
		r.eng.queue(r.hopQ[layer], at, layerEvent{call: child, gen: r.calls[child].gen, attempt: 1})
	}
	c = &r.calls[id] // newCall may have moved the slice
	if timeout := r.chain[layer].Timeout; timeout > 0 && !c.done {
		r.eng.queue(r.timeoutQ[layer], t+timeout, layerEvent{call: id, gen: c.gen, attempt: c.attempt, kind: fireTimeout})
	}
}

// queuesFor gives the layers' events that come delay(layer) after their
// cause an engine queue for each delay: events a fixed time apart from
// now come in time order whichever layer queued them. It returns each
// layer's queue, -1 for a layer that has no such events (delay's false).
func (r *layersRun) queuesFor(delay func(Layer) (time.Duration, bool)) []int {
	byDelay := map[time.Duration]int{}
	of := make([]int, len(r.chain))
	for i, l := range r.chain {
		d, ok := delay(l)
		if !ok {
			of[i] = -1
			continue
		}
		q, seen := byDelay[d]
		if !seen {
			q = r.eng.newQueue()
			byDelay[d] = q
		}
		of[i] = q
	}
	return of
}

// bottom is the bottom's answer to the last layer's attempt that reaches
// it as e: counted whether or not its caller still waits for it.
func (r *layersRun) bottom(t time.Duration, e layerEvent) {
	r.followed++
	r.r.BottomCalls++
	sec := int(t / time.Second)
	r.r.Load = grow(r.r.Load, sec)
	r.r.Load[sec]++
	ok := (t < r.l.DownAt || t >= r.outageEnd()) && (r.l.Capacity == 0 || r.r.Load[sec] <= r.l.Capacity) && (r.l.FailRate == 0 || r.rng.Float64() >= r.l.FailRate)
	if c := &r.calls[e.call]; c.gen == e.gen && !c.done && c.attempt == e.attempt && !c.waiting {
		r.answer(e.call, t, ok, true)
	}
}

// grow makes s long enough to hold index i.
func grow(s []int, i int) []int {
	if i < len(s) {
		return s
	}
	return append(s, make([]int, i+1-len(s))...)
}

// answer tells call id, at t, how its attempt in flight ended: ok, or a
// failure the layer below reports as retryable or not.
func (r *layersRun) answer(id int32, t time.Duration, ok, retryable bool) {
	c := &r.calls[id]
	if q := r.timeoutQ[c.layer]; q >= 0 {
		r.eng.cancel(q) // the attempt's timeout has nothing left to fire on
	}
	br := &r.breakers[c.layer]
	if ok {
		br.failures = 0
		r.end(id, t, true, false)
		return
	}
	if n := r.chain[c.layer].BreakerFailures; n > 0 {
		if br.failures++; br.failures >= n {
			br.openUntil, br.failures = saturatingAdd(t, cmp.Or(r.chain[c.layer].BreakerOpen, 10*time.Second)), 0
		}
	}
	r.failed(id, t, retryable)
}

// failed decides on the failure at t of call id's attempt in flight: a
// retry at its due time, or the call given up.
func (r *layersRun) failed(id int32, t time.Duration, retryable bool) {
	c := &r.calls[id]
	layer := r.chain[c.layer]
	if !retryable && layer.OnlyRetryable {
		r.giveUp(id, t, false)
		return
	}
	if c.history.History == nil {
		c.history.History = retrypolicy.NewHistory(r.policies[c.layer])
	}
	at := simStart.Add(t)
	d, ok := r.eng.decide(&c.history, at, t-c.started, jobSeed(r.l.Seed, int(id)<<8|int(c.layer)))
	if !ok {
		r.giveUp(id, t, false)
		return
	}
	r.r.Decisions++
	if r.l.onDecide != nil {
		r.l.onDecide(uint64(id)<<32|uint64(c.gen), int(c.layer), at, t-c.started)
	}
	if d.Action == retrypolicy.Fatal {
		r.giveUp(id, t, retryable && c.attempt == 1) // a layer that retried says so
		return
	}
	if !budgetGrant(r.budgets[c.layer], t) {
		r.giveUp(id, t, false) // a budget's refusal speaks for the dependency: it reports, as a layer that retried
		return
	}
	c.waiting = true
	next := t + d.Delay + d.Jitter
	r.eng.schedule(next, layerEvent{call: id, gen: c.gen, attempt: c.attempt + 1})
	if next < saturatingAdd(r.l.Duration, r.l.Horizon) { // within the run: the counts stay within its seconds
		sec := int(next / time.Second)
		r.r.Retries = grow(r.r.Retries, sec)
		r.r.Retries[sec]++
	}
}

// giveUp ends call id at t in failure, retryable or not as seen above.
func (r *layersRun) giveUp(id int32, t time.Duration, retryable bool) {
	r.end(id, t, false, retryable)
}

// end ends call id at t, and tells the call above, or the request.
func (r *layersRun) end(id int32, t time.Duration, ok, retryable bool) {
	c := &r.calls[id]
	c.done = true
	if ok && int(c.layer) < len(r.budgets) {
		budgetDeposit(r.budgets[c.layer]) // it ended well
	}
	if c.history.History != nil {
		r.eng.forget(&c.history)
		c.history.History = nil
	}
	parent, parentGen, parentAttempt, arrived := c.parent, c.parentGen, c.parentAttempt, c.arrived
	r.free = append(r.free, id)
	if parent < 0 {
		r.requestEnded(t, arrived, ok)
		return
	}
	p := &r.calls[parent]
	if p.gen != parentGen || p.done || p.attempt != parentAttempt || p.waiting {
		return // the caller timed out of this attempt, or ended
	}
	r.answer(parent, t, ok, retryable)
}

// requestEnded counts a request that ended at t.
func (r *layersRun) requestEnded(t, arrived time.Duration, ok bool) {
	if !ok {
		r.r.Failed++
		return
	}
	r.r.Succeeded++
	sec := int(t / time.Second)
	r.r.Served = grow(r.r.Served, sec)
	r.r.Served[sec]++
	r.latencies.keep(t-arrived, r.l.Seed)
}

// reservoir keeps latencies: all of the first maxLatencies, then a uniform
// sample of that many (reservoir sampling, drawn from a stream of its own
// so that a run's other draws do not change).
type reservoir struct {
	kept   []time.Duration
	seen   int
	sample *rand.Rand
}

// keep keeps latency v, or not, drawing from a stream of seed's.
func (s *reservoir) keep(v time.Duration, seed uint64) {
	s.seen++
	if len(s.kept) < maxLatencies {
		s.kept = append(s.kept, v)
		return
	}
	if s.sample == nil {
		s.sample = rand.New(rand.NewPCG(seed, 0x6c6174))
	}
	if i := s.sample.IntN(s.seen); i < maxLatencies {
		s.kept[i] = v
	}
}

// result returns the figures, their derived ones computed.
func (r *layersRun) result() LayersResult {
	res := r.r
	if res.Requests > 0 {
		res.Amplification = float64(res.BottomCalls) / float64(res.Requests)
	}
	if r.l.Capacity > 0 {
		for _, n := range res.Load {
			res.PeakLoad = max(res.PeakLoad, float64(n)/float64(r.l.Capacity))
		}
	}
	res.Latency = percentiles(slices.Clone(r.latencies.kept))
	res.Recovery, res.Metastable = r.recovery()
	return res
}

// recovery is how long after the outage the first second came whose load
// was within capacity and that served a request, or -1 and true.
func (r *layersRun) recovery() (time.Duration, bool) {
	end := r.outageEnd()
	from := int(end / time.Second)
	if end%time.Second != 0 {
		from++ // the first whole second after the outage, without overflowing at the longest Down
	}
	for s := from; s < len(r.r.Served); s++ {
		load := 0
		if s < len(r.r.Load) {
			load = r.r.Load[s]
		}
		if r.r.Served[s] > 0 && (r.l.Capacity == 0 || load <= r.l.Capacity) {
			return max(time.Duration(s)*time.Second-end, 0), false
		}
	}
	return -1, true
}

// outageEnd is when the bottom comes back: DownAt plus Down, saturating.
func (r *layersRun) outageEnd() time.Duration { return saturatingAdd(r.l.DownAt, r.l.Down) }

// Chain is a named call chain, one way of retrying across layers.
type Chain struct {
	Name   string
	Layers []Layer
}

// DocumentedChains are the four ways of the general retry rules through
// the chain of four layers (DefaultLayers): every layer retrying 3 times; only the
// client retrying; every layer retrying within a budget of 10% (burst 10);
// and only the client retrying, behind a circuit breaker that opens for
// 10 s after 5 failures in a row.
func DocumentedChains() []Chain {
	every := DefaultLayers(3)
	client := DefaultLayers(3)
	for i := 1; i < len(client); i++ {
		client[i].Strategy = retrypolicy.Strategy{Kind: retrypolicy.None}
	}
	budget := DefaultLayers(3)
	for i := range budget {
		budget[i].BudgetRatio, budget[i].BudgetBurst = retry.DefaultBudgetRatio, retry.DefaultBudgetBurst
	}
	breaker := slices.Clone(client)
	breaker[0].BreakerFailures, breaker[0].BreakerOpen = 5, 10*time.Second
	return []Chain{{"every-layer", every}, {"client-only", client}, {"budget-10pct", budget}, {"client-breaker", breaker}}
}
