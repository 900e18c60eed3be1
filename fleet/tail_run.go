package fleet

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/retrypolicy/retrypolicy/retry"
)

// tailEvent is an event of a Tail run: a call's arrival, an attempt's
// service ending, or a call's delay passing.
type tailEvent struct {
	kind uint8
	call int32
	gen  uint32 // the call's, for events of one
	sent time.Duration
}

const (
	tevArrive uint8 = iota
	tevServed
	tevDelay
)

// tailCall is a call in flight: its client, its arrival, and the attempts
// it sent. A slot's generation changes when its call ends, so that the
// call's events and queued attempts still waiting find it gone.
type tailCall struct {
	client  int32
	gen     uint32
	sent    uint8
	stopped bool // a budget refused a hedge: no more are sent
	slow    bool // SlowTogether's draw, for every attempt of the call
	arrived time.Duration
}

// tailClient is a client's budget and, for the following delay, its
// recent samples.
type tailClient struct {
	budget  *retry.Budget
	samples [tailSamples]time.Duration
	seen    int
	delay   time.Duration // the delay that follows, once 20 samples are seen
}

// tailSamples is how many recent samples a client keeps for the following
// delay, and tailEvery how often it reads them again.
const (
	tailSamples = 256
	tailEvery   = 16
)

// tailRun is one policy's run.
type tailRun struct {
	c        Tail
	kind     TailPolicy
	eng      *engine[tailEvent]
	arrivals *rand.Rand
	service  *rand.Rand
	delays   int // the engine's FIFO queue of fixed delays

	calls   []tailCall
	free    []int32
	clients []tailClient
	busy    int
	waiting []tailEvent // the server's FIFO queue: waiting[head:]
	head    int
	nextID  int
	work    time.Duration
	lat     reservoir
	sorted  []time.Duration // the following delay's scratch
	r       TailResult
}

// runPolicy runs policy kind.
func (c Tail) runPolicy(ctx context.Context, kind TailPolicy) (TailResult, error) {
	r := &tailRun{c: c, kind: kind,
		eng:      newEngine[tailEvent](tailEventsPerCall*c.MaxCalls, BoundMaxCalls),
		arrivals: newCollapseRNG(c.Seed, 0x746172), service: newCollapseRNG(c.Seed, 0x747365),
		clients: make([]tailClient, c.Clients)}
	r.eng.fifoTies = true
	r.delays = r.eng.newQueue()
	r.r = TailResult{Policy: kind}
	if kind != TailNone {
		r.r.Delay = c.Delay
	}
	for i := range r.clients {
		if kind == TailHedge || kind == TailHedgeFollowing {
			r.clients[i].budget = retry.DefaultBudget()
		}
		r.clients[i].delay = c.Delay
	}
	r.eng.scheduleFirst(r.gap(0), tailEvent{kind: tevArrive})
	stop, err := r.eng.run(ctx, maxDuration, r.step)
	if err != nil {
		return TailResult{}, fmt.Errorf("fleet: Tail: %w", err)
	}
	r.r.TruncatedBy, r.r.Truncated = stop, stop != ""
	return r.result(), nil
}

// result returns the figures, their derived ones computed.
func (r *tailRun) result() TailResult {
	res := r.r
	res.Answered = r.lat.seen
	lat := slices.Clone(r.lat.kept)
	slices.Sort(lat)
	res.P50, res.P99, res.P999 = rank(lat, 500), rank(lat, 990), rank(lat, 999)
	if res.Calls > 0 {
		res.ExtraLoad = math.Round((float64(res.Attempts)/float64(res.Calls)-1)*10000) / 10000
		res.WorkPerCall = r.work / time.Duration(res.Calls)
	}
	return res
}

// step handles one event at t.
func (r *tailRun) step(t time.Duration, e tailEvent) {
	switch e.kind {
	case tevArrive:
		r.arrive(t)
	case tevServed:
		r.served(e, t)
	case tevDelay:
		if r.calls[e.call].gen == e.gen {
			r.hedge(e.call, t)
		}
	}
}

// gap returns when the call after one at t arrives: Poisson at Rate.
func (r *tailRun) gap(t time.Duration) time.Duration {
	return t + time.Duration(r.arrivals.ExpFloat64()/r.c.Rate*float64(time.Second))
}

