package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
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
// the arrivals by Spike from TriggerAt for TriggerFor; or, with Drop set,
// takes that fraction of the workers away for the span; or, with
// FailShare set, fails that share of the attempts served in the span,
// transiently, after their service time (a dependency failing whatever
// its load, where a budget costs successful calls and saves nothing).
//
// The throttled policies give each client a retry.Throttle
// (ThrottleK, ThrottleWindow) on the simulation's clock, its draws seeded
// from Seed: it counts every attempt sent and every call it rejected as a
// request, and an attempt that succeeded, when its answer arrives, as an
// accept; an attempt its client abandoned is a request and never an
// accept. A call it rejects is not sent.
//
// The hedging policies hedge in place of retrying: a call's second
// attempt is sent once HedgeDelay has passed since its first with no
// answer, or at once when the first fails; the first answer ends the call,
// and the other attempt is cancelled by its client (the server, not told,
// serves it all the same, as it does an abandoned one). A hedge withdraws
// from the client's budget before it is sent, and a call deposits once
// when it ends well.
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

	// The trigger, one of three: the arrivals' factor during it (1 to
	// 100), the fraction of the workers lost (above 0, at most 1), or the
	// share of attempts served that fail (above 0, below 1); the other
	// two zero.
	Spike      float64
	Drop       float64
	FailShare  float64
	TriggerAt  time.Duration
	TriggerFor time.Duration

	Strategy retrypolicy.Strategy
	// BudgetSettings are the token policy's budget, a client
	// (retry.DefaultBudget's settings unless set), and the windowed
	// policy's, a client (20, 10 s, 100 unless set).
	BudgetSettings
	// ThrottleK and ThrottleWindow are the throttled policies' throttle,
	// a client: retry.NewThrottle's k and window, 2 and 1 s unless set.
	ThrottleK      float64
	ThrottleWindow time.Duration
	// HedgeDelay is the hedging policies' delay, after which a call that
	// has no answer sends its second attempt: 150 ms unless set.
	HedgeDelay time.Duration

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

// CollapsePolicy is one of the policies a Collapse compares.
type CollapsePolicy uint8

// The policies a Collapse compares, in the order it runs them.
const (
	// CollapseNone makes one attempt a call.
	CollapseNone CollapsePolicy = iota
	// CollapseStrategy runs the strategy with no budget.
	CollapseStrategy
	// CollapseToken runs it under a token budget a client.
	CollapseToken
	// CollapseWindowed runs it under a windowed budget a client.
	CollapseWindowed
	// CollapseDefault does what a retryhttp transport given only the
	// strategy does: retry.DefaultBudget a host (a client here), today
	// the same as CollapseToken at its defaults, shown apart so that a
	// change of the default shows here.
	CollapseDefault
	// CollapseThrottle makes one attempt a call, under a throttle a
	// client: a call the throttle rejects is not sent.
	CollapseThrottle
	// CollapseThrottleStrategy runs the strategy with no budget, under a
	// throttle a client.
	CollapseThrottleStrategy
	// CollapseThrottleDefault runs the strategy under retry.DefaultBudget
	// and a throttle, a client each.
	CollapseThrottleDefault
	// CollapseHedge hedges in place of retrying: a call's second attempt
	// is sent once HedgeDelay has passed since its first with no answer,
	// or at once when the first fails, under retry.DefaultBudget a client.
	CollapseHedge
	// CollapseHedgeUnbudgeted hedges as CollapseHedge does, with no
	// budget.
	CollapseHedgeUnbudgeted
)

// collapsePolicyNames are the policies' names, by CollapsePolicy.
var collapsePolicyNames = [...]string{"none", "strategy", "token", "windowed", "default",
	"throttle", "throttle-strategy", "throttle-default", "hedge", "hedge-unbudgeted"}

