package fleet

import (
	"errors"
	"time"

	"github.com/retrypolicy/retrypolicy/internal/budgetrange"
	"github.com/retrypolicy/retrypolicy/retry"
)

// BudgetSettings are a what-if's retry budgets: a token one
// (retry.NewBudget's arguments) and a windowed one
// (retry.NewWindowBudget's). Whether a setting of zero means no budget or
// a default is the what-if's to say ([Layer], [Collapse]).
type BudgetSettings struct {
	// BudgetRatio and BudgetBurst are the token budget's: the tokens a
	// call that ended well deposits, and the most held.
	BudgetRatio float64
	BudgetBurst int
	// BudgetPercent, BudgetInterval and BudgetMinRetries are the windowed
	// budget's: the percent of the calls in the trailing interval granted
	// as retries, and the least granted in it.
	BudgetPercent    float64
	BudgetInterval   time.Duration
	BudgetMinRetries int
}

// tokenBudget returns a new token budget of s, or an error naming its
// settings when one is out of range.
func (s BudgetSettings) tokenBudget() (*retry.Budget, error) {
	if p := budgetrange.Token(s.BudgetRatio, s.BudgetBurst); len(p) > 0 {
		return nil, errors.New("BudgetRatio and BudgetBurst: " + p[0].Arg + " " + p[0].Rule)
	}
	return retry.NewBudget(s.BudgetRatio, s.BudgetBurst)
}

// windowBudget returns a new windowed budget of s on the simulation's
// clock, its slots counted from t = 0, or an error naming its settings
// when one is out of range.
func (s BudgetSettings) windowBudget() (*retry.Budget, error) {
	if p := budgetrange.Window(s.BudgetPercent, s.BudgetInterval, s.BudgetMinRetries); len(p) > 0 {
		return nil, errors.New("BudgetPercent, BudgetInterval and BudgetMinRetries: " + p[0].Arg + " " + p[0].Rule)
	}
	b, err := retry.NewWindowBudget(s.BudgetPercent, s.BudgetInterval, s.BudgetMinRetries)
	if err == nil {
		b.TokensAt(simStart) // its first time, the origin of its slots: t = 0
	}
	return b, err
}

// budgetStart tells b, if any, that a call begins at t on the simulation's
// clock.
func budgetStart(b *retry.Budget, t time.Duration) {
	if b != nil {
		b.StartAt(simStart.Add(t))
	}
}

// budgetGrant reports whether b allows a retry at t on the simulation's
// clock, and counts it; no budget allows every one.
func budgetGrant(b *retry.Budget, t time.Duration) bool {
	return b == nil || b.WithdrawAt(simStart.Add(t))
}

// budgetDeposit tells b, if any, that a call ended well.
func budgetDeposit(b *retry.Budget) {
	if b != nil {
		b.Deposit()
	}
}
