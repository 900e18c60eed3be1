package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Tail is a what-if of hedged calls: a server whose service time has a
// slow tail, and clients that send a second attempt of a call that has
// not answered within a delay, the first answer winning. It runs the same
// seeded arrivals under each policy ([TailPolicies]) side by side, and
// gives each one's latency quantiles and the extra load it sent.
//
// The server has Workers, each serving one attempt at a time, and a FIFO
// queue. An attempt's service time is lognormal about Median (its log's
// standard deviation Sigma), and with probability SlowShare SlowExtra
// longer; each attempt is drawn apart, so a second attempt is slow only by
// its own chance (unless SlowTogether). Once a call has its answer, its other attempts are
// cancelled: one still queued is dropped when it reaches the head of the
// queue, one in service keeps its worker to the end.
//
// Calls arrive open-loop (Poisson, seeded) at Rate a second for Duration,
// spread over Clients. A hedging client sends a call's next attempt when
// the delay has passed since its last send, up to Attempts in all. Each
// client has retry.DefaultBudget (but under hedge-unbudgeted): a hedge
// withdraws a token before it is sent, and is not sent when the budget
// refuses; a call deposits once when it ends well (here, every call that
// answers). The fixed delay is Delay (the service time's 95th percentile
// unless set); the following delay is the Quantile of the client's recent
// samples (the last 256, read again every 16), never below MinDelay, Delay
// serving until 20 samples are seen. A sample is the time from the
// winning attempt's send to its answer; losers are not samples.
//
// Every run is bounded by the one event engine (MaxCalls calls, 12
// events each at most, and a million calls in flight); memory is a
// function of the calls in flight and the latencies kept (a uniform
// sample of a million past a million calls).
type Tail struct {
	Workers   int
	Median    time.Duration
	Sigma     float64
	SlowShare float64
	SlowExtra time.Duration
	// SlowTogether draws the slow extra once a call, not once an attempt:
	// every attempt of a slow call is slow, as where the request itself is
	// slow wherever it is served, or the servers pause together.
	SlowTogether bool

	Rate     float64
	Clients  int
	Duration time.Duration

	// Attempts is the most attempts a hedged call sends in all, 2 to 5 (0
	// means 2).
	Attempts int
	// Delay is the fixed delay, and the following delay's until 20
	// samples are seen; 0 is the service time's 95th percentile.
	Delay time.Duration
	// Quantile is the following delay's quantile of the recent samples,
	// in (0, 1) (0 means 0.95); MinDelay its floor (0 means 1 ms).
	Quantile float64
	MinDelay time.Duration

	Seed     uint64
	MaxCalls int // 0: DefaultMaxTailCalls
}

// DefaultMaxTailCalls is the most calls a Tail run follows when its
// MaxCalls is zero.
const DefaultMaxTailCalls = 2_000_000

// tailEventsPerCall bounds the events a call may cost a run: its arrival,
// and for each of at most 5 attempts its service's end and the delay that
// sends the next.
const tailEventsPerCall = 12

// DefaultTail is the tail what-if's defaults: 50 workers, a service time
// lognormal about 10 ms (sigma 0.3) and 2% of attempts 200 ms slower, 500
// calls a second over 10 clients for 60 s, 2 attempts a hedged call, the
// fixed delay the service time's 95th percentile (about 17.5 ms), the
// following delay its 95th percentile, from 1 ms. Over seeds 1 to 10,
// hedging at either delay cuts the 99th percentile more than 5 times for
// under 10% extra load.
func DefaultTail() Tail {
	return Tail{Workers: 50, Median: 10 * time.Millisecond, Sigma: 0.3, SlowShare: 0.02, SlowExtra: 200 * time.Millisecond,
		Rate: 500, Clients: 10, Duration: time.Minute, Attempts: 2, Quantile: 0.95, MinDelay: time.Millisecond, Seed: 1}
}

// TailPolicy is one of the policies a Tail compares.
type TailPolicy uint8

