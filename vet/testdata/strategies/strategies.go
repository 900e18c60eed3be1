// Package strategies holds strategies in Go code, constant and not.
package strategies

import (
	"context"
	"net/http"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/queuekit"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

// Invalid strategies, as Validate, Parse and ParseFlags say.
var (
	noAttempts  = retrypolicy.Strategy{Kind: retrypolicy.Bounded}                                                        // want `^invalid: retrypolicy: MaxAttempts: required when Kind is bounded$`
	badBackoff  = retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: time.Second, MaxDelay: time.Millisecond} // want `^invalid: .*Backoff.MaxDelay: must be at least Backoff.BaseDelay \(1s\), got 1ms$`
	badJSON, _  = retrypolicy.Parse([]byte(`{"strategy": "bounded", "max_atempts": 5}`))                                 // want `^invalid: .*max_atempts: unknown field; did you mean max_attempts\?$`
	badFlags, _ = retrypolicy.ParseFlags([]string{"--retry-strategy", "bounded"})                                        // want `^invalid: retrypolicy: --retry-max-attempts is required when --retry-strategy=bounded$`
)

// Traps lint finds under a controller's minute.
var (
	neverFatal = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5, Window: time.Minute, // want `^never-fatal: bounded never gives up when every run crashes under a 1m tick: .*; or set MaxAttempts to at most 2`
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 30 * time.Second}}
	shrinking = retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, // want `^shrinking-delays: multiplier 0.5 is below 1`
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: time.Hour, Multiplier: 0.5}}
	neverFatalJSON, _ = retrypolicy.Parse([]byte(`{"strategy": "bounded", "max_attempts": 5, "window_secs": 60, "backoff": {"kind": "fixed", "base_delay_secs": 30}}`)) // want `^never-fatal: .*short of max_attempts 5`
)

// Fine: the default, strategies whose fields come from variables, and
// one that gives up in minutes.
var (
	standard    = retrypolicy.Default()
	attempts    = 5
	fromVars    = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: attempts}
	good        = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 10, Window: time.Hour}
	goodJSON, _ = retrypolicy.Parse([]byte(`{"strategy": "unless_stopped"}`))
)

// Strategies of a queue, which runs a retry when it is due: linted with no
// tick, every warning.
var (
	//retrypolicy-vet:ignore gives-up-fast
	quiet  = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Second}}
	brisk  = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Second}} // want `^gives-up-fast: gives up 2s after its first failure`
	queued = queuekit.Config{
		Default: retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 2, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Second}}, // want `^gives-up-fast: gives up 1s after its first failure`
		Kinds:   map[string]retrypolicy.Strategy{"a": brisk, "b": quiet, "c": {Kind: retrypolicy.Bounded, MaxAttempts: 10, Window: 24 * time.Hour}},
	}
)

// built is a strategy made at run time.
func built(n int) retrypolicy.Strategy {
	s := retrypolicy.Strategy{Kind: retrypolicy.Bounded}
	s.MaxAttempts = n
	return s
}

// fetch runs in-process loops: giving up in seconds is fine there.
func fetch(ctx context.Context) error { // want fetch:`runs retry.Do \(3 attempts\)`
	_, err := retry.Do(ctx, retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 100 * time.Millisecond}},
		func(ctx context.Context) (int, error) { return 0, ctx.Err() })
	if err != nil {
		return err
	}
	quick := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 2}
	_, err = retryhttp.NewTransport(http.DefaultTransport, quick)
	if err != nil {
		return err
	}
	endless := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 30, Window: 7 * 24 * time.Hour, // want `^never-fatal: bounded never gives up when every run crashes: ` `^no-cap: no Backoff.MaxDelay: when every run crashes the waits grow to 11d13h46m40s`
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: time.Second, Multiplier: 10}}
	_, err = retry.Do(ctx, endless, func(ctx context.Context) (int, error) { return 0, ctx.Err() })
	return err
}

var _ = []any{queued, noAttempts, badBackoff, badJSON, badFlags, neverFatal, shrinking, neverFatalJSON, standard, fromVars, good, goodJSON, built}
