// Package fixes holds strategies whose lint finding one field's value
// fixes.
package fixes

import "time"

import "github.com/retrypolicy/retrypolicy"

var (
	neverFatal = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5, Window: time.Minute, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 30 * time.Second}}                                                    // want `^never-fatal: `
	uncapped   = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 30, Window: 7 * 24 * time.Hour, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: time.Second, Multiplier: 10}}                           // want `^never-fatal: ` `^no-cap: `
	capped     = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 30, Window: 7 * 24 * time.Hour, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: time.Second, Multiplier: 10, MaxDelay: 48 * time.Hour}} // want `^never-fatal: `
)

var _ = []any{neverFatal, uncapped, capped}
