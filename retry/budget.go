package retry

import (
	"errors"
	"math"
	"strconv"
	"sync/atomic"
)

// Budget bounds the retries of many Retry calls that share it (one per
// dependency, say): when the dependency fails, it sees a bounded extra load,
// not a storm. Each call of Retry deposits ratio tokens, each retry
// withdraws one, and a retry without a whole token is refused; the bucket
// starts with, and never holds more than, burst tokens. So retries are at
// most burst + ratio × calls over any run of calls. A Budget is safe for
// concurrent use by multiple goroutines.
type Budget struct {
	tokens atomic.Int64 // micro-tokens
	ratio  int64        // micro-tokens a call deposits
	burst  int64        // micro-tokens the bucket holds at most
}

// microToken is a token's unit in the bucket: ratios are kept to 1e-6.
const microToken = 1_000_000

// NewBudget returns a full budget that allows ratio retries per call (0.1:
// a retry for every ten calls) and burst retries beyond that. ratio must
// be in [0, 1000] and burst in [1, 1e9].
func NewBudget(ratio float64, burst int) (*Budget, error) {
	switch {
	case !(ratio >= 0 && ratio <= 1000):
		return nil, errors.New("retrypolicy: NewBudget: ratio must be between 0 and 1000, got " + strconv.FormatFloat(ratio, 'g', -1, 64))
	case burst < 1 || burst > 1e9:
		return nil, errors.New("retrypolicy: NewBudget: burst must be between 1 and 1000000000, got " + strconv.Itoa(burst))
	}
	b := &Budget{ratio: int64(math.Floor(ratio * microToken)), burst: int64(burst) * microToken}
	b.tokens.Store(b.burst)
	return b, nil
}

// deposit adds a call's tokens, up to the burst.
func (b *Budget) deposit() {
	for {
		old := b.tokens.Load()
		if b.tokens.CompareAndSwap(old, min(old+b.ratio, b.burst)) {
			return
		}
	}
}

// withdraw takes a retry's token, or reports that there is none.
func (b *Budget) withdraw() bool {
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

// Tokens returns the retries the budget allows now: whole tokens and a
// fraction, at most its burst. A metrics exporter reads it as the budget's
// state; it changes as calls deposit and retries withdraw.
func (b *Budget) Tokens() float64 {
	return float64(b.tokens.Load()) / microToken
}

// Deposit records a call against the budget, as each call of Retry does:
// a retry loop of one's own (a scheduler's, a simulation's) calls it once
// per operation, and Withdraw before each retry.
func (b *Budget) Deposit() { b.deposit() }

// Withdraw takes a retry's token, and reports false, taking nothing, when
// the budget has no whole token left.
func (b *Budget) Withdraw() bool { return b.withdraw() }
