package plan

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
		return ContentionResult{}, errors.New("plan: Contention: Clients and Runs must be between 1 and 100000")
	}
	if c.MaxMessages < 1 || c.MaxMessages > 1_000_000_000 {
		return ContentionResult{}, errors.New("plan: Contention.MaxMessages: must be between 1 and 1000000000")
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

// once is one run, following at most most messages.
func (c Contention) once(ctx context.Context, p *retrypolicy.Policy, who Contender, round uint64, most int) (outcome, error) {
	rng := rand.New(rand.NewPCG(c.Seed, round))
	latency := func() time.Duration {
		return time.Duration(math.Abs(10+2*rng.NormFloat64()) * float64(time.Millisecond))
	}
	histories := make([]*retrypolicy.History, c.Clients)
	clients := make([]client, c.Clients)
	q := newEngine[int32](most, BoundMaxMessages) // each message's client
	q.heap = make([]entry[int32], 0, c.Clients)
	q.seed(c.Clients, func(i int) (time.Duration, int32) {
		if p != nil {
			histories[i] = retrypolicy.NewHistory(p)
		}
		return latency(), int32(i)
	})
	var version int64
	var o outcome
	for {
		en, ok := q.next(ctx)
		if !ok {
			break
		}
		e := run{at: en.at, job: en.ev}
		cl := &clients[e.job]
		switch cl.step {
		case readArrives:
			cl.version = version
		case readReplied: // the write goes out with the version read
		case writeArrives:
			o.calls++
			if cl.ok = cl.version == version; cl.ok {
				version++
			}
		case writeReplied:
			c.replied(cl, e, histories[e.job], who, rng, q, &o)
			continue
		case woke:
			cl.step = readArrives - 1
		}
		cl.step++
		q.schedule(e.at+latency(), e.job) // the next message on its way
	}
	o.messages, o.cut = q.handled, q.stop
	o.peakPending, o.peakHeld = q.peakPending, q.peakHeld
	if q.err != nil {
		return o, fmt.Errorf("plan: Contention: %w", q.err)
	}
	return o, nil
}

// replied ends a client's write whose reply arrives as e: a success ends
// the client; a failure waits its backoff and wakes, or gives up.
func (c Contention) replied(cl *client, e run, h *retrypolicy.History, who Contender, rng *rand.Rand, q *engine[int32], o *outcome) {
	if cl.ok {
		o.completion = max(o.completion, e.at)
		return
	}
	wait, ok := c.backoff(h, who, e, rng, q)
	if !ok || wait > math.MaxInt64-e.at-time.Second { // past it the clock would overflow
		o.gaveUp++
		return
	}
	cl.step = woke
	q.schedule(e.at+wait, e.job)
}

// backoff returns how long a client waits after the failed write whose
// reply arrives as e, or false when its strategy gives up.
func (c Contention) backoff(h *retrypolicy.History, who Contender, e run, rng *rand.Rand, q *engine[int32]) (time.Duration, bool) {
	if who.NoWait {
		return 0, true
	}
	at := simStart.Add(e.at)
	if !q.record(h, at, 0) {
		return 0, false // waits of centuries: past what a History holds, the client gives up
	}
	d, _ := h.Decide(jobSeed(c.Seed, int(e.job)), at)
	switch {
	case d.Action == retrypolicy.Fatal:
		return 0, false
	case who.FullJitter:
		return time.Duration(rng.Int64N(int64(d.Delay) + 1)), true
	}
	return d.Delay + d.Jitter, true
}
