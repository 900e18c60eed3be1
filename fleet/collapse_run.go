package fleet

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
)

// collapseEvent is an event of a Collapse run: a call's arrival, an
// attempt due, a service's end, an attempt's timeout, the trigger's end,
// or a hedge's delay passed.
type collapseEvent struct {
	kind uint8
	try  uint8  // the attempt's number in its call, from 0
	call int32  // the call's slot
	gen  uint32 // the call's generation, for events of one
}

const (
	evArrive uint8 = iota
	evAttempt
	evServed
	evTimeout
	evRestore
	evHedge
)

// collapseCall is a call in flight: its client, its generation (every
// call a slot holds has a new one), its attempts, and its History.
type collapseCall struct {
	seq     int // its arrival's number: its jitter's seed
	client  int32
	gen     uint32
	sent    uint8 // its attempts sent
	live    uint8 // the attempts that await an answer, a bit each
	stopped bool  // a budget refused a hedge: no more are sent
	trigger bool  // it arrived during the trigger
	history history
	started time.Duration // its last attempt's start
}

// queued is an attempt waiting at the server: which call's, which of its
// attempts, sent when.
type queued struct {
	call int32
	gen  uint32
	try  uint8
	sent time.Duration
}

// collapseRun is one policy's run.
type collapseRun struct {
	c        Collapse
	kind     CollapsePolicy
	policy   *retrypolicy.Policy
	eng      *engine[collapseEvent]
	arrivals *rand.Rand
	service  *rand.Rand
	failures *rand.Rand // FailShare's draws
	timeouts int        // the engine's FIFO queue of timeouts

	calls     []collapseCall
	free      []int32
	budgets   []*retry.Budget   // a client's, nil for none
	throttles []*retry.Throttle // a client's, nil for none

	hedgeAttempts uint8 // the most attempts a hedged call sends
	busy          int
	waiting       []queued // the server's FIFO queue: waiting[head:]
	head          int
	nextID        int
	r             CollapseResult
}

// runPolicy runs policy kind, the strategy compiled as policy.
func (c Collapse) runPolicy(ctx context.Context, kind CollapsePolicy, policy *retrypolicy.Policy) (CollapseResult, error) {
	secs := int((c.Duration + time.Second - 1) / time.Second)
	r := &collapseRun{c: c, kind: kind, policy: policy,
		eng:      newEngine[collapseEvent](collapseEventsPerCall*c.MaxCalls, BoundMaxCalls),
		arrivals: newCollapseRNG(c.Seed, 0x617272), service: newCollapseRNG(c.Seed, 0x736572), failures: newCollapseRNG(c.Seed, 0x666169)}
	r.eng.fifoTies = true
	r.timeouts = r.eng.newQueue()
	r.hedgeAttempts = c.hedgeAttempts()
	r.r = CollapseResult{Policy: kind, Arrivals: make([]int, secs), Attempts: make([]int, secs), Goodput: make([]int, secs),
		Queue: make([]int, secs), Retries: make([]int, secs), Wasted: make([]int, secs), Throttled: make([]int, secs)}
	if err := r.makeBudgets(); err != nil {
		return CollapseResult{}, err
	}
	r.eng.scheduleFirst(r.gap(0), collapseEvent{kind: evArrive})
	if c.Drop > 0 {
		r.eng.schedule(c.TriggerAt+c.TriggerFor, collapseEvent{kind: evRestore})
	}
	stop, err := r.eng.run(ctx, c.Duration-1, r.step)
	if err != nil {
		return CollapseResult{}, fmt.Errorf("fleet: Collapse: %w", err)
	}
	r.r.TruncatedBy, r.r.Truncated = stop, stop != ""
	c.judge(&r.r)
	return r.r, nil
}

// makeBudgets gives each client the policy's budget and throttle, or
// none.
func (r *collapseRun) makeBudgets() error {
	r.budgets = make([]*retry.Budget, r.c.Clients)
	r.throttles = make([]*retry.Throttle, r.c.Clients)
	for i := range r.budgets {
		var err error
		switch r.kind {
		case CollapseToken:
			r.budgets[i], err = r.c.tokenBudget()
		case CollapseDefault, CollapseThrottleDefault, CollapseHedge:
			r.budgets[i] = retry.DefaultBudget() // a retryhttp transport's, a host
		case CollapseWindowed:
			r.budgets[i], err = r.c.windowBudget()
		}
		if err == nil && r.kind.throttled() {
			r.throttles[i], err = r.c.newThrottle(i)
		}
		if err != nil {
			return fmt.Errorf("fleet: Collapse: %w", err)
		}
	}
	return nil
}

