package retry

import (
	"cmp"
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/retrypolicy/retrypolicy"
)

// Hedging is how a loop hedges a call: when an attempt has not answered
// within a delay, another attempt of the same call is sent while the first
// is still outstanding, and the first answer that ends the call wins. A
// retry answers a failure; a hedge answers slowness.
//
// Give it to a loop with WithHedging, and call the loop's hedging entry
// points, Hedge and Loop.Hedge (Do and Loop.Do never hedge).
type Hedging struct {
	// Attempts is the most attempts a call sends in all, the first
	// included: 2 to MaxHedgeAttempts; 0 means 2.
	Attempts int
	// Delay is the time after the last send at which the next attempt is
	// sent: required, positive. With a Quantile, it serves until the loop
	// has seen HedgeWarmup samples.
	Delay time.Duration
	// Quantile, when not 0, makes the delay follow the latency: that
	// quantile, in (0, 1), of the latencies of the loop's recent calls
	// (the last HedgeSamples; a latency is the time from an attempt's send
	// to its answer, for an attempt that ended the call or failed with an
	// answer; neither a loser nor a timeout is one). Only a loop that lives
	// across calls keeps them (New): Hedge refuses a Quantile.
	Quantile float64
	// MinDelay is the least a following delay is: 1 ms when 0.
	MinDelay time.Duration
	// MaxDelay is the most a following delay is: no bound when 0.
	MaxDelay time.Duration
}

// MaxHedgeAttempts is the most attempts a hedged call sends in all.
const MaxHedgeAttempts = 5

// HedgeWarmup is how many latencies a loop sees before a following delay
// (Hedging.Quantile) replaces Hedging.Delay.
const HedgeWarmup = 20

// HedgeSamples is how many recent latencies a loop keeps for a following
// delay: a fixed array, so that its memory is bounded and a call
// allocates nothing for it.
const HedgeSamples = 64

// defaultMinDelay is a following delay's floor when Hedging.MinDelay is 0.
const defaultMinDelay = time.Millisecond

// check returns why h is invalid, "" when it is valid.
func (h Hedging) check() string {
	switch {
	case h.Attempts != 0 && (h.Attempts < 2 || h.Attempts > MaxHedgeAttempts):
		return "Attempts must be 0 (meaning 2) or from 2 to " + strconv.Itoa(MaxHedgeAttempts) + ", got " + strconv.Itoa(h.Attempts)
	case h.Delay <= 0:
		return "Delay must be positive, got " + h.Delay.String()
	case h.Quantile != 0 && !(h.Quantile > 0 && h.Quantile < 1):
		return "Quantile must be 0 or in (0, 1), got " + strconv.FormatFloat(h.Quantile, 'g', -1, 64)
	case h.MinDelay < 0 || h.MaxDelay < 0:
		return "MinDelay and MaxDelay must not be negative"
	case h.MaxDelay > 0 && h.MaxDelay < h.MinDelay:
		return "MaxDelay " + h.MaxDelay.String() + " is below MinDelay " + h.MinDelay.String()
	}
	return ""
}

// hedging is a loop's hedging: its settings, and the samples of a
// following delay (nil for a fixed one, or until a loop is made).
type hedging struct {
	Hedging
	samples *sketch
}

