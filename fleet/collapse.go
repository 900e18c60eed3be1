package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
)

// Collapse is a what-if of the failure budgets exist for: a server near
// its capacity, pushed over by a trigger, whose queue's wait passes the
// clients' timeout, so that clients retry calls it is still serving and
// the extra load keeps the queue full after the trigger has gone (a
// metastable failure). It runs the same seeded arrivals under each
// policy ([CollapsePolicies]) side by side.
//
// The server has Workers, each serving one call at a time for Service
// (fixed, or exponential about it), and a FIFO queue of at most Queue
// calls; a call that finds the queue full is refused at once (a transient
// failure). A call whose client abandoned its attempt (timed out) stays
// queued and is served anyway, wasted work, unless CheckDeadlines is set:
// then a call that its client has given up on, or would before its
// service ends, is dropped when it reaches the head of the queue.
//
// Calls arrive open-loop (Poisson, seeded) at Rate a second, spread over
// Clients, each with a budget of its own; each call is a loop under
// Strategy whose attempts time out after Timeout. The trigger multiplies
// the arrivals by Spike from TriggerAt for TriggerFor, or, with Drop set,
// takes that fraction of the workers away for the span.
//
// Memory is a function of the queue, the calls in flight and the seconds
// shown; every run is bounded by the one event engine (MaxCalls calls,
// 16 events each at most).
type Collapse struct {
	Workers            int
	Service            time.Duration
	ExponentialService bool
	Queue              int
	CheckDeadlines     bool

	Rate    float64
	Clients int
	Timeout time.Duration

	Spike      float64 // the arrivals' factor during the trigger; 0 with Drop
	Drop       float64 // the fraction of the workers lost during the trigger
	TriggerAt  time.Duration
	TriggerFor time.Duration

	Strategy retrypolicy.Strategy
	// BudgetSettings are the token policy's budget, a client
	// (retry.DefaultBudget's settings unless set), and the windowed
	// policy's, a client (20, 10 s, 100 unless set).
	BudgetSettings

	Duration time.Duration
	Seed     uint64
	MaxCalls int // 0: DefaultMaxCollapseCalls
}

// DefaultMaxCollapseCalls is the most calls a Collapse run follows when its
// MaxCalls is zero.
const DefaultMaxCollapseCalls = 2_000_000

// collapseEventsPerCall bounds the events a call may cost a run: an
// attempt is its start, its service's end and its timeout, and a call
// makes a handful of attempts under any strategy a budget leaves.
const collapseEventsPerCall = 16

// CollapsePolicies are the policies a Collapse compares, in order: one
// attempt (none), the strategy with no budget (strategy), under a token
// budget a client (token), under a windowed budget a client (windowed),
// and what a retryhttp transport given only the strategy does (default:
// retry.DefaultBudget a host, today the same as token at its defaults,
// shown apart so that a change of the default shows here).
var CollapsePolicies = []string{"none", "strategy", "token", "windowed", "default"}

// DefaultCollapse is the collapse what-if's defaults: a server in the
// vulnerable regime (load 0.8 of its capacity, an attempt timeout shorter
// than a full queue's wait) and a trigger of three times the load for
// 10 s, under a strategy of 4 attempts with exponential jitter from 1 s.
// Over seeds 1 to 10, none recovers every time, strategy collapses, and
// the token and default budgets recover.
func DefaultCollapse() Collapse {
	return Collapse{
		Workers: 10, Service: 100 * time.Millisecond, Queue: 500,
		Rate: 80, Clients: 10, Timeout: time.Second,
		Spike: 3, TriggerAt: time.Minute, TriggerFor: 10 * time.Second,
		Strategy: retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 4,
			Backoff: retrypolicy.Backoff{Kind: retrypolicy.ExponentialWithJitter, BaseDelay: time.Second, Multiplier: 2}},
		Duration: 5 * time.Minute, Seed: 1,
	}
}

// CollapseResult is one policy's run: what it did each second, and how it
// fared.
type CollapseResult struct {
	// Policy is its name, one of CollapsePolicies.
	Policy string
	// Recovered: after the trigger ended, goodput's mean over the second
	// and the 4 before it reached 90% of its mean over the 30 s before the
	// trigger, and stayed there 10 consecutive seconds, before the run
	// ended. RecoverySecs is from the trigger's end to the first of those
	// seconds (-1 when it did not recover).
	Recovered    bool
	RecoverySecs int
	// Amplification is attempts over arrivals from the trigger's start
	// until the recovery, or the run's end.
	Amplification float64
	// Per second: calls that arrived, attempts sent, calls that succeeded
	// (at their success), the queue's length at the second's end, retries
	// decided, and attempts served after their client had given up.
	Arrivals, Attempts, Goodput, Queue, Retries, Wasted []int
	// Truncated names the bound that cut the run short ("" for none).
	Truncated Bound
}

// collapseErr begins the error of a setting out of range, which names it.
const collapseErr = "fleet: Collapse: "

// check returns the first setting out of range, and the settings with
// their defaults filled in.
func (c Collapse) check() (Collapse, error) {
	c.BudgetRatio = cmp.Or(c.BudgetRatio, retry.DefaultBudgetRatio)
	c.BudgetBurst = cmp.Or(c.BudgetBurst, retry.DefaultBudgetBurst)
	c.BudgetPercent = cmp.Or(c.BudgetPercent, 20)
	c.BudgetInterval = cmp.Or(c.BudgetInterval, 10*time.Second)
	c.BudgetMinRetries = cmp.Or(c.BudgetMinRetries, 100)
	c.MaxCalls = cmp.Or(c.MaxCalls, DefaultMaxCollapseCalls)
	for _, check := range []func() string{c.checkServer, c.checkClients, c.checkTrigger, c.checkBudgets} {
		if why := check(); why != "" {
			return c, errors.New(collapseErr + why)
		}
	}
	if err := c.Strategy.Validate(); err != nil {
		return c, fmt.Errorf("fleet: Collapse: %w", err)
	}
	return c, nil
}