// String returns the policy's name: none, strategy, token, windowed,
// default, throttle, throttle-strategy, throttle-default, hedge or
// hedge-unbudgeted.
func (p CollapsePolicy) String() string {
	if int(p) < len(collapsePolicyNames) {
		return collapsePolicyNames[p]
	}
	return "CollapsePolicy(" + strconv.Itoa(int(p)) + ")"
}

// CollapsePolicies returns the policies a Collapse compares, in the order
// it runs them: none, strategy, token, windowed, default, throttle,
// throttle-strategy, throttle-default, hedge, hedge-unbudgeted.
func CollapsePolicies() []CollapsePolicy {
	out := make([]CollapsePolicy, len(collapsePolicyNames))
	for i := range out {
		out[i] = CollapsePolicy(i)
	}
	return out
}

// retries reports whether p retries under the strategy.
func (p CollapsePolicy) retries() bool {
	return p != CollapseNone && p != CollapseThrottle && !p.hedges()
}

// hedges reports whether p hedges in place of retrying.
func (p CollapsePolicy) hedges() bool { return p == CollapseHedge || p == CollapseHedgeUnbudgeted }

// hedgeAttempts returns the most attempts a hedged call sends: 2, or the
// strategy's bound when it is lower (a strategy that never retries never
// hedges).
func (c Collapse) hedgeAttempts() uint8 {
	switch {
	case c.Strategy.Kind == retrypolicy.None:
		return 1
	case c.Strategy.Kind == retrypolicy.Bounded && c.Strategy.MaxAttempts < 2:
		return uint8(max(c.Strategy.MaxAttempts, 1))
	}
	return 2
}

// throttled reports whether p's clients each have a throttle.
func (p CollapsePolicy) throttled() bool {
	return p == CollapseThrottle || p == CollapseThrottleStrategy || p == CollapseThrottleDefault
}

// DefaultCollapse is the collapse what-if's defaults: a server in the
// vulnerable regime (load 0.8 of its capacity, an attempt timeout shorter
// than a full queue's wait) and a trigger of three times the load for
// 10 s, under a strategy of 4 attempts with exponential jitter from 1 s.
// Over seeds 1 to 10, none recovers every time, strategy collapses, and
// the token and default budgets recover; so does the strategy under a
// throttle, and one attempt under a throttle recovers sooner than one
// alone.
func DefaultCollapse() Collapse {
	return Collapse{
		Workers: 10, Service: 100 * time.Millisecond, Queue: 500,
		Rate: 80, Clients: 10, Timeout: time.Second,
		Spike: 3, TriggerAt: time.Minute, TriggerFor: 10 * time.Second,
		Strategy: retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 4,
			Backoff: retrypolicy.Backoff{Kind: retrypolicy.ExponentialWithJitter, BaseDelay: time.Second, Multiplier: 2}},
		ThrottleK: DefaultThrottleK, ThrottleWindow: DefaultThrottleWindow, HedgeDelay: DefaultHedgeDelay,
		Duration: 5 * time.Minute, Seed: 1,
	}
}