// WithHedging makes a loop hedge its calls as h says, through its hedging
// entry points, Hedge and Loop.Hedge, and a retryhttp transport or a
// retrygrpc unary interceptor for the calls they hedge; Do and Loop.Do
// refuse it. An invalid h is refused where the loop is built (New, an
// adapter's constructor) or by Hedge before the first attempt.
//
// A hedged call sends its first attempt at once; while no attempt has
// ended the call and fewer than h.Attempts were sent, it sends the next
// when the delay has passed since the last send, or at once when an
// outstanding attempt fails transiently, but never one due past the
// context's deadline. The first attempt that ends the call wins: a
// success, or an answer the loop would not retry (an error marked
// Permanent, a status or code not retried), so a fast 404 beats a slower
// success. The others are cancelled and waited for, and a loser's value
// that is an io.Closer (and came with a nil error) is closed: no attempt
// outlives the call.
//
// Hedging replaces retrying for the call: no backoff between attempts, at
// most h.Attempts in all. The strategy None never hedges (one attempt);
// Bounded's MaxAttempts caps h.Attempts; UnlessStopped sends at most
// h.Attempts. Every attempt after the first withdraws a token from the
// loop's budget (WithBudget) before it is sent, as a retry does; a budget
// that refuses stops new attempts and never cancels one in flight. The
// call deposits once when it ends well, whichever attempt won.
//
// A server's word on an attempt: a wait asked within the loop's limit
// (WithWaitLimit) delays the next attempt to no sooner than asked; a wait
// beyond it stops the call's hedging, which gives up RetryAfterTooLong
// (Deferred in a queue's job) unless an outstanding attempt wins. An
// error marked PermanentFailure (a server's refusal: do not retry,
// overloaded, a negative pushback), or an attempt retried below, stops
// new attempts too, and the call waits for the outstanding ones: one may
// still win; if none does, it gives up NotRetryable or RetriedBelow.
// Giving up, the reasons are checked in this order: the context done, a
// refusal (NotRetryable), RetriedBelow, RetryAfterTooLong or Deferred,
// BudgetExhausted, PastDeadline (the next attempt was due past the
// deadline), AttemptsExhausted; the error is the last attempt's to fail.
// A loser counts nowhere: not in the failures, the budget or a window.
//
// A loop running inside a hedged call's attempt does not hedge (its
// attempt's context says so), so that nested hedging never multiplies.
func WithHedging(h Hedging) Option {
	// Checked and made once, here, not each time the option is applied
	// (retry.Hedge applies its options on every call): the configurations
	// share it, and only read it (a loop's samples are its own, forLoop).
	why, hg := h.check(), &hedging{Hedging: h}
	return loopOption("WithHedging", kindHedging, func(c config) config {
		if why != "" {
			return c.refuse("WithHedging", why)
		}
		c.hedge = hg
		return c
	})
}

// forLoop returns the hedging of a loop that lives across calls: with
// samples of its own when its delay follows the latency.
func (h *hedging) forLoop() *hedging {
	if h == nil || h.Quantile == 0 {
		return h
	}
	return &hedging{Hedging: h.Hedging, samples: &sketch{}}
}

// most returns the most attempts a call of strategy s sends: none never
// hedges, and bounded's MaxAttempts caps Attempts.
func (h *hedging) most(s *retrypolicy.Strategy) int {
	n := h.Attempts
	if n == 0 {
		n = 2
	}
	switch s.Kind {
	case retrypolicy.None:
		return 1
	case retrypolicy.Bounded:
		return min(n, s.MaxAttempts)
	}
	return n
}

// delay returns the time after a send at which the next is due: the
// samples' quantile within MinDelay and MaxDelay once there are enough,
// else Delay.
func (h *hedging) delay() time.Duration {
	if h.samples == nil {
		return h.Delay
	}
	q, ok := h.samples.quantile(h.Quantile)
	if !ok {
		return h.Delay
	}
	q = max(q, cmp.Or(h.MinDelay, defaultMinDelay))
	if h.MaxDelay > 0 {
		q = min(q, h.MaxDelay)
	}
	return q
}

// sketch keeps a loop's most recent latencies, HedgeSamples of them, and
// the quantile asked of them, computed again after every few new ones.
type sketch struct {
	mu     sync.Mutex
	ring   [HedgeSamples]time.Duration
	next   int           // where the next sample goes
	seen   int           // samples seen, up to HedgeSamples
	stale  int           // samples since the quantile was computed
	q      time.Duration // the quantile, as computed
	valid  bool          // q was computed
	qAsked float64       // the quantile q is
}

// sketchRefresh is how many new samples make the quantile computed again.
const sketchRefresh = 4

// add records a latency.
func (s *sketch) add(d time.Duration) {
	s.mu.Lock()
	s.ring[s.next] = d
	s.next = (s.next + 1) % HedgeSamples
	s.seen = min(s.seen+1, HedgeSamples)
	s.stale++
	s.mu.Unlock()
}

