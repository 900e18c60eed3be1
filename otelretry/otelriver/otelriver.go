// Package otelriver records what riverretry's policy does, through
// otelretry's instruments.
//
// Its hooks go in a River client's riverretry policy:
//
//	in, err := otelretry.New()
//	policy, err := riverretry.New(riverretry.Config{Kinds: kinds, Hooks: otelriver.Hooks(in)})
//
// Each decision on a failed job is a retrypolicy.decisions (by action,
// and reason when fatal) and a retry with its wait, or a give-up by
// reason; each record repaired and each insert refused is counted; all by
// the job's kind. It is a package of its own so that otelretry's users
// without River do not build River.
package otelriver

import (
	"github.com/retrypolicy/retrypolicy/otelretry"
	"github.com/retrypolicy/retrypolicy/riverretry"
)

// Hooks returns riverretry hooks that record through in.
func Hooks(in *otelretry.Instruments) riverretry.Hooks {
	return riverretry.Hooks{Decided: in.RiverDecided, Repaired: in.RiverRepaired, Refused: in.RiverRefused}
}
