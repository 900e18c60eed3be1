package fleet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/retrypolicy/retrypolicy"
)

// Contention is the model of AWS's "Exponential Backoff And Jitter"
// (2015): Clients start at t = 0, each reading a row's version and then
// writing it conditionally; a write with a stale version fails, and its
// client waits its backoff, then reads again. Every message (read
// request, read reply, write request, write reply) takes |N(10, 2)| ms one
// way, and the server handles them in the order they arrive. A zero field
// means its default. It is bounded: it follows at most MaxMessages
// messages over all its runs, and stops when its context is done.
type Contention struct {
	// Clients is how many clients contend; zero is 100.
	Clients int
	// Runs is how many runs the figures are the means of; zero is 100.
	Runs int
	// Seed draws the latencies and the jitter.
	Seed uint64
	// MaxMessages is the most messages (and backoffs ending) the runs
	// follow in all, from 1 to 1,000,000,000; zero is DefaultMaxMessages.
	MaxMessages int
}

// DefaultMaxMessages is the most messages a [Contention] follows when its
// MaxMessages is zero: a few seconds of work.
const DefaultMaxMessages = 50_000_000

// Contender is one way the clients wait after a failed write.
type Contender struct {
	// Name names it in results.
	Name string
	// Strategy decides each failure, with an uptime of 0: the wait is the
	// decision's Delay plus its Jitter. A strategy that gives up leaves its
	// client without a write, as does a wait past the year 2262.
	Strategy retrypolicy.Strategy
	// NoWait retries at once, without a strategy: the blog's "no backoff".
	NoWait bool
	// FullJitter waits uniform in [0, Delay] instead: the blog's "full
	// jitter".
	FullJitter bool
}

// PublishedContenders are the blog's parameters: its n-th failure (n from
// 1) waits min(2,000 ms, 5 ms × 2^n), which is the exponential backoff
// from 10 ms doubling to 2 s. They are none (no wait), exponential,
// full_jitter and, beside them, this library's exponential_with_jitter
// (that wait plus up to a quarter).
func PublishedContenders() []Contender {
	s := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{
		Kind: retrypolicy.Exponential, BaseDelay: 10 * time.Millisecond, Multiplier: 2, MaxDelay: 2 * time.Second}}
	jittered := s
	jittered.Backoff.Kind = retrypolicy.ExponentialWithJitter
	return []Contender{
		{Name: "none", NoWait: true},
		{Name: "exponential", Strategy: s},
		{Name: "full_jitter", Strategy: s, FullJitter: true},
		{Name: "exponential_with_jitter", Strategy: jittered},
	}
}

// ContentionResult is what a contender did, as means over the runs.
type ContentionResult struct {
	// Name is the contender's.
	Name string
	// Calls is the writes the server took.
	Calls float64
	// CompletionMs is when the last successful write's reply arrived, in
	// milliseconds from t = 0.
	CompletionMs float64
	// GaveUp is the clients whose strategy gave up.
	GaveUp float64
	// Runs counts the runs the means are over: Contention.Runs, or fewer
	// when Truncated.
	Runs int
	// Truncated reports that the runs stopped at MaxMessages or at their
	// context: the means are over the runs finished and the one cut short
	// (whose figures are lower bounds).
	Truncated bool
	// TruncatedBy names the bound that stopped them, when Truncated.
	TruncatedBy Bound
}

// A client's steps, in order: each message it sends arrives, or its
// reply does, or its backoff ends.
const (
	readArrives = iota
	readReplied
	writeArrives
	writeReplied
	woke // the backoff has passed: it reads again
)

// client is where a client is: at most one of its messages is on the way.
type client struct {
	step    int8
	ok      bool  // the write's outcome, carried by its reply
	version int64 // the version read, carried by the write
}

// Run runs the contender c.Runs times and returns the means. It returns a
// *retrypolicy.ValidationError for an invalid strategy, and an error for
// a Contention that cannot run. When ctx is done it stops within a few
// thousand messages and returns the means so far, Truncated, with an error
// that wraps ctx's.
func (c Contention) Run(ctx context.Context, who Contender) (ContentionResult, error) {
	c = c.withDefaults()
	if c.Clients < 1 || c.Clients > 100_000 || c.Runs < 1 || c.Runs > 100_000 {
		return ContentionResult{}, errors.New("fleet: Contention: Clients and Runs must be between 1 and 100000")
	}
	if c.MaxMessages < 1 || c.MaxMessages > 1_000_000_000 {
		return ContentionResult{}, errors.New("fleet: Contention.MaxMessages: must be between 1 and 1000000000")
	}
	var p *retrypolicy.Policy
	if !who.NoWait {
		var err error
		if p, err = retrypolicy.Compile(who.Strategy); err != nil {
			return ContentionResult{}, err
		}
	}
	r := ContentionResult{Name: who.Name}
	left := c.MaxMessages
	var err error
	for round := range c.Runs {
		if left == 0 {
			r.TruncatedBy = BoundMaxMessages
			break
		}
		var o outcome
		o, err = c.once(ctx, p, who, uint64(round), left)
		left -= o.messages
		r.Runs++
		r.Calls += float64(o.calls)
		r.CompletionMs += float64(o.completion) / float64(time.Millisecond)
		r.GaveUp += float64(o.gaveUp)
		if o.cut != "" {
			r.TruncatedBy = o.cut
			break
		}
	}
	r.Truncated = r.TruncatedBy != ""
	n := float64(r.Runs)
	r.Calls, r.CompletionMs, r.GaveUp = r.Calls/n, r.CompletionMs/n, r.GaveUp/n
	return r, err
}