// quantile returns the q-quantile (nearest rank) of the samples kept, and
// false until HedgeWarmup were seen.
func (s *sketch) quantile(q float64) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen < HedgeWarmup {
		return 0, false
	}
	if !s.valid || s.stale >= sketchRefresh || s.qAsked != q {
		var sorted [HedgeSamples]time.Duration
		n := copy(sorted[:], s.ring[:s.seen])
		slices.Sort(sorted[:n])
		rank := int(q*float64(n)+0.999999999) - 1 // ceil(q n), 1-based
		s.q, s.valid, s.stale, s.qAsked = sorted[min(max(rank, 0), n-1)], true, 0, q
	}
	return s.q, true
}

// hedgingKey is the context key that says a hedged call's attempt runs:
// a loop under it does not hedge.
type hedgingKey struct{}

// InHedge reports whether ctx runs inside an attempt of a hedged call, where
// a loop does not hedge: an adapter that hedges by other means asks.
func InHedge(ctx context.Context) bool { return ctx.Value(hedgingKey{}) != nil }

// errHedgeInDo is Do's and Loop.Do's refusal of WithHedging.
var errHedgeInDo = optionError("retry.WithHedging: Do never hedges, so that its op never runs twice at once; call retry.Hedge (or Loop.Hedge)")

// Hedge calls op as Do does, hedging as WithHedging, which it requires,
// says: op may run more than once at once, each under a context of its
// own, and must return once its context ends. Hedge keeps nothing between
// calls, so it refuses a Hedging.Quantile (a Loop made with New keeps the
// samples a following delay needs). Its errors are Do's: an invalid
// strategy or option is refused before op is called.
//
// The loop's observers see each attempt after the first as it is sent, an
// Event with Hedge true, and may be called from the goroutine of another
// call at the same time; its End counts every attempt sent, says how many
// were hedges and whether one of them won.
func Hedge[T any](ctx context.Context, s retrypolicy.Strategy, op func(context.Context) (T, error), opts ...Option) (T, error) {
	var zero T
	if err := s.Validate(); err != nil {
		return zero, err
	}
	cfg, err := apply(opts)
	if err != nil {
		return zero, err
	}
	switch {
	case cfg.hedge == nil:
		return zero, optionError("retry.Hedge: needs retry.WithHedging")
	case cfg.hedge.Quantile != 0:
		return zero, optionError("retry.Hedge: retry.WithHedging's Quantile needs the samples of a loop that lives across calls; use retry.New and Loop.Hedge, or a fixed Delay")
	}
	l := Loop[T]{s: s, cfg: cfg} // the call's, on its stack (the race copies s)
	return l.hedge(ctx, op)
}

// Hedge calls op as the package's Hedge does, under the loop's strategy
// and options, which must include WithHedging; with a following delay,
// the loop's recent latencies set it.
func (l *Loop[T]) Hedge(ctx context.Context, op func(context.Context) (T, error)) (T, error) {
	if l.cfg.hedge == nil {
		var zero T
		return zero, optionError("retry: Loop.Hedge needs a loop made with retry.WithHedging")
	}
	return l.hedge(ctx, op)
}

// reports reports whether a loop that gave up with g reports to the layer
// it runs under: after more than one attempt, or for RetriedBelow, Deferred
// or BudgetExhausted (unless a server's wait beyond the limit ended it).
func (c *config) reports(g *GiveUpError) bool {
	return g != nil && (c.calls > 1 || !c.quiet && (g.Reason == RetriedBelow || g.Reason == Deferred || g.Reason == BudgetExhausted || g.Reason == Throttled))
}