// The policies a Tail compares, in the order it runs them.
const (
	// TailNone sends one attempt a call.
	TailNone TailPolicy = iota
	// TailHedge hedges at the fixed delay, under retry.DefaultBudget a
	// client.
	TailHedge
	// TailHedgeFollowing hedges at the following delay, under
	// retry.DefaultBudget a client.
	TailHedgeFollowing
	// TailHedgeUnbudgeted hedges at the fixed delay, with no budget.
	TailHedgeUnbudgeted
)

// tailPolicyNames are the policies' names, by TailPolicy.
var tailPolicyNames = [...]string{"none", "hedge", "hedge-following", "hedge-unbudgeted"}

// String returns the policy's name: none, hedge, hedge-following or
// hedge-unbudgeted.
func (p TailPolicy) String() string {
	if int(p) < len(tailPolicyNames) {
		return tailPolicyNames[p]
	}
	return "TailPolicy(" + strconv.Itoa(int(p)) + ")"
}

// TailPolicies returns the policies a Tail compares, in the order it runs
// them: none, hedge, hedge-following, hedge-unbudgeted.
func TailPolicies() []TailPolicy {
	return []TailPolicy{TailNone, TailHedge, TailHedgeFollowing, TailHedgeUnbudgeted}
}

// TailResult is one policy's run.
type TailResult struct {
	// Policy is the policy it ran.
	Policy TailPolicy
	// Calls are the calls that arrived, Answered those that had their
	// answer before the run ended (every one, unless it was cut short).
	Calls, Answered int
	// Attempts are the attempts sent, Hedges those after a call's first,
	// and Refused the hedges a budget refused (not sent).
	Attempts, Hedges, Refused int
	// P50, P99 and P999 are the nearest-rank 50th, 99th and 99.9th
	// percentiles of the time from a call's arrival to its answer.
	P50, P99, P999 time.Duration
	// ExtraLoad is attempts over calls, minus one.
	ExtraLoad float64
	// WorkPerCall is the workers' time spent, attempts cancelled in
	// service included, over the calls.
	WorkPerCall time.Duration
	// Delay is the fixed delay the run began with (none for TailNone).
	Delay time.Duration
	// Truncated reports that the run stopped at a bound (MaxCalls, the
	// calls in flight): its figures are then over the calls it followed.
	// TruncatedBy names the bound.
	Truncated   bool
	TruncatedBy Bound
}

// tailErr begins the error of a setting out of range, which names it.
const tailErr = "fleet: Tail: "

// check returns the first setting out of range, and the settings with
// their defaults filled in.
func (c Tail) check() (Tail, error) {
	c = c.withDefaults()
	for _, check := range []func() string{c.checkServer, c.checkClients, c.checkHedging} {
		if why := check(); why != "" {
			return c, errors.New(tailErr + why)
		}
	}
	return c.Filled(), nil
}

// withDefaults returns c with its zero settings but Delay given their
// defaults.
func (c Tail) withDefaults() Tail {
	c.Attempts = cmp.Or(c.Attempts, 2)
	c.Quantile = cmp.Or(c.Quantile, 0.95)
	c.MinDelay = cmp.Or(c.MinDelay, time.Millisecond)
	c.MaxCalls = cmp.Or(c.MaxCalls, DefaultMaxTailCalls)
	return c
}

// Filled returns c as Run runs it: its zero settings given their defaults
// (Attempts 2, Quantile 0.95, MinDelay 1 ms, MaxCalls
// DefaultMaxTailCalls, Delay the service time's 95th percentile).
func (c Tail) Filled() Tail {
	c = c.withDefaults()
	if c.Delay == 0 {
		c.Delay = c.ServiceQuantile(0.95)
	}
	return c
}

// checkServer says which of the server's settings is out of range, if any.
func (c Tail) checkServer() string {
	switch {
	case c.Workers < 1 || c.Workers > 10_000:
		return fmt.Sprintf("Workers must be between 1 and 10000, got %d", c.Workers)
	case c.Median <= 0 || c.Median > time.Minute:
		return fmt.Sprintf("Median must be between 1ns and 1m, got %v", c.Median)
	case !(c.Sigma >= 0 && c.Sigma <= 3):
		return fmt.Sprintf("Sigma must be between 0 and 3, got %v", c.Sigma)
	case !(c.SlowShare >= 0 && c.SlowShare < 1):
		return fmt.Sprintf("SlowShare must be at least 0 and below 1, got %v", c.SlowShare)
	case c.SlowExtra < 0 || c.SlowExtra > time.Hour:
		return fmt.Sprintf("SlowExtra must be between 0 and 1h, got %v", c.SlowExtra)
	}
	return ""
}