// CollapseResult is one policy's run: what it did each second, and how it
// fared.
type CollapseResult struct {
	// Policy is the policy it ran.
	Policy CollapsePolicy
	// Judged reports that the run was judged, recovered and settled or
	// not: it was not cut short (Truncated), and its goodput over the 30 s
	// before the trigger was at least half its arrivals (else it
	// collapsed with no trigger). An unjudged run has neither verdict.
	Judged bool
	// Recovered: after the trigger ended, goodput's mean over the second
	// and the 4 before it reached 90% of its mean over the 30 s before the
	// trigger, and stayed there 10 consecutive seconds, before the run
	// ended. RecoverySecs is from the trigger's end to the first of those
	// seconds (-1 when it did not recover).
	Recovered    bool
	RecoverySecs int
	// Settled: after the trigger ended, attempts over the second and the 4
	// before it stayed within 1.1 times the arrivals over the same seconds
	// for 10 consecutive seconds, before the run ended: the policy no
	// longer retried hard. SettledSecs is from the trigger's end to the
	// first of those seconds (-1 when it did not settle).
	Settled     bool
	SettledSecs int
	// Amplification is attempts over arrivals from the trigger's start
	// until the recovery, or the run's end, to two decimals.
	Amplification float64
	// TriggerArrivals are the calls that arrived during the trigger, and
	// TriggerSucceeded those of them that succeeded, then or later.
	TriggerArrivals, TriggerSucceeded int
	// Per second: calls that arrived, attempts sent, calls that succeeded
	// (at their success), the queue's length at the second's end, retries
	// decided, attempts served after their client had given up, and calls
	// a throttle rejected (never sent).
	Arrivals, Attempts, Goodput, Queue, Retries, Wasted, Throttled []int
	// Truncated reports that the run stopped at a bound (MaxCalls, the
	// calls in flight): its counts are then lower bounds, and it is not
	// judged. TruncatedBy names the bound.
	Truncated   bool
	TruncatedBy Bound
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
	c.ThrottleK = cmp.Or(c.ThrottleK, DefaultThrottleK)
	c.ThrottleWindow = cmp.Or(c.ThrottleWindow, DefaultThrottleWindow)
	c.HedgeDelay = cmp.Or(c.HedgeDelay, DefaultHedgeDelay)
	c.MaxCalls = cmp.Or(c.MaxCalls, DefaultMaxCollapseCalls)
	for _, check := range []func() string{c.checkServer, c.checkClients, c.checkTrigger, c.checkBudgets, c.checkThrottle} {
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
	case c.HedgeDelay < 0 || c.HedgeDelay > time.Hour:
		return fmt.Sprintf("HedgeDelay must be between 0 (150ms) and 1h, got %v", c.HedgeDelay)
	}
	return ""
}

// DefaultHedgeDelay is the collapse's hedging policies' delay unless set.
const DefaultHedgeDelay = 150 * time.Millisecond

// checkTrigger says which of the run's and the trigger's settings is out
// of range, if any.
func (c Collapse) checkTrigger() string {
	switch {
	case c.Duration < time.Second || c.Duration > 24*time.Hour:
		return fmt.Sprintf("Duration must be between 1s and 24h, got %v", c.Duration)
	case c.TriggerAt < 0 || c.TriggerFor < 0 || c.TriggerAt+c.TriggerFor > c.Duration:
		return fmt.Sprintf("TriggerAt must not be negative, nor TriggerFor, and the trigger must end within Duration (%v), got %v for %v", c.Duration, c.TriggerAt, c.TriggerFor)
	case !c.oneTrigger():
		return "Spike must be set, or Drop, or FailShare: one trigger, not two or none"
	}
	return c.checkTriggerKind()
}

// checkTriggerKind says which of the trigger's settings is out of range,
// if any.
func (c Collapse) checkTriggerKind() string {
	switch {
	case c.Spike != 0 && !(c.Spike >= 1 && c.Spike <= 100):
		return fmt.Sprintf("Spike must be between 1 and 100, got %v", c.Spike)
	case c.Drop != 0 && !(c.Drop > 0 && c.Drop <= 1):
		return fmt.Sprintf("Drop must be above 0 and at most 1, got %v", c.Drop)
	case c.FailShare != 0 && !(c.FailShare > 0 && c.FailShare < 1):
		return fmt.Sprintf("FailShare must be above 0 and below 1, got %v", c.FailShare)
	}
	return ""
}