// hedge is Hedge under the loop's valid strategy and configuration: a
// call that may not hedge (none, or inside a hedged call's attempt) is
// Do's.
func (l *Loop[T]) hedge(ctx context.Context, op func(context.Context) (T, error)) (T, error) {
	s, cfg := &l.s, l.cfg // the call's configuration, on its stack
	most := cfg.hedge.most(s)
	if most < 2 || InHedge(ctx) {
		return call(ctx, s, &cfg, op)
	}
	up := enclosingOf(ctx)
	var begin time.Time
	if cfg.end != nil {
		begin = time.Now()
	}
	if cfg.begin != nil {
		ctx = cfg.begin(ctx)
	}
	// The race holds the call's strategy and configuration by value, the
	// first attempt's context, and is itself its attempts' parent context:
	// a call answered before its delay allocates this one object, and the
	// delay's timer.
	r := &race[T]{ctx: ctx, s: *s, cfg: cfg, op: op, most: most}
	v, err := r.run()
	gaveUp, _ := err.(*GiveUpError)
	if r.cfg.reports(gaveUp) {
		gaveUp.reported = true
		if up != nil {
			up.report()
		}
	}
	if cfg.end != nil {
		cfg.end(End{Attempts: r.cfg.calls, GaveUp: gaveUp, Took: time.Since(begin), Context: ctx, Hedges: max(r.sent-1, 0), HedgeWon: r.hedgeWon, HiddenResends: r.cfg.hiddenResends, HiddenSeen: r.cfg.hiddenSeen})
	}
	return v, err
}

// answer is what one attempt of a hedged call returned.
type answer[T any] struct {
	i     int // the attempt, from 0
	v     T
	err   error
	below bool      // the attempt was retried below
	at    time.Time // when it returned, for a failure or a sample (ended)
	// hidden counts the attempt's hidden resends, and watched says its
	// adapter saw them (see HiddenResend).
	hidden  int32
	watched bool
}

// ended ends attempt i, whose context is a and which returned v and err:
// its answer. The moment it returned is read only when it is used: a
// failure's next attempt, a following delay's sample; so a call answered
// in time without a following delay reads the clock once, at its send.
func (r *race[T]) ended(i int, a *attemptCtx, v T, err error) answer[T] {
	below := a.end()
	a.cancel()
	got := answer[T]{i: i, v: v, err: err, below: below, hidden: a.hidden.n.Load(), watched: a.hidden.watched.Load()}
	if err != nil || r.cfg.hedge.samples != nil {
		got.at = time.Now()
	}
	return got
}

// count adds an attempt's hidden resends to the call's.
func (c *config) count(hidden int32, watched bool) {
	c.hiddenResends += int(hidden)
	c.hiddenSeen = c.hiddenSeen || watched
}

// race is one hedged call: its attempts, and what stops more of them.
type race[T any] struct {
	ctx  context.Context // the call's, as WithStart made it
	s    retrypolicy.Strategy
	cfg  config
	op   func(context.Context) (T, error)
	most int

	// done carries the attempts' answers to whoever runs rest. It is made
	// only once a second attempt may exist (results): a call answered in
	// time has none. Room for every attempt: an attempt never blocks.
	done chan answer[T]
	// mu guards done's making, and the first attempt's hand-in once the
	// delay passed (handIn): over says the call ended (end), handed that
	// the first attempt's answer is in done.
	mu sync.Mutex
	// first is the first attempt's context, in the race so that it costs
	// no allocation of its own.
	first attemptCtx

	live [MaxHedgeAttempts]*attemptCtx // the outstanding attempts' contexts
	// start is the first send, and sentAt each send's time after it:
	// durations, not times, for the state's size (its bytes are most of
	// what a call answered in time costs).
	start  time.Time
	sentAt [MaxHedgeAttempts]time.Duration
	sent   int       // attempts sent
	open   int       // attempts outstanding
	due    time.Time // when the next attempt is due
	after  time.Time // a server's wait: no attempt sooner
	failAt time.Time // when the last failure returned

	failures int
	lastErr  error         // the last failure, its marks unwrapped
	asked    time.Duration // a server's wait beyond the limit (tooLong)

	// The flags, side by side for the state's size.
	over     bool // the call ended (end; under mu)
	handed   bool // the first attempt's answer is in done (handIn; under mu)
	hedgeWon bool // a hedge's answer ended the call
	refusal  bool // a server refused, or op was cancelled: NotRetryable
	below    bool // an attempt was retried below
	tooLong  bool // a server asked a wait beyond the limit
	spent    bool // the budget refused a hedge
	deadline bool // the next attempt was due past the deadline
	atOnce   bool // the last failure (lastErr) made the next attempt due at once

	coordinator sync.WaitGroup // a coordinator took the call over (takeOver)
	v           T              // the coordinator's outcome
	err         error
}