// step handles one event at t.
func (r *collapseRun) step(t time.Duration, e collapseEvent) {
	switch e.kind {
	case evArrive:
		r.arrive(t)
	case evAttempt:
		if c := &r.calls[e.call]; c.gen == e.gen {
			if th := r.throttles[c.client]; th != nil {
				th.SentAt(simStart.Add(t)) // a retry: a request
			}
			r.send(e.call, t)
		}
	case evServed:
		r.served(e, t)
	case evTimeout:
		if c := &r.calls[e.call]; c.gen == e.gen && c.live&(1<<e.try) != 0 {
			c.live &^= 1 << e.try
			r.failed(e.call, t)
		}
	case evRestore:
		r.startNext(t)
	case evHedge:
		if c := &r.calls[e.call]; c.gen == e.gen && c.sent == e.try {
			r.hedge(e.call, t)
		}
	}
	r.r.Queue[int(t/time.Second)] = len(r.waiting) - r.head
}

// gap returns when the call after one at t arrives: Poisson at the rate of
// the moment, times the spike during the trigger.
func (r *collapseRun) gap(t time.Duration) time.Duration {
	rate := r.c.Rate
	if r.c.Spike > 0 && r.triggered(t) {
		rate *= r.c.Spike
	}
	return t + time.Duration(r.arrivals.ExpFloat64()/rate*float64(time.Second))
}

// triggered reports whether the trigger holds at t.
func (r *collapseRun) triggered(t time.Duration) bool {
	return t >= r.c.TriggerAt && t < r.c.TriggerAt+r.c.TriggerFor
}

// arrive starts a new call at t, and schedules the next arrival.
func (r *collapseRun) arrive(t time.Duration) {
	if next := r.gap(t); next < r.c.Duration {
		r.eng.scheduleFirst(next, collapseEvent{kind: evArrive})
	}
	if r.nextID >= r.c.MaxCalls {
		r.eng.truncate(BoundMaxCalls)
		return
	}
	if len(r.calls)-len(r.free) >= maxLiveCalls {
		r.eng.truncate(BoundCallsInFlight)
		return
	}
	r.r.Arrivals[int(t/time.Second)]++
	trigger := r.triggered(t)
	if trigger {
		r.r.TriggerArrivals++
	}
	var id int32
	if n := len(r.free); n > 0 {
		id, r.free = r.free[n-1], r.free[:n-1]
	} else {
		r.calls = append(r.calls, collapseCall{})
		id = int32(len(r.calls) - 1)
	}
	client := int32(r.nextID % r.c.Clients)
	r.nextID++
	r.calls[id] = collapseCall{seq: r.nextID - 1, client: client, gen: r.calls[id].gen, trigger: trigger}
	if th := r.throttles[client]; th != nil && !th.AllowAt(simStart.Add(t)) {
		r.r.Throttled[int(t/time.Second)]++ // rejected: not sent, a request all the same
		r.end(id)
		return
	}
	budgetStart(r.budgets[client], t)
	r.send(id, t)
}

// send sends call id's next attempt at t: served at once by an idle
// worker, queued, or refused when the queue is full.
func (r *collapseRun) send(id int32, t time.Duration) {
	c := &r.calls[id]
	try := c.sent
	c.sent++
	c.live |= 1 << try
	c.started = t
	r.r.Attempts[int(t/time.Second)]++
	if r.kind.hedges() && c.sent < r.hedgeAttempts {
		r.eng.schedule(t+r.c.HedgeDelay, collapseEvent{kind: evHedge, call: id, gen: c.gen, try: c.sent})
	}
	switch {
	case r.busy < r.workers(t):
		r.serve(queued{id, c.gen, try, t}, t)
	case len(r.waiting)-r.head < r.c.Queue:
		r.waiting = append(r.waiting, queued{id, c.gen, try, t})
	default:
		c.live &^= 1 << try
		r.failed(id, t) // refused at once
		return
	}
	r.eng.queue(r.timeouts, t+r.c.Timeout, collapseEvent{kind: evTimeout, call: id, gen: c.gen, try: try})
}

// workers returns the workers serving at t.
func (r *collapseRun) workers(t time.Duration) int {
	if r.c.Drop > 0 && r.triggered(t) {
		return r.c.Workers - int(float64(r.c.Workers)*r.c.Drop)
	}
	return r.c.Workers
}

