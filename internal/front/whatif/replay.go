package whatif

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/retrypolicy/retrypolicy/fleet"
)

// ReplayOptions are replay's options: flags of the command, query
// parameters of the server's /v1/replay.
type ReplayOptions struct {
	TickOption
	// MaxRuns is the most attempts each candidate's replay makes.
	MaxRuns WholeNumber
}

// Define defines the options as flags of fs, with their defaults.
func (o *ReplayOptions) Define(fs *flag.FlagSet) {
	o.TickOption.Define(fs, "")
	o.MaxRuns = fleet.DefaultMaxReplayed
	fs.Var(&o.MaxRuns, "max-runs", "the most attempts each strategy's replay makes, `N`; a replay stops there and says it was truncated")
}

// Check returns the options out of range, MaxRuns beyond most.
func (o *ReplayOptions) Check(most int) []Option {
	errs := o.TickOption.Check()
	if o.MaxRuns < 1 || int(o.MaxRuns) > most {
		errs = append(errs, Option{"max-runs", fmt.Sprintf("must be between 1 and %d, got %d", most, o.MaxRuns)})
	}
	return errs
}

// Replayed is the log as recorded and each candidate's replay of it.
type Replayed struct {
	Names   []string             // "recorded", then each candidate's
	Results []fleet.ReplayResult // in the same order
}

// Run replays log under each candidate; ctx bounds the replays. A replay
// stopped by ctx ends the run with its error.
func (o *ReplayOptions) Run(ctx context.Context, log *fleet.Log, candidates []Named) (Replayed, error) {
	out := Replayed{Names: []string{"recorded"}, Results: []fleet.ReplayResult{log.Recorded()}}
	r := fleet.Replay{Tick: time.Duration(o.Tick), MaxAttempts: int(o.MaxRuns)}
	for _, c := range candidates {
		res, err := r.Run(ctx, log, c.Strategy)
		if err != nil {
			return out, err
		}
		out.Names, out.Results = append(out.Names, c.Name), append(out.Results, res)
	}
	return out, nil
}
