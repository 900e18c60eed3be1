// Package retry runs an operation in process until it succeeds, under a
// retrypolicy strategy.
//
// [Do] calls the operation and decides each retry as a scheduler would:
// each call is a run, its length the uptime, the moment it returned the
// failure, and the wait is what retrypolicy.Decide makes of the failures
// so far. So a bounded strategy gives up at max_attempts failures within
// its window, and an operation that ran an hour before failing is retried
// almost at once.
//
//	body, err := retry.Do(ctx, strategy, func(ctx context.Context) ([]byte, error) {
//		return fetch(ctx, url) // retry.Permanent(err) for what must not be retried
//	}, retry.WithBudget(budget))
//
// When it gives up, Do returns a [*GiveUpError] that says why (its
// [Reason]): a fatal decision, an error marked [Permanent], the context
// done, an attempt retried below, a wait a queue's job takes over, a retry
// due past the context's deadline, a server asking for a wait beyond the
// loop's limit, a spent [Budget], or a call its [Throttle] rejected
// unsent ([WithThrottle]). An error marked with [After] waits at
// least what a server asked: never sooner. The
// options ([Option]) observe each retry and the end, share a budget, bound
// each attempt, fix the jitter's seed or make it full; a list gives each
// setting of one value once (a second is refused, naming it), while the
// hooks accumulate. [New] prepares a [Loop] once, its
// strategy compiled and its options applied, for the many calls of a
// worker under one strategy.
//
// # Retrying at one layer
//
// Retries multiply across layers, so the loops of this library retry at
// one. Do calls the operation under a context that is its attempt; a loop
// that runs under it and gives up after retrying reports to it ([Report]
// does so for code of the caller's), and Do then gives up at once with
// [RetriedBelow] rather than retry again ([WithNestedRetries] turns this
// off). Layers that are not loops use [StartAttempt]; a queue's job takes
// long waits over with [DeferAfter], and reads them with [DeferredWait].
//
// # Hedged calls
//
// A retry answers a failure; a hedge answers slowness. [Hedge] and
// [Loop.Hedge], given [WithHedging], send another attempt when the last
// has not answered within a delay, and the first answer that ends the
// call wins; the others are cancelled and waited for. Each hedge is paid
// for from the call's budget as a retry is, so that when the latency tail
// shifts the extra load stays bounded. Do never hedges: its operation
// never runs twice at once.
//
// Do keeps nothing between calls and starts no goroutine: it is safe to
// call from many goroutines at once, and its first try allocates one
// object, the context it hands the operation (each retry one more, its
// own). A Budget is safe for concurrent use.
package retry