// checkClients says which of the clients' settings is out of range, if
// any.
func (c Tail) checkClients() string {
	switch {
	case !(c.Rate > 0 && c.Rate <= 100_000):
		return fmt.Sprintf("Rate must be above 0 and at most 100000, got %v", c.Rate)
	case c.Clients < 1 || c.Clients > 10_000:
		return fmt.Sprintf("Clients must be between 1 and 10000, got %d", c.Clients)
	case c.Duration < time.Second || c.Duration > 24*time.Hour:
		return fmt.Sprintf("Duration must be between 1s and 24h, got %v", c.Duration)
	case c.MaxCalls < 1 || c.MaxCalls > 100_000_000:
		return fmt.Sprintf("MaxCalls must be between 1 and 100000000, got %d", c.MaxCalls)
	}
	return ""
}

// checkHedging says which of the hedging settings is out of range, if
// any.
func (c Tail) checkHedging() string {
	switch {
	case c.Attempts < 2 || c.Attempts > 5:
		return fmt.Sprintf("Attempts must be between 2 and 5, got %d", c.Attempts)
	case c.Delay < 0 || c.Delay > time.Hour:
		return fmt.Sprintf("Delay must be between 0 (the service time's 95th percentile) and 1h, got %v", c.Delay)
	case !(c.Quantile > 0 && c.Quantile < 1):
		return fmt.Sprintf("Quantile must be above 0 and below 1, got %v", c.Quantile)
	case c.MinDelay < 0 || c.MinDelay > time.Hour:
		return fmt.Sprintf("MinDelay must be between 0 (1ms) and 1h, got %v", c.MinDelay)
	}
	return ""
}

// Validate returns an error naming the first setting out of range, as Run
// would, and nil when c would run.
func (c Tail) Validate() error {
	_, err := c.check()
	return err
}

// ServiceQuantile returns the service time's q-quantile, for q in (0, 1):
// the time below which a share q of the attempts' service times fall, the
// slow ones included. It is the default fixed delay at q = 0.95.
func (c Tail) ServiceQuantile(q float64) time.Duration {
	// The share of service times at or below x: the fast ones', and the
	// slow ones' (SlowExtra longer).
	cdf := func(x float64) float64 {
		return (1-c.SlowShare)*c.lognormalCDF(x) + c.SlowShare*c.lognormalCDF(x-float64(c.SlowExtra))
	}
	lo, hi := 0.0, max(float64(c.Median), 1)
	for cdf(hi) < q && hi < math.MaxInt64/4 {
		hi *= 2
	}
	for range 200 { // bisection, to well under a nanosecond
		mid := (lo + hi) / 2
		if cdf(mid) < q {
			lo = mid
		} else {
			hi = mid
		}
	}
	return time.Duration(math.Round(hi))
}

// lognormalCDF is the share of the lognormal about Median (Sigma) at or
// below x nanoseconds.
func (c Tail) lognormalCDF(x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case c.Sigma == 0:
		if x >= float64(c.Median) {
			return 1
		}
		return 0
	}
	return 0.5 * math.Erfc(-math.Log(x/float64(c.Median))/(c.Sigma*math.Sqrt2))
}

// Run runs every policy of TailPolicies on the same arrivals, in that
// order. It returns an error naming the first setting out of range, or
// the context's when it is done.
func (c Tail) Run(ctx context.Context) ([]TailResult, error) {
	c, err := c.check()
	if err != nil {
		return nil, err
	}
	out := make([]TailResult, 0, len(tailPolicyNames))
	for _, p := range TailPolicies() {
		r, err := c.runPolicy(ctx, p)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// rank returns the nearest-rank q-quantile, q in per mille, of sorted.
func rank(sorted []time.Duration, perMille int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[max((len(sorted)*perMille+999)/1000-1, 0)]
}