// serve starts serving q at t on a free worker.
func (r *collapseRun) serve(q queued, t time.Duration) {
	d := r.c.Service
	if r.c.ExponentialService {
		d = time.Duration(r.service.ExpFloat64() * float64(r.c.Service))
	}
	r.busy++
	r.eng.schedule(t+d, collapseEvent{kind: evServed, call: q.call, gen: q.gen, try: q.try})
}

// served ends a service at t: its answer goes to its call if the call
// still waits for that attempt (else it was wasted), a failure if the
// random failures draw it, and the worker takes the next call queued.
func (r *collapseRun) served(e collapseEvent, t time.Duration) {
	r.busy--
	if c := &r.calls[e.call]; c.gen == e.gen && c.live&(1<<e.try) != 0 {
		c.live &^= 1 << e.try
		if r.c.FailShare > 0 && r.triggered(t) && r.failures.Float64() < r.c.FailShare {
			r.failed(e.call, t) // failed transiently, after its service
		} else {
			r.succeeded(e.call, t)
		}
	} else {
		r.r.Wasted[int(t/time.Second)]++
	}
	r.startNext(t)
}

// startNext has the free workers take the calls queued, in order; with
// CheckDeadlines, a call whose client has given up, or would before its
// service ends, is dropped.
func (r *collapseRun) startNext(t time.Duration) {
	for r.busy < r.workers(t) && r.head < len(r.waiting) {
		q := r.waiting[r.head]
		r.waiting[r.head] = queued{}
		r.head++
		if r.head > len(r.waiting)/2 && r.head > 64 { // compact: memory is what waits
			r.waiting = append(r.waiting[:0], r.waiting[r.head:]...)
			r.head = 0
		}
		if r.c.CheckDeadlines && q.sent+r.c.Timeout < t+r.c.Service {
			continue
		}
		r.serve(q, t)
	}
}

// succeeded ends call id at t, well.
func (r *collapseRun) succeeded(id int32, t time.Duration) {
	c := &r.calls[id]
	r.r.Goodput[int(t/time.Second)]++
	if c.trigger {
		r.r.TriggerSucceeded++
	}
	budgetDeposit(r.budgets[c.client])
	if th := r.throttles[c.client]; th != nil {
		th.AcceptAt(simStart.Add(t)) // an attempt abandoned, or refused, never gets here
	}
	r.end(id)
}

// failed decides on the failure at t of call id's attempt: a retry at its
// due time, or the call given up; for a hedging policy, the next hedge at
// once, or, when none may be sent, the call given up once no attempt of
// it awaits an answer.
func (r *collapseRun) failed(id int32, t time.Duration) {
	c := &r.calls[id]
	switch {
	case r.kind.hedges():
		if !r.hedge(id, t) && c.live == 0 {
			r.end(id)
		}
		return
	case !r.kind.retries():
		r.end(id)
		return
	}
	if c.history.History == nil {
		c.history.History = retrypolicy.NewHistory(r.policy)
	}
	d, ok := r.eng.decide(&c.history, simStart.Add(t), t-c.started, jobSeed(r.c.Seed, c.seq))
	if !ok || d.Action == retrypolicy.Fatal || !budgetGrant(r.budgets[c.client], t) {
		r.end(id)
		return
	}
	next := t + d.Delay + d.Jitter
	if next >= r.c.Duration {
		r.end(id) // its retry falls past the run
		return
	}
	r.r.Retries[int(t/time.Second)]++
	r.eng.schedule(next, collapseEvent{kind: evAttempt, call: id, gen: c.gen})
}

// hedge sends call id's next attempt at t, if it may send one and its
// budget grants it (a hedge withdraws before it is sent), and reports
// whether it did. A budget that refuses stops the call's hedges and
// cancels no attempt in flight.
func (r *collapseRun) hedge(id int32, t time.Duration) bool {
	c := &r.calls[id]
	if c.stopped || c.sent >= r.hedgeAttempts {
		return false
	}
	if !budgetGrant(r.budgets[c.client], t) {
		c.stopped = true
		return false
	}
	r.r.Retries[int(t/time.Second)]++
	r.send(id, t)
	return true
}

// end frees call id's slot: its attempts still awaiting an answer are
// cancelled (the server, not told, serves them all the same).
func (r *collapseRun) end(id int32) {
	c := &r.calls[id]
	if c.history.History != nil {
		r.eng.forget(&c.history)
		c.history.History = nil
	}
	c.live = 0
	c.gen++ // its events still waiting find it gone
	r.free = append(r.free, id)
}