// checkServer says which of the server's settings is out of range, if any.
func (c Collapse) checkServer() string {
	switch {
	case c.Workers < 1 || c.Workers > 10_000:
		return fmt.Sprintf("Workers must be between 1 and 10000, got %d", c.Workers)
	case c.Service <= 0 || c.Service > time.Minute:
		return fmt.Sprintf("Service must be between 1ns and 1m, got %v", c.Service)
	case c.Queue < 0 || c.Queue > 1_000_000:
		return fmt.Sprintf("Queue must be between 0 and 1000000, got %d", c.Queue)
	}
	return ""
}

// checkClients says which of the clients' settings is out of range, if
// any.
func (c Collapse) checkClients() string {
	switch {
	case !(c.Rate > 0 && c.Rate <= 100_000):
		return fmt.Sprintf("Rate must be above 0 and at most 100000, got %v", c.Rate)
	case c.Clients < 1 || c.Clients > 10_000:
		return fmt.Sprintf("Clients must be between 1 and 10000, got %d", c.Clients)
	case c.Timeout <= 0 || c.Timeout > time.Hour:
		return fmt.Sprintf("Timeout must be between 1ns and 1h, got %v", c.Timeout)
	case c.MaxCalls < 1 || c.MaxCalls > 100_000_000:
		return fmt.Sprintf("MaxCalls must be between 1 and 100000000, got %d", c.MaxCalls)
	}
	return ""
}

// checkTrigger says which of the run's and the trigger's settings is out
// of range, if any.
func (c Collapse) checkTrigger() string {
	switch {
	case c.Duration < time.Second || c.Duration > 24*time.Hour:
		return fmt.Sprintf("Duration must be between 1s and 24h, got %v", c.Duration)
	case c.TriggerAt < 0 || c.TriggerFor < 0 || c.TriggerAt+c.TriggerFor > c.Duration:
		return fmt.Sprintf("TriggerAt must not be negative, nor TriggerFor, and the trigger must end within Duration (%v), got %v for %v", c.Duration, c.TriggerAt, c.TriggerFor)
	case (c.Spike != 0) == (c.Drop != 0):
		return "Spike must be set, or Drop: one trigger, not both or neither"
	case c.Spike != 0 && !(c.Spike >= 1 && c.Spike <= 100):
		return fmt.Sprintf("Spike must be between 1 and 100, got %v", c.Spike)
	case c.Drop != 0 && !(c.Drop > 0 && c.Drop <= 1):
		return fmt.Sprintf("Drop must be above 0 and at most 1, got %v", c.Drop)
	}
	return ""
}

// checkBudgets says which of the budgets' settings is out of range, if
// any.
func (c Collapse) checkBudgets() string {
	if _, err := c.tokenBudget(); err != nil {
		return err.Error()
	}
	if _, err := c.windowBudget(); err != nil {
		return err.Error()
	}
	return ""
}

// Validate returns an error naming the first setting out of range, as Run
// would, and nil when c would run.
func (c Collapse) Validate() error {
	_, err := c.check()
	return err
}

// Run runs every policy of CollapsePolicies on the same arrivals, in that
// order. It returns an error naming the first setting out of range, or
// the context's when it is done.
func (c Collapse) Run(ctx context.Context) ([]CollapseResult, error) {
	c, err := c.check()
	if err != nil {
		return nil, err
	}
	policy, err := retrypolicy.Compile(c.Strategy)
	if err != nil {
		return nil, fmt.Errorf("fleet: Collapse: %w", err)
	}
	out := make([]CollapseResult, 0, len(CollapsePolicies))
	for _, name := range CollapsePolicies {
		r, err := c.runPolicy(ctx, name, policy)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// recovery computes r's Recovered, RecoverySecs and Amplification.
func (c Collapse) recovery(r *CollapseResult) {
	at, end := int(c.TriggerAt/time.Second), int((c.TriggerAt+c.TriggerFor)/time.Second)
	secs := len(r.Goodput)
	baseline := 0.0
	from := max(at-30, 0)
	for s := from; s < at; s++ {
		baseline += float64(r.Goodput[s])
	}
	if at > from {
		baseline /= float64(at - from)
	}
	mean := func(s int) float64 { // over s and the 4 seconds before it
		sum, n := 0, 0
		for k := max(s-4, 0); k <= s; k++ {
			sum, n = sum+r.Goodput[k], n+1
		}
		return float64(sum) / float64(n)
	}
	r.RecoverySecs = -1
	run := 0
	for s := end; s < secs; s++ {
		if mean(s) < 0.9*baseline {
			run = 0
			continue
		}
		if run++; run == 10 {
			r.Recovered, r.RecoverySecs = true, s-9-end
			break
		}
	}
	until := secs
	if r.Recovered {
		until = end + r.RecoverySecs
	}
	arrivals, attempts := 0, 0
	for s := at; s < until && s < secs; s++ {
		arrivals, attempts = arrivals+r.Arrivals[s], attempts+r.Attempts[s]
	}
	if arrivals > 0 {
		r.Amplification = math.Round(float64(attempts)/float64(arrivals)*100) / 100
	}
}

// newCollapseRNG returns the run's random numbers for one use: the same
// for every policy, so that each sees the same arrivals.
func newCollapseRNG(seed, use uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, use)) }