// oneTrigger reports whether exactly one of the triggers is set.
func (c Collapse) oneTrigger() bool {
	n := 0
	for _, v := range []float64{c.Spike, c.Drop, c.FailShare} {
		if v != 0 {
			n++
		}
	}
	return n == 1
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

// The throttled policies' throttle unless set: K = 2 (a dependency may
// fail half of what it is sent before anything is rejected) and a window
// of 1 s (one of minutes acts too late for a trigger of seconds, and
// recovers later than no retries at all; it should hold five requests or
// more of a client).
const (
	DefaultThrottleK      = 2
	DefaultThrottleWindow = time.Second
)

// checkThrottle says which of the throttle's settings is out of range, if
// any, by the throttle's own rule.
func (c Collapse) checkThrottle() string {
	if _, err := c.newThrottle(0); err != nil {
		return err.Error()
	}
	return ""
}

// newThrottle returns a new throttle of c's, its draws seeded from the
// run's seed and the client's number; or an error naming the setting out
// of range, by the throttle's own rule.
func (c Collapse) newThrottle(client int) (*retry.Throttle, error) {
	t, err := retry.NewThrottle(c.ThrottleK, c.ThrottleWindow)
	if err != nil {
		why := err.Error()
		why = why[strings.LastIndex(why, ": ")+2:] // "k must be …" or "window must be …"
		name, rule, _ := strings.Cut(why, " ")
		return nil, errors.New(map[string]string{"k": "ThrottleK", "window": "ThrottleWindow"}[name] + " " + rule)
	}
	t.Seed(jobSeed(c.Seed^throttleSalt, client))
	return t, nil
}

// throttleSalt sets a throttle's draws apart from the jitter's, which
// jobSeed derives from the same seed.
const throttleSalt = 0x7468726f74746c65

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
	out := make([]CollapseResult, 0, len(collapsePolicyNames))
	for _, p := range CollapsePolicies() {
		r, err := c.runPolicy(ctx, p, policy)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// judge computes r's verdicts (Judged, Recovered, Settled and their
// seconds) and its Amplification.
func (c Collapse) judge(r *CollapseResult) {
	at, end := int(c.TriggerAt/time.Second), int((c.TriggerAt+c.TriggerFor)/time.Second)
	secs := min(len(r.Goodput), len(r.Arrivals), len(r.Attempts))
	from := max(at-30, 0)
	goodput, arrived := sum(r.Goodput[from:at]), sum(r.Arrivals[from:at])
	baseline := 0.0
	if at > from {
		baseline = float64(goodput) / float64(at-from)
	}
	r.RecoverySecs, r.SettledSecs = -1, -1
	r.Recovered, r.Settled = false, false
	r.Judged = !r.Truncated && 2*goodput >= arrived
	if r.Judged {
		if s, ok := holds10(end, secs, func(s int) bool { return float64(trailing(r.Goodput, s))/float64(window(s)) >= 0.9*baseline }); ok {
			r.Recovered, r.RecoverySecs = true, s-end
		}
		if s, ok := holds10(end, secs, func(s int) bool { return float64(trailing(r.Attempts, s)) <= 1.1*float64(trailing(r.Arrivals, s)) }); ok {
			r.Settled, r.SettledSecs = true, s-end
		}
	}
	until := secs
	if r.Recovered {
		until = end + r.RecoverySecs
	}
	arrivals, attempts := sum(r.Arrivals[min(at, until):until]), sum(r.Attempts[min(at, until):until])
	r.Amplification = 0
	if arrivals > 0 {
		r.Amplification = math.Round(float64(attempts)/float64(arrivals)*100) / 100
	}
}

// holds10 returns the first second from from on, before to, that begins
// 10 consecutive seconds at which ok holds.
func holds10(from, to int, ok func(s int) bool) (int, bool) {
	run := 0
	for s := from; s < to; s++ {
		if !ok(s) {
			run = 0
			continue
		}
		if run++; run == 10 {
			return s - 9, true
		}
	}
	return -1, false
}

// trailing returns the sum of counts over second s and the 4 before it
// (those of them from 0 on).
func trailing(counts []int, s int) int { return sum(counts[max(s-4, 0) : s+1]) }

// window returns how many seconds trailing sums at s: 5, fewer at the
// run's start.
func window(s int) int { return min(s+1, 5) }

// sum returns the sum of counts.
func sum(counts []int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

// newCollapseRNG returns the run's random numbers for one use: the same
// for every policy, so that each sees the same arrivals.
func newCollapseRNG(seed, use uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, use)) }
