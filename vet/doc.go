// Package vet finds retry traps in Go code before it runs: the checks of retrypolicy's lint, at go vet time.
//
// Analyzer reports, each diagnostic opening with its finding's name:
//
//   - invalid: a retrypolicy.Strategy or Backoff composite literal whose
//     fields are constants, retrypolicy.Parse([]byte(c)) of a constant
//     string, or retrypolicy.ParseFlags of a []string literal of
//     constants, that the library refuses, in the library's own words;
//   - lint's warnings (never-fatal, gives-up-fast, zero-delay,
//     shrinking-delays, no-cap, …) for such a constant strategy, under the
//     controller's one-minute tick; for one given to retry.Do or
//     retryhttp.NewTransport, only never-fatal, zero-delay and no-cap, with
//     no tick (an in-process loop that gives up in seconds is fine). Where
//     one field's value fixes the finding (MaxAttempts, Backoff.MaxDelay),
//     the diagnostic carries it as a suggested fix;
//   - nested-retry: a retry.Do with WithNestedRetries() (the one-layer
//     rule off) whose operation runs another loop of the library, directly
//     or through functions of any package: a retry.Do, a retryhttp
//     transport, or an http.Client over one. It is reported at the call in
//     the operation that runs the inner loop, with the attempts the two
//     multiply to. With the rule on, nested loops retry at one layer and
//     draw nothing;
//   - ignored-context: an operation of retry.Do whose context parameter is
//     unnamed or never referenced: the loop cannot stop a running attempt,
//     and a loop below it cannot report to it;
//   - foreign-option: an adapter's own option (one an AdapterSetting of
//     package retry makes, such as retryhttp.WithClassifier) given to
//     retry.Do, retry.New or a Loop's With, or to a function of another
//     adapter's package (retryhttp.NewTransport given a retrygrpc option):
//     it compiles, as every option is a retry.Option, and is refused each
//     time it runs. An option list spread with ... is not followed;
//   - hedging-in-do: retry.WithHedging given to retry.Do, or the Do of a
//     Loop made with it (by retry.New, or by With, from such a loop or
//     given it) and held by a variable assigned once: the loop refuses it
//     each time it runs. The message is the library's own refusal, asked
//     of retry.Do and a Loop's Do, and names retry.Hedge and Loop.Hedge,
//     whose op runs concurrently and must return once its context ends.
//
// Every check uses the library's own rules (Strategy.Validate, Parse,
// ParseFlags, plan.LintGo, and what retry.Do and a Loop's Do refuse), not a
// copy of them.
//
// A comment //retrypolicy-vet:ignore on the line of a finding, or on the
// line above it, silences that line; followed by names
// (//retrypolicy-vet:ignore nested-retry,no-cap) it silences those only.
//
// The command retrypolicy-vet (vet/cmd/retrypolicy-vet) runs it alone, or
// under go vet: go vet -vettool=$(which retrypolicy-vet) ./...
package vet
