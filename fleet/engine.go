package fleet

import (
	"context"
	"fmt"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/tick"
)

// Bound names the bound that cut a simulation short.
type Bound string

// The bounds a simulation can stop at. The first three are the
// simulations' own options; the others hold every simulation alike,
// whatever its options.
const (
	// BoundMaxRuns is an Outage's MaxRuns runs.
	BoundMaxRuns Bound = "MaxRuns"
	// BoundMaxMessages is a Contention's MaxMessages messages.
	BoundMaxMessages Bound = "MaxMessages"
	// BoundMaxCalls is a Layers run's MaxCalls calls.
	BoundMaxCalls Bound = "MaxCalls"
	// BoundEvents is a run's budget of events of every kind: attempts,
	// hops, timeouts and arrivals. It is [EventsPerCall] times a Layers
	// run's MaxCalls; an Outage's runs and a Contention's messages are its
	// events, so for them it is MaxRuns and MaxMessages.
	BoundEvents Bound = "events"
	// BoundPendingEvents is [MaxPendingEvents] events waiting at once.
	BoundPendingEvents Bound = "pending events"
	// BoundJobFailures is [MaxJobFailures] failures in one History.
	BoundJobFailures Bound = "MaxJobFailures"
	// BoundHeldFailures is [MaxHeldFailures] failures in all the run's
	// Histories together.
	BoundHeldFailures Bound = "held failures"
	// BoundCallsInFlight is [MaxCallsInFlight] calls of a Layers run in
	// flight at once.
	BoundCallsInFlight Bound = "calls in flight"
	// BoundContext is the run's context, done.
	BoundContext Bound = "context"
)

// The bounds every simulation is held to by the engine that runs it.
const (
	// EventsPerCall is how many events a Layers run may handle for each
	// call its MaxCalls allows: an attempt makes a call and at most a
	// timeout and a retry beside it, so a run that reaches no other bound
	// stays well within it.
	EventsPerCall = 4
	// MaxPendingEvents is the most events a simulation holds waiting at
	// once (32 bytes each, or 24 for an Outage's runs).
	MaxPendingEvents = 2_000_000
	// MaxHeldFailures is the most failures a simulation's Histories hold
	// together (8 bytes each).
	MaxHeldFailures = 10_000_000
)

// checkEvery is how many events a simulation runs between looks at its
// context: often enough to stop within a millisecond or two, rarely enough
// to cost nothing.
const checkEvery = 4096

// engine is the one event loop of every fleet simulation. It holds the
// events waiting, in time order, and hands them out one at a time; it
// counts every event it hands out against a budget, caps the events
// waiting at once and the failures the simulation's Histories hold, looks
// at the context every checkEvery events, and remembers the bound that
// stopped the run. A simulation schedules through it and asks it for the
// next event, so it cannot forget a bound. An engine is used by one
// goroutine.
//
// Events whose delay varies go on a 4-ary min-heap; events that come a
// fixed time after their cause (a hop, a timeout) come in time order and
// go on a FIFO queue of that delay. Ties are broken by the order the
// events were scheduled when fifoTies is set, and otherwise left in the
// heap's own order, fixed by its pushes and pops: the same on every
// machine either way.
type engine[E any] struct {
	heap     []entry[E]
	queues   []fifo[E]
	fifoTies bool
	seq      uint64
	pending  int // entries held, cancelled ones not yet dropped included
	handled  int
	budget   int
	onBudget Bound
	held     int // failures in the simulation's Histories
	stop     Bound
	// The caps on what waits and what is held, and the most of each the
	// run has had at once.
	maxPending, maxHeld   int
	peakPending, peakHeld int
	err                   error
	// alive, when set, tells a cancelled entry of a queue from a live one,
	// so that cancelled entries can be dropped before they are due.
	alive func(E) bool
}

// entry is an event and when it happens.
type entry[E any] struct {
	at  time.Duration // from t = 0
	seq uint64
	ev  E
}

// fifo is a queue of entries in time order, and the count of those
// cancelled since it was last compacted.
type fifo[E any] struct {
	buf  []entry[E]
	head int
	dead int
}

// newEngine returns an engine that hands out at most budget events, then
// stops the run at the bound named onBudget.
func newEngine[E any](budget int, onBudget Bound) *engine[E] {
	return &engine[E]{budget: budget, onBudget: onBudget, maxPending: MaxPendingEvents, maxHeld: MaxHeldFailures}
}

