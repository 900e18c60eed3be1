// Package retrypolicy decides what a scheduler does with a failed job.
//
// Each decision is one of three: retry it now, wait until a given time, or
// give up (fatal).
//
// A scheduler compiles each strategy once and decides on every failed job:
//
//	strategy, err := retrypolicy.Parse([]byte(`{"strategy": "bounded", "max_attempts": 5}`))
//	if err != nil {
//		return err // every problem, each naming its field
//	}
//	policy, err := retrypolicy.Compile(strategy) // once, shared by every job of the strategy
//	if err != nil {
//		return err
//	}
//	d, err := policy.Decide(failureTimes, lastRunUptime, retrypolicy.SeedFromString(jobID), now)
//	// d.Action is Fatal, RetryNow or Wait; d.Due says when.
//
// A worker retries a call in process under the same rules, with package
// retry:
//
//	body, err := retry.Do(ctx, retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5},
//		func(ctx context.Context) ([]byte, error) { return fetch(ctx, url) },
//		retry.WithBudget(budget)) // retry.DefaultBudget(), shared by the workers
//
// # Strategies
//
//	none            never retries: the first failure is fatal
//	bounded         retries until the job has failed MaxAttempts times
//	                within the last Window (default an hour, at most 7 days)
//	unless_stopped  retries forever (the default strategy, [Default])
//
// A [Strategy] is read from JSON with [Parse], written with
// [Strategy.MarshalJSON], built from ampctl-style flags with [ParseFlags],
// or built in Go, where a zero field means its default. One set of rules
// checks them all; every problem comes back at once in a
// [*ValidationError] that matches [ErrInvalid].
//
// Failures count over a window that ends at the newest failure, not at the
// clock, so that the verdict and the due time never change while a job
// waits. The backoff owes base × multiplier^(k-1) after the window's k-th
// failure, at most the cap (fixed: base); exponential_with_jitter adds up to
// a quarter, drawn from the caller's seed. A job that ran a while before
// failing gets uptime credit: its run pays back steps of the backoff from
// the largest. [Decide] and [Policy.Decide] are pure and do not allocate; a
// [History] keeps one job's failures and last uptime in memory.
//
// Package retry's Do (github.com/retrypolicy/retrypolicy/retry) gives up
// with a *GiveUpError on a fatal decision, an error marked Permanent, the
// context, a deadline the next retry would pass, or a spent Budget; an
// error marked with After stretches the wait, up to a cap. The job
// lifecycle (statuses, events, legal moves, the controller's step) is in
// github.com/retrypolicy/retrypolicy/lifecycle. The rules in full are in
// docs/semantics.md of this module.
//
// Strategy, Backoff and Decision are plain values and a Policy is
// immutable: all are safe to share between goroutines. A History is safe
// for concurrent use.
package retrypolicy