// Deadline, Done and Err are the call's context's: a race is its
// attempts' parent context, which says that a hedged call runs.
func (r *race[T]) Deadline() (time.Time, bool) { return r.ctx.Deadline() }

// Done returns the call's context's Done.
func (r *race[T]) Done() <-chan struct{} { return r.ctx.Done() }

// Err returns the call's context's Err.
func (r *race[T]) Err() error { return r.ctx.Err() }

// Value says that a hedged call runs (InHedge), and asks the call's
// context for any other key.
func (r *race[T]) Value(key any) any {
	if key == (hedgingKey{}) {
		return true
	}
	return r.ctx.Value(key)
}

// run sends the attempts and returns the first answer that ends the call,
// or why it gave up, once no attempt is outstanding.
func (r *race[T]) run() (T, error) {
	var zero T
	if gu := r.cfg.admit(r.ctx); gu != nil { // the throttle, then the budget's start
		return zero, gu
	}
	if err := r.ctx.Err(); err != nil {
		return zero, &GiveUpError{Reason: ContextDone, Err: context.Cause(r.ctx)}
	}
	if v, err, over := r.runFirst(); over {
		return v, err
	}
	return r.rest()
}

// runFirst runs the first attempt on the caller's goroutine, under a
// timer that hands the call to a coordinator of its own (takeOver) when
// the delay passes first: a call answered in time starts no goroutine and
// makes no channel. It is over when the call ended; else (the attempt
// failed transiently, nothing else sent) the caller goes on with rest.
func (r *race[T]) runFirst() (v T, err error, over bool) {
	now := time.Now()
	a := r.track(now)
	var timer *time.Timer
	if r.mayHedge() {
		r.coordinator.Add(1)
		timer = time.AfterFunc(r.due.Sub(now), r.takeOver)
	}
	v, err = r.op(a)
	got := r.ended(0, a, v, err)
	if timer == nil {
		return r.answer(got)
	}
	if timer.Stop() {
		r.coordinator.Done() // it never ran: the call is the caller's still
		return r.answer(got)
	}
	loser := !r.handIn(got)
	r.coordinator.Wait()
	if loser { // the call ended without it: the caller's to put away
		r.lost(got)
	}
	return r.v, r.err, true
}

// handIn hands the first attempt's answer to the coordinator, unless the
// coordinator already ended the call without it (end): then the first
// attempt is a loser the caller puts away, so that the coordinator need
// not wait for it, nor the caller for the coordinator to take it in.
func (r *race[T]) handIn(got answer[T]) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.over {
		return false
	}
	r.results() <- got
	r.handed = true
	return true
}

// results returns the channel of the attempts' answers, made by whoever
// needs it first: the coordinator, or the first attempt handing in.
func (r *race[T]) results() chan answer[T] {
	if r.done == nil {
		r.done = make(chan answer[T], r.most)
	}
	return r.done
}

// takeOver runs the call from the first attempt's delay on, while the
// first attempt runs on the caller's goroutine, which hands its answer in
// (handIn) and waits for the outcome.
func (r *race[T]) takeOver() {
	r.v, r.err = r.rest()
	r.coordinator.Done()
}

// rest sends the attempts after the first, and returns the first answer
// that ends the call, or why it gave up, once no attempt is outstanding.
func (r *race[T]) rest() (T, error) {
	r.mu.Lock()
	r.results()
	r.mu.Unlock()
	var wake *time.Timer // the next attempt's due time (untilDue)
	for {
		if v, err, over := r.step(&wake); over {
			if wake != nil {
				wake.Stop()
			}
			r.end()
			return v, err
		}
	}
}