func (c Contention) withDefaults() Contention {
	if c.Clients == 0 {
		c.Clients = 100
	}
	if c.Runs == 0 {
		c.Runs = 100
	}
	if c.MaxMessages == 0 {
		c.MaxMessages = DefaultMaxMessages
	}
	return c
}

// outcome is one run's: the writes the server took, when the last
// successful write's reply arrived, how many clients gave up, the messages
// followed, and whether it was cut short.
type outcome struct {
	calls      int
	completion time.Duration
	gaveUp     int
	messages   int
	cut        Bound
	// The most events that waited and failures held at once.
	peakPending, peakHeld int
}

// round is one run of a Contention in progress.
type round struct {
	c         Contention
	who       Contender
	rng       *rand.Rand
	histories []history
	clients   []client
	eng       *engine[int32] // each message's client
	version   int64
	o         outcome
}

// once is one run, following at most most messages.
func (c Contention) once(ctx context.Context, p *retrypolicy.Policy, who Contender, n uint64, most int) (outcome, error) {
	r := &round{c: c, who: who, rng: rand.New(rand.NewPCG(c.Seed, n)),
		histories: make([]history, c.Clients), clients: make([]client, c.Clients)}
	r.eng = newEngine[int32](most, BoundMaxMessages)
	r.eng.heap = make([]entry[int32], 0, c.Clients)
	r.eng.seed(c.Clients, func(i int) (time.Duration, int32) {
		if p != nil {
			r.histories[i].History = retrypolicy.NewHistory(p)
		}
		return r.latency(), int32(i)
	})
	var err error
	r.o.cut, err = r.eng.run(ctx, maxDuration, r.step)
	r.o.messages, r.o.peakPending, r.o.peakHeld = r.eng.handled, r.eng.peakPending, r.eng.peakHeld
	if err != nil {
		return r.o, fmt.Errorf("fleet: Contention: %w", err)
	}
	return r.o, nil
}

// latency is a message's time on the way, |N(10, 2)| ms.
func (r *round) latency() time.Duration {
	return time.Duration(math.Abs(10+2*r.rng.NormFloat64()) * float64(time.Millisecond))
}

// step moves job's client on when its message arrives at at, or its
// backoff ends.
func (r *round) step(at time.Duration, job int32) {
	cl := &r.clients[job]
	switch cl.step {
	case readArrives:
		cl.version = r.version
	case readReplied: // the write goes out with the version read
	case writeArrives:
		r.o.calls++
		if cl.ok = cl.version == r.version; cl.ok {
			r.version++
		}
	case writeReplied:
		r.replied(cl, at, job)
		return
	case woke:
		cl.step = readArrives - 1
	}
	cl.step++
	r.eng.schedule(at+r.latency(), job) // the next message on its way
}

// replied ends a client's write whose reply arrives at at: a success ends
// the client; a failure waits its backoff and wakes, or gives up.
func (r *round) replied(cl *client, at time.Duration, job int32) {
	if cl.ok {
		r.o.completion = max(r.o.completion, at)
		return
	}
	wait, ok := r.backoff(at, job)
	if !ok || wait > math.MaxInt64-at-time.Second { // past it the clock would overflow
		r.o.gaveUp++
		return
	}
	cl.step = woke
	r.eng.schedule(at+wait, job)
}

// backoff returns how long job's client waits after the failed write whose
// reply arrives at at, or false when its strategy gives up.
func (r *round) backoff(at time.Duration, job int32) (time.Duration, bool) {
	if r.who.NoWait {
		return 0, true
	}
	d, ok := r.eng.decide(&r.histories[job], simStart.Add(at), 0, jobSeed(r.c.Seed, int(job)))
	switch {
	case !ok:
		return 0, false // waits of centuries: past what a History holds, the client gives up
	case d.Action == retrypolicy.Fatal:
		return 0, false
	case r.who.FullJitter:
		return time.Duration(r.rng.Int64N(int64(d.Delay) + 1)), true
	}
	return d.Delay + d.Jitter, true
}