// less orders entries by time, then by the order they were scheduled.
func less[E any](a, b *entry[E]) bool {
	return a.at < b.at || a.at == b.at && a.seq < b.seq
}

// truncate stops the run at bound b, unless it has stopped already.
func (e *engine[E]) truncate(b Bound) {
	if e.stop == "" {
		e.stop = b
	}
}

// room reports whether one more event may wait, and stops the run when it
// may not: the event is then dropped.
func (e *engine[E]) room() bool {
	if e.pending >= e.maxPending {
		e.truncate(BoundPendingEvents)
		return false
	}
	e.pending++
	e.peakPending = max(e.peakPending, e.pending)
	return true
}

// stamp returns the order of an event scheduled now.
func (e *engine[E]) stamp() uint64 {
	if !e.fifoTies {
		return 0
	}
	e.seq++
	return e.seq
}

// schedule puts ev on the heap, at at.
func (e *engine[E]) schedule(at time.Duration, ev E) {
	if e.room() {
		e.push(entry[E]{at: at, seq: e.stamp(), ev: ev})
	}
}

// scheduleFirst puts ev on the heap at at, before every other event at
// that instant: a source's next arrival, of which one waits at a time.
func (e *engine[E]) scheduleFirst(at time.Duration, ev E) {
	if e.room() {
		e.push(entry[E]{at: at, ev: ev})
	}
}

// seed puts evs on the heap at once, at the times at(i) gives: the first
// events of a run, in the heap's own order.
func (e *engine[E]) seed(n int, at func(i int) (time.Duration, E)) {
	for i := range n {
		if !e.room() {
			return
		}
		t, ev := at(i)
		e.heap = append(e.heap, entry[E]{at: t, seq: e.stamp(), ev: ev})
	}
	if len(e.heap) < 2 {
		return // nothing to order (and (0-2)/4 is 0 in Go)
	}
	for i := (len(e.heap) - 2) / 4; i >= 0; i-- {
		e.down(i)
	}
}

// newQueue returns a new FIFO queue, for events that come a fixed time
// after their cause.
func (e *engine[E]) newQueue() int {
	e.queues = append(e.queues, fifo[E]{})
	return len(e.queues) - 1
}

// queue puts ev on queue q at at, which is no earlier than the queue's
// last.
func (e *engine[E]) queue(q int, at time.Duration, ev E) {
	if e.room() {
		e.queues[q].buf = append(e.queues[q].buf, entry[E]{at: at, seq: e.stamp(), ev: ev})
	}
}

// cancel says that one entry of queue q will find its cause gone when it
// is due: once they are many, the cancelled entries are dropped, so that
// what waits stays within a small multiple of what is live.
func (e *engine[E]) cancel(q int) {
	f := &e.queues[q]
	f.dead++
	if e.alive == nil || f.dead < 1024 || f.dead < (len(f.buf)-f.head)/2 {
		return
	}
	kept := f.buf[:0]
	for _, en := range f.buf[f.head:] {
		if e.alive(en.ev) {
			kept = append(kept, en)
		}
	}
	e.pending -= len(f.buf) - f.head - len(kept)
	clear(f.buf[len(kept):])
	f.buf, f.head, f.dead = kept, 0, 0
}

// run hands each event due at or before end to step, in time order, until
// none is left or a bound stops the run; it returns the bound (none when
// the run ended), and an error when the context stopped it.
func (e *engine[E]) run(ctx context.Context, end time.Duration, step func(at time.Duration, ev E)) (Bound, error) {
	for {
		en, ok := e.nextBy(ctx, end)
		if !ok {
			return e.stop, e.err
		}
		step(en.at, en.ev)
	}
}

// waiting returns how many events wait.
func (e *engine[E]) waiting() int { return e.pending }

// nextBy returns the earliest event due at or before end, and false when
// none is, or when the run has stopped at a bound (stop) or its context
// is done (err).
func (e *engine[E]) nextBy(ctx context.Context, end time.Duration) (entry[E], bool) {
	q, ok := e.earliest()
	switch {
	case e.stop != "":
		return entry[E]{}, false
	case !ok || e.head(q).at > end:
		return entry[E]{}, false
	case e.handled >= e.budget:
		e.truncate(e.onBudget)
		return entry[E]{}, false
	case e.handled%checkEvery == 0 && ctx.Err() != nil:
		e.truncate(BoundContext)
		e.err = fmt.Errorf("stopped after %d events: %w", e.handled, ctx.Err())
		return entry[E]{}, false
	}
	e.handled++
	e.pending--
	return e.take(q), true
}