// arrive starts a new call at t, and schedules the next arrival.
func (r *tailRun) arrive(t time.Duration) {
	if next := r.gap(t); next < r.c.Duration {
		r.eng.scheduleFirst(next, tailEvent{kind: tevArrive})
	}
	switch {
	case r.nextID >= r.c.MaxCalls:
		r.eng.truncate(BoundMaxCalls)
		return
	case len(r.calls)-len(r.free) >= maxLiveCalls:
		r.eng.truncate(BoundCallsInFlight)
		return
	}
	var id int32
	if n := len(r.free); n > 0 {
		id, r.free = r.free[n-1], r.free[:n-1]
	} else {
		r.calls = append(r.calls, tailCall{})
		id = int32(len(r.calls) - 1)
	}
	r.calls[id] = tailCall{client: int32(r.nextID % r.c.Clients), gen: r.calls[id].gen, arrived: t}
	if r.c.SlowTogether {
		r.calls[id].slow = r.c.SlowShare > 0 && r.service.Float64() < r.c.SlowShare
	}
	r.nextID++
	r.r.Calls++
	r.send(id, t)
}

// send sends call id's next attempt at t, to a free worker or the queue,
// and, when the policy hedges and the call may send another, schedules
// its delay.
func (r *tailRun) send(id int32, t time.Duration) {
	c := &r.calls[id]
	c.sent++
	r.r.Attempts++
	a := tailEvent{kind: tevServed, call: id, gen: c.gen, sent: t}
	if r.busy < r.c.Workers {
		r.serve(a, t)
	} else {
		r.waiting = append(r.waiting, a)
	}
	if r.kind == TailNone || int(c.sent) >= r.c.Attempts {
		return
	}
	ev := tailEvent{kind: tevDelay, call: id, gen: c.gen}
	if r.kind == TailHedgeFollowing {
		r.eng.schedule(saturatingAdd(t, r.clients[c.client].delay), ev)
	} else {
		r.eng.queue(r.delays, saturatingAdd(t, r.c.Delay), ev)
	}
}

// hedge sends call id's next attempt at t, its delay having passed, if
// its budget grants one: a hedge withdraws a token before it is sent.
func (r *tailRun) hedge(id int32, t time.Duration) {
	c := &r.calls[id]
	if c.stopped {
		return
	}
	if !budgetGrant(r.clients[c.client].budget, t) {
		c.stopped = true // an empty budget sends no more hedges, and cancels none in flight
		r.r.Refused++
		return
	}
	r.r.Hedges++
	r.send(id, t)
}

// serve starts serving attempt a at t on a free worker: its service time
// drawn apart from every other attempt's.
func (r *tailRun) serve(a tailEvent, t time.Duration) {
	d := float64(r.c.Median) * math.Exp(r.c.Sigma*r.service.NormFloat64())
	if r.c.SlowTogether && r.calls[a.call].slow || !r.c.SlowTogether && r.c.SlowShare > 0 && r.service.Float64() < r.c.SlowShare {
		d += float64(r.c.SlowExtra)
	}
	service := time.Duration(min(d, float64(time.Hour*24)))
	r.busy++
	r.work += service
	r.eng.schedule(saturatingAdd(t, service), a)
}

// served ends an attempt's service at t: the first of its call's to
// answer ends the call; the worker takes the next attempt queued whose
// call still waits.
func (r *tailRun) served(a tailEvent, t time.Duration) {
	r.busy--
	if c := &r.calls[a.call]; c.gen == a.gen {
		r.lat.keep(t-c.arrived, r.c.Seed)
		r.sample(c.client, t-a.sent)
		budgetDeposit(r.clients[c.client].budget) // once: the call ends here
		c.gen++                                   // its other attempts are losers: cancelled
		r.free = append(r.free, a.call)
	}
	for r.busy < r.c.Workers && r.head < len(r.waiting) {
		q := r.waiting[r.head]
		r.waiting[r.head] = tailEvent{}
		r.head++
		if r.head > len(r.waiting)/2 && r.head > 64 { // compact: memory is what waits
			r.waiting = append(r.waiting[:0], r.waiting[r.head:]...)
			r.head = 0
		}
		if r.calls[q.call].gen == q.gen {
			r.serve(q, t)
		} // else a loser still queued: dropped at the head
	}
}

// sample keeps a winner's time from send to answer in its client's recent
// samples, and reads them again for the following delay every tailEvery
// samples once 20 are seen.
func (r *tailRun) sample(client int32, d time.Duration) {
	if r.kind != TailHedgeFollowing {
		return
	}
	cl := &r.clients[client]
	cl.samples[cl.seen%tailSamples] = d
	cl.seen++
	if cl.seen < 20 || (cl.seen-20)%tailEvery != 0 {
		return
	}
	r.sorted = append(r.sorted[:0], cl.samples[:min(cl.seen, tailSamples)]...)
	slices.Sort(r.sorted)
	n := len(r.sorted)
	at := int(math.Ceil(r.c.Quantile*float64(n))) - 1
	cl.delay = max(r.sorted[min(max(at, 0), n-1)], r.c.MinDelay)
}