// step sends the next attempt when it is due, or waits for an answer, the
// next attempt's due time, or the context's end; over when the call ended.
func (r *race[T]) step(wake **time.Timer) (v T, err error, over bool) {
	now := time.Now()
	if r.mayHedge() && !r.due.After(now) {
		r.send(now)
	}
	if r.open == 0 && !r.mayHedge() {
		v, err = r.giveUp()
		return v, err, true
	}
	select {
	case a := <-r.done:
		return r.answer(a)
	case <-r.untilDue(now, wake):
		return v, nil, false
	case <-r.ctx.Done():
		return v, &GiveUpError{Reason: ContextDone, Failures: r.failures, Err: errors.Join(context.Cause(r.ctx), r.lastErr)}, true
	}
}

// untilDue returns a channel that receives when the next attempt is due,
// or nil (never) when none may be sent. It makes *wake the first time one
// is due later, so that a call whose last attempt was sent (a second of
// two, the default) makes no timer, and resets it after; rest stops it.
func (r *race[T]) untilDue(now time.Time, wake **time.Timer) <-chan time.Time {
	if !r.mayHedge() {
		if *wake != nil {
			(*wake).Stop()
		}
		return nil
	}
	if *wake == nil {
		*wake = time.NewTimer(r.due.Sub(now))
	} else {
		(*wake).Reset(r.due.Sub(now))
	}
	return (*wake).C
}

// mayHedge reports whether another attempt may be sent: nothing stopped
// hedging, fewer than the most were sent, and the next is not due past
// the deadline.
func (r *race[T]) mayHedge() bool {
	if r.sent >= r.most || r.refusal || r.below || r.tooLong || r.spent {
		return false
	}
	r.due = maxTime(r.due, r.after)
	if d, ok := r.ctx.Deadline(); ok && !r.due.Before(d) {
		r.deadline = true
		return false
	}
	r.deadline = false
	return true
}

// maxTime returns the later of a and b.
func maxTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return b
	}
	return a
}

// send sends the next attempt, a hedge withdrawing from the budget first
// and told to the observers.
func (r *race[T]) send(now time.Time) {
	i := r.sent
	if i > 0 {
		if r.cfg.budget != nil && !r.cfg.budget.Withdraw() {
			r.spent = true
			return
		}
		if r.cfg.observe != nil {
			var wait time.Duration // 0 when a failure sent it at once
			var sentIt error       // that failure
			if r.atOnce {
				sentIt = r.lastErr
			}
			if !r.atOnce || r.due.After(r.failAt) {
				wait = now.Sub(r.start) - r.sentAt[i-1] // since the last send
			}
			r.cfg.observe(Event{Hedge: true, Failures: r.failures, Err: sentIt, Wait: wait, Wake: now, Context: r.ctx})
		}
	}
	go r.attempt(i, r.track(now))
}

// track records the next attempt, sent at now, and returns its context.
func (r *race[T]) track(now time.Time) *attemptCtx {
	i := r.sent
	var a *attemptCtx
	if i == 0 {
		a = r.cfg.startAttemptIn(&r.first, r, r.failures)
	} else {
		a = r.cfg.startAttempt(r, r.failures)
	}
	if r.cfg.attemptTimeout > 0 {
		a.limit(r.cfg.attemptTimeout)
	}
	if i == 0 {
		r.start = now
	}
	r.live[i], r.sentAt[i] = a, now.Sub(r.start)
	r.sent++
	r.open++
	r.cfg.sent() // a request for the throttle after the first
	r.atOnce = false
	r.due = now.Add(r.cfg.hedge.delay())
	return a
}

// attempt runs op under its attempt's context and hands its answer over.
func (r *race[T]) attempt(i int, a *attemptCtx) {
	v, err := r.op(a)
	r.done <- r.ended(i, a, v, err)
}