// maxDuration is the longest time.Duration: no end.
const maxDuration = time.Duration(1<<63 - 1)

// earliest returns the queue whose head is the earliest event, -1 for the
// heap, and false when nothing waits.
func (e *engine[E]) earliest() (int, bool) {
	best, found := -1, len(e.heap) > 0
	var at *entry[E]
	if found {
		at = &e.heap[0]
	}
	for i := range e.queues {
		f := &e.queues[i]
		if f.head < len(f.buf) && (!found || less(&f.buf[f.head], at)) {
			best, at, found = i, &f.buf[f.head], true
		}
	}
	return best, found
}

// head returns the entry at the head of queue q (-1: the heap's top).
func (e *engine[E]) head(q int) *entry[E] {
	if q < 0 {
		return &e.heap[0]
	}
	f := &e.queues[q]
	return &f.buf[f.head]
}

// take removes the entry at the head of queue q (-1: the heap's top) and
// returns it.
func (e *engine[E]) take(q int) entry[E] {
	if q < 0 {
		return e.pop()
	}
	f := &e.queues[q]
	en := f.buf[f.head]
	f.head++
	if f.head == len(f.buf) {
		f.buf, f.head = f.buf[:0], 0
	} else if f.head > 1024 && f.head > len(f.buf)/2 {
		f.buf = f.buf[:copy(f.buf, f.buf[f.head:])]
		f.head = 0
	}
	return en
}

// push adds en to the heap.
func (e *engine[E]) push(en entry[E]) {
	e.heap = append(e.heap, en)
	h := e.heap
	i := len(h) - 1
	for i > 0 {
		parent := (i - 1) / 4
		if !less(&en, &h[parent]) {
			break
		}
		h[i] = h[parent]
		i = parent
	}
	h[i] = en
}

// pop removes the heap's earliest entry and returns it.
func (e *engine[E]) pop() entry[E] {
	h := e.heap
	top, last := h[0], len(h)-1
	e.heap = h[:last]
	if last > 0 {
		e.heap[0] = h[last]
		e.down(0)
	}
	return top
}

// down moves the heap's entry i down to its place: below its children
// when the earliest of them (the first of those tied) is earlier.
func (e *engine[E]) down(i int) {
	h := e.heap
	en := h[i]
	for {
		first := 4*i + 1
		if first >= len(h) {
			break
		}
		small := first
		for c := first + 1; c < min(first+4, len(h)); c++ {
			if less(&h[c], &h[small]) {
				small = c
			}
		}
		if !less(&h[small], &en) {
			break
		}
		h[i] = h[small]
		i = small
	}
	h[i] = en
}

// history is a job's or a call's History, decided through the engine: it
// keeps the failures the History held at its last decision, so that the
// engine counts what all of them hold without asking each again.
type history struct {
	*retrypolicy.History
	held int
}

// decide records a failure at at of a run that lasted uptime in h, and
// decides on it with the jitter seed: it reports false, recording nothing,
// for an instant a History cannot hold. It stops the run once h holds
// MaxJobFailures failures or the run's Histories MaxHeldFailures, after
// this failure.
func (e *engine[E]) decide(h *history, at time.Time, uptime time.Duration, seed uint64) (retrypolicy.Decision, bool) {
	if h.Record(at, uptime) != nil {
		return retrypolicy.Decision{}, false
	}
	d, _ := h.Decide(seed, at) // it holds a failure; InWindow is all it holds
	e.held += d.InWindow - h.held
	h.held = d.InWindow
	e.peakHeld = max(e.peakHeld, e.held)
	switch {
	case d.InWindow >= MaxJobFailures:
		e.truncate(BoundJobFailures)
	case e.held >= e.maxHeld:
		e.truncate(BoundHeldFailures)
	}
	return d, true
}

// forget says that h, whose failures were decided through the engine, is
// dropped.
func (e *engine[E]) forget(h *history) {
	e.held -= h.held
	h.held = 0
}

// MaxTick is the longest controller tick a simulation takes: a day.
const MaxTick = tick.Max

// saturatingAdd returns t + d for a d >= 0, or the longest Duration
// where that would overflow.
func saturatingAdd(t, d time.Duration) time.Duration {
	if t > maxDuration-d {
		return maxDuration
	}
	return t + d
}
