package retry

import (
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/retrypolicy/retrypolicy/internal/budgetrange"
	"github.com/retrypolicy/retrypolicy/internal/slots"
)

// Budget bounds the retries of many Do calls that share it (one per
// dependency, say): when the dependency fails, it sees a bounded extra
// load, not a storm. It is one of two kinds.
//
// A token budget ([NewBudget]) is a bucket: each call deposits ratio
// tokens, each retry withdraws one, and a retry without a whole token is
// refused; the bucket starts with, and never holds more than, burst
// tokens. So retries are at most burst + ratio × calls over any run of
// calls, and a healthy hour is remembered as burst retries to spend.
//
// A windowed budget ([NewWindowBudget]) counts over a trailing interval
// instead, as Envoy, Linkerd and the Gateway API's retry budgets do: what
// it allows follows the current load.
//
// A Budget is safe for concurrent use by multiple goroutines.
type Budget struct {
	tokens atomic.Int64 // micro-tokens
	ratio  int64        // micro-tokens a call deposits
	burst  int64        // micro-tokens the bucket holds at most

	win     *slots.Window // a windowed budget's counts, nil for a token one
	created time.Time     // its slots' origin, on the monotonic clock
}

// microToken is a token's unit in the bucket: ratios are kept to 1e-6.
const microToken = 1_000_000

// NewBudget returns a full budget that allows ratio retries per call (0.1:
// a retry for every ten calls) and burst retries beyond that. ratio must
// be in [0, 1000] and burst in [1, 1e9].
func NewBudget(ratio float64, burst int) (*Budget, error) {
	if p := budgetrange.Token(ratio, burst); len(p) > 0 {
		return nil, errors.New("retrypolicy: NewBudget: " + p[0].Arg + " " + p[0].Rule)
	}
	b := &Budget{ratio: int64(math.Floor(ratio * microToken)), burst: int64(burst) * microToken}
	b.tokens.Store(b.burst)
	return b, nil
}

// NewWindowBudget returns a budget that grants a retry while the retries
// it granted in the trailing interval are fewer than
// max(minRetries, floor(percent/100 × calls in the interval)): a call is
// counted when a loop starts, a retry when the budget grants one. The
// interval is kept as 10 slots of interval/10 from the budget's creation,
// on the monotonic clock (time.Now); a slot older than the 9 before the
// current one counts nothing. percent must be in [0, 100] (kept to a
// millionth of a percent), interval in [1ms, 1h], minRetries in [0, 1e9].
//
// The Gateway API's defaults, 20 percent over 10 s and at least 10 retries
// a second, are NewWindowBudget(20, 10*time.Second, 100).
func NewWindowBudget(percent float64, interval time.Duration, minRetries int) (*Budget, error) {
	w, err := slots.New("retrypolicy: NewWindowBudget", percent, interval, minRetries)
	if err != nil {
		return nil, err
	}
	return &Budget{win: w, created: time.Now()}, nil
}

// deposit records a call: a token budget's ratio, up to the burst; a
// windowed budget's count in its current slot.
func (b *Budget) deposit() {
	if b.win != nil {
		b.win.Call(time.Since(b.created))
		return
	}
	for {
		old := b.tokens.Load()
		if b.tokens.CompareAndSwap(old, min(old+b.ratio, b.burst)) {
			return
		}
	}
}

// withdraw takes a retry's token, or reports that there is none; a
// windowed budget grants and counts it, or refuses.
func (b *Budget) withdraw() bool {
	if b.win != nil {
		return b.win.Grant(time.Since(b.created))
	}
	for {
		old := b.tokens.Load()
		if old < microToken {
			return false
		}
		if b.tokens.CompareAndSwap(old, old-microToken) {
			return true
		}
	}
}

// Tokens returns the retries the budget allows now: a token budget's whole
// tokens and a fraction, at most its burst; a windowed budget's bound less
// the retries it granted in the window, at least 0. A metrics exporter
// reads it as the budget's state.
func (b *Budget) Tokens() float64 {
	if b.win != nil {
		return float64(b.win.Allowed(time.Since(b.created)))
	}
	return float64(b.tokens.Load()) / microToken
}

// Deposit records a call against the budget, as each call of Retry does:
// a retry loop of one's own (a scheduler's, a simulation's) calls it once
// per operation, and Withdraw before each retry.
func (b *Budget) Deposit() { b.deposit() }

// Withdraw takes a retry's token, and reports false, taking nothing, when
// the budget has no whole token left (a windowed budget: when it grants
// no retry now).
func (b *Budget) Withdraw() bool { return b.withdraw() }