// answer takes an attempt's answer: over, with the call's result, when it
// ends the call; else what it says about the next attempt.
func (r *race[T]) answer(a answer[T]) (v T, err error, over bool) {
	r.open--
	r.live[a.i] = nil
	r.cfg.count(a.hidden, a.watched)
	if a.err == nil {
		r.sample(a)
		r.won(a.i)
		return a.v, nil, true
	}
	if r.ctx.Err() != nil {
		return v, &GiveUpError{Reason: ContextDone, Failures: r.failures + 1, Err: errors.Join(context.Cause(r.ctx), unwrapMarks(a.err))}, true
	}
	r.failures++
	m := ReadMarks(a.err)
	r.lastErr = unwrapMarks(a.err)
	if m.marked != nil && !m.Failure {
		r.lastErr = m.marked
	}
	if !m.Failure && !m.Canceled && !m.DeadlineExceeded && (m.Permanent || r.cfg.permanent != nil && r.cfg.permanent(a.err)) {
		r.sample(a) // an answer not retried: it ends the call
		r.won(a.i)
		return v, &GiveUpError{Reason: NotRetryable, Failures: r.failures, Err: r.lastErr}, true
	}
	if !m.Canceled && !m.DeadlineExceeded {
		r.sample(a) // a failure with an answer
	}
	r.failed(a, &m)
	return v, nil, false
}

// failed takes a transient failure's word on the next attempt: due at
// once, no sooner than a server asked, or not at all.
func (r *race[T]) failed(a answer[T], m *Marks) {
	switch {
	case m.Permanent || m.Canceled:
		r.refusal = true
	case a.below && !r.cfg.nested:
		r.below = true
	}
	if asked, ok := m.Wait(); ok && asked > 0 {
		if r.cfg.policy == nil && r.cfg.waitLimit == 0 {
			r.cfg.policy, _ = retrypolicy.Compile(r.s) // s was validated
		}
		if asked > r.cfg.limit() {
			r.tooLong, r.asked, r.cfg.quiet = true, max(r.asked, asked), true
		} else {
			r.after = maxTime(r.after, a.at.Add(asked))
		}
	}
	r.due, r.atOnce, r.failAt = a.at, true, a.at
}

// won records that attempt i ended the call, which ended well.
func (r *race[T]) won(i int) {
	r.hedgeWon = i > 0
	r.cfg.endedWell()
}

// sample records attempt a's latency for a following delay.
func (r *race[T]) sample(a answer[T]) {
	if s := r.cfg.hedge.samples; s != nil {
		s.add(a.at.Sub(r.start) - r.sentAt[a.i])
	}
}

// giveUp returns why the call gave up, no attempt outstanding and none to
// send, in the order of the reasons.
func (r *race[T]) giveUp() (T, error) {
	var zero T
	g := &GiveUpError{Failures: r.failures, Err: r.lastErr}
	switch {
	case r.ctx.Err() != nil:
		g.Reason, g.Err = ContextDone, errors.Join(context.Cause(r.ctx), r.lastErr)
	case r.refusal:
		g.Reason = NotRetryable
	case r.below:
		g.Reason = RetriedBelow
	case r.tooLong:
		g.Reason, g.Wait = RetryAfterTooLong, r.asked
		if _, ok := deferAfter(r.ctx); ok {
			g.Reason = Deferred
		}
	case r.spent:
		g.Reason = BudgetExhausted
	case r.deadline && r.sent < r.most:
		g.Reason = PastDeadline
	default:
		g.Reason = AttemptsExhausted
	}
	return zero, g
}

// end cancels the outstanding attempts, the losers, and waits for each to
// return, putting it away (lost). A first attempt still running on the
// caller's goroutine and not handed in is left to the caller, which
// returns only after it anyway (runFirst): the coordinator need not wait.
func (r *race[T]) end() {
	for _, a := range r.live {
		if a != nil {
			a.cancel()
		}
	}
	r.mu.Lock()
	r.over = true
	if r.live[0] != nil && !r.handed {
		r.open--
	}
	r.mu.Unlock()
	for ; r.open > 0; r.open-- {
		r.lost(<-r.done)
	}
}

// lost puts a loser away: its hidden resends counted, its value closed
// when it is an io.Closer.
func (r *race[T]) lost(a answer[T]) {
	r.cfg.count(a.hidden, a.watched)
	if c, ok := any(a.v).(io.Closer); ok && a.err == nil {
		_ = c.Close()
	}
}

// IsHedging reports whether o is WithHedging: an adapter that hedges some
// calls and not others builds a loop without it for the others, whose Do
// refuses it.
func (o Option) IsHedging() bool { return o.kind == kindHedging }
