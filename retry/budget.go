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
// A token budget ([NewBudget]) is a bucket: each call that ends well (its
// last attempt succeeded, or failed with an error that is not transient:
// marked [Permanent], not [PermanentFailure]) deposits ratio tokens, each
// retry withdraws one, and a retry without a whole token is refused; the
// bucket starts with, and never holds more than, burst tokens. So over
// any run of calls, retries <= burst + ratio × calls that ended well:
// while nothing goes well it grants its burst and then nothing, and
// retrying stops when most calls fail. It is the one to use.
//
// A windowed budget ([NewWindowBudget]) counts over a trailing interval
// instead, as the Gateway API's retry budget (GEP-3388) does, paced so
// that no tenth of the interval grants more than a tenth of it. It counts
// every call, failing ones too, so it keeps granting while calls keep
// coming: the rule for interoperating with a gateway set to the same
// numbers, not a guard against a collapse.
//
// A loop of one's own tells a budget of either kind three things: Start
// when a call begins, Withdraw before each retry, Deposit when a call
// ended well.
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
// it granted in the trailing interval are fewer than bound =
// max(minRetries, floor(percent/100 × calls in the interval)), and those
// granted in the current tenth of it fewer than ceil(bound/10): a call is
// counted when a loop starts (Start), a retry when the budget grants one.
// The interval is kept as 10 slots of interval/10 from the budget's
// creation, on the monotonic clock (time.Now); a slot older than the 9
// before the current one counts nothing. percent must be in [0, 100]
// (kept to a millionth of a percent), interval in [1ms, 1h], minRetries
// in [0, 1e9].
//
// The Gateway API's defaults, 20 percent over 10 s with a minimum of 100
// retries in the 10 s (paced: at most 10 in any second), are
// NewWindowBudget(20, 10*time.Second, 100). It does not stop retrying when
// most calls fail: a token budget ([NewBudget]) does.
func NewWindowBudget(percent float64, interval time.Duration, minRetries int) (*Budget, error) {
	w, err := slots.New("retrypolicy: NewWindowBudget", percent, interval, minRetries)
	if err != nil {
		return nil, err
	}
	return &Budget{win: w, created: time.Now()}, nil
}

// Start records that a call begins: a windowed budget counts it; a token
// budget ignores it. Each loop of this package calls it once per call.
func (b *Budget) Start() {
	if b.win != nil {
		b.win.Call(time.Since(b.created))
	}
}

// Deposit records that a call ended well (its last attempt succeeded, or
// failed with an error that is not transient): a token budget takes ratio
// tokens, up to its burst; a windowed budget ignores it. One atomic
// operation, no allocation.
func (b *Budget) Deposit() {
	if b.win != nil {
		return
	}
	for {
		old := b.tokens.Load()
		if old >= b.burst || b.tokens.CompareAndSwap(old, min(old+b.ratio, b.burst)) {
			return
		}
	}
}

// Withdraw takes a retry's token, and reports false, taking nothing, when
// the budget has no whole token left (a windowed budget: when it grants
// no retry now, and otherwise counts the one it grants).
func (b *Budget) Withdraw() bool {
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
// tokens and a fraction, at most its burst; a windowed budget's lesser of
// its bound less the retries it granted in the window and its pace
// (ceil(bound/10)) less those granted in the current slot, at least 0. A
// metrics exporter reads it as the budget's state.
func (b *Budget) Tokens() float64 {
	if b.win != nil {
		return float64(b.win.Allowed(time.Since(b.created)))
	}
	return float64(b.tokens.Load()) / microToken
}
