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
// ended well. A loop that keeps its own clock (a simulation's, a test's)
// passes its time instead, as StartAt, WithdrawAt and TokensAt; the forms
// without a time pass time.Now(). A windowed budget reads no clock when
// it is given a time.
//
// A Budget is safe for concurrent use by multiple goroutines.
type Budget struct {
	tokens atomic.Int64 // micro-tokens
	ratio  int64        // micro-tokens a call deposits
	burst  int64        // micro-tokens the bucket holds at most

	win *slots.Window // a windowed budget's counts, nil for a token one
}

// microToken is a token's unit in the bucket: ratios are kept to 1e-6.
const microToken = 1_000_000

// DefaultBudgetRatio and DefaultBudgetBurst are DefaultBudget's: a retry
// for every ten calls that ended well, and 10 retries beyond that.
const (
	DefaultBudgetRatio = 0.1
	DefaultBudgetBurst = 10
)

// DefaultBudget returns a new token budget of DefaultBudgetRatio and
// DefaultBudgetBurst, NewBudget(0.1, 10): the budget a retryhttp
// transport gives each host and a retrygrpc client interceptor shares
// among its calls unless told otherwise, and the one the what-ifs call
// default. Over a healthy stretch it allows a tenth more attempts than
// calls; while nothing goes well it grants 10 retries, then none.
func DefaultBudget() *Budget { return newTokenBudget(DefaultBudgetRatio, DefaultBudgetBurst) }

// NewBudget returns a full budget that allows ratio retries per call (0.1:
// a retry for every ten calls) and burst retries beyond that. ratio must
// be in [0, 1000] and burst in [1, 1e9].
func NewBudget(ratio float64, burst int) (*Budget, error) {
	if p := budgetrange.Token(ratio, burst); len(p) > 0 {
		return nil, errors.New("retrypolicy: NewBudget: " + p[0].Arg + " " + p[0].Rule)
	}
	return newTokenBudget(ratio, burst), nil
}

// newTokenBudget returns a full token budget of settings in range.
func newTokenBudget(ratio float64, burst int) *Budget {
	b := &Budget{ratio: int64(math.Floor(ratio * microToken)), burst: int64(burst) * microToken}
	b.tokens.Store(b.burst)
	return b
}

// NewWindowBudget returns a budget that grants a retry while the retries
// it granted in the trailing interval are fewer than bound =
// max(minRetries, floor(percent/100 × calls in the interval)), and those
// granted in the current tenth of it fewer than ceil(bound/10): a call is
// counted when a loop starts (Start), a retry when the budget grants one.
// The interval is kept as 10 slots of interval/10 from the first time the
// budget is given (by StartAt, WithdrawAt or TokensAt, or time.Now by the
// forms without a time); a slot older than the 9 before the current one
// counts nothing, and a time earlier than the latest given counts as the
// latest. percent must be in [0, 100] (kept to a millionth of a percent),
// interval in [1ms, 1h], minRetries in [0, 1e9].
//
// The Gateway API's defaults, 20 percent over 10 s with a minimum of 100
// retries in the 10 s (paced: at most 10 in any second), are
// NewWindowBudget(20, 10*time.Second, 100). It does not stop retrying when
// most calls fail: a token budget ([NewBudget]) does.
func NewWindowBudget(percent float64, interval time.Duration, minRetries int) (*Budget, error) {
	w, err := slots.New(percent, interval, minRetries)
	if err != nil {
		return nil, errors.New("retrypolicy: NewWindowBudget: " + err.Error())
	}
	return &Budget{win: w}, nil
}

// Start records that a call begins now: StartAt(time.Now()). Each loop of
// this package calls it once per call.
func (b *Budget) Start() {
	if b.win != nil {
		b.win.CallNow()
	}
}

// StartAt records that a call begins at t: a windowed budget counts it; a
// token budget ignores it.
func (b *Budget) StartAt(t time.Time) {
	if b.win != nil {
		b.win.Call(t)
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

// Withdraw takes a retry's token now: WithdrawAt(time.Now()), though a
// token budget reads no clock.
func (b *Budget) Withdraw() bool {
	if b.win != nil {
		return b.win.GrantNow()
	}
	return b.withdrawToken()
}

// WithdrawAt takes a retry's token at t, and reports false, taking
// nothing, when the budget has no whole token left (a windowed budget:
// when it grants no retry at t, and otherwise counts the one it grants).
// A token budget ignores t.
func (b *Budget) WithdrawAt(t time.Time) bool {
	if b.win != nil {
		return b.win.Grant(t)
	}
	return b.withdrawToken()
}

// withdrawToken takes a token budget's token, if it holds a whole one.
func (b *Budget) withdrawToken() bool {
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

// Tokens returns the retries the budget allows now: TokensAt(time.Now()),
// though a token budget reads no clock. A metrics exporter reads it as the
// budget's state.
func (b *Budget) Tokens() float64 {
	if b.win != nil {
		return float64(b.win.AllowedNow())
	}
	return float64(b.tokens.Load()) / microToken
}

// TokensAt returns the retries the budget allows at t: a token budget's
// whole tokens and a fraction, at most its burst (t ignored); a windowed
// budget's lesser of its bound less the retries it granted in the window
// and its pace (ceil(bound/10)) less those granted in the current slot,
// at least 0.
func (b *Budget) TokensAt(t time.Time) float64 {
	if b.win != nil {
		return float64(b.win.Allowed(t))
	}
	return float64(b.tokens.Load()) / microToken
}
