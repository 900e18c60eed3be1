// Package retrypolicy decides what a job scheduler does with a job that
// failed with an error a retry may fix: retry it now, wait until a given
// time, or give up (fatal).
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
// # Strategies
//
// A [Strategy] is one of three kinds:
//
//	none            never retries: the first failure is fatal
//	bounded         retries until the job has failed MaxAttempts times
//	                within the last Window (default an hour, at most 7 days)
//	unless_stopped  retries forever (the default strategy, [Default])
//
// Strategies are read from the descriptor's JSON with [Parse], written with
// [Strategy.MarshalJSON], built from ampctl-style flags with [ParseFlags] or
// [RegisterFlags], and checked with [Strategy.Validate], all under one set
// of rules. Every problem comes back at once in a [*ValidationError] that
// names each field by its JSON path or flag and matches [ErrInvalid].
// Descriptors count whole seconds; a Strategy built in Go may use whole
// milliseconds down to 1 ms, and only one in whole seconds encodes.
//
// # The window
//
// Failures count over a sliding window that ends at the newest failure, not
// at the clock: a failure at t counts iff last-window <= t <= last. The
// window is the strategy's for bounded and one hour for unless_stopped. As
// it is anchored at the failure, the fatal verdict and the due time never
// change while a job waits: every controller tick and every replica agree.
//
// # Backoff
//
// The delay owed after the window's k-th failure:
//
//	fixed                    base_delay_secs
//	exponential              base_delay_secs × multiplier^(k-1), at most max_delay_secs
//	exponential_with_jitter  as exponential, plus up to a quarter of it
//
// With the default backoff (exponential, 1 s, ×2, at most an hour) the
// delays after the first five failures are 1, 2, 4, 8 and 16 seconds.
// Delays are whole nanoseconds, floor(base × multiplier^(k-1)) computed in
// integer arithmetic, the same on every machine, within 2^-60 of the exact
// value. They saturate at 100 years; nothing overflows or goes negative.
//
// A job that ran a while before failing gets part of its backoff back: the
// uptime credit pays the steps of the backoff back from the largest, while
// the last run's uptime covers them (see the uptime credit example). Credit
// never goes below the first step and never takes a failure out of the
// window: a bounded job that keeps failing is fatal however long it runs.
//
// exponential_with_jitter adds u × credited / 4, with u in [0, 1) drawn from
// a seed the caller gives (such as [SeedFromString] of the job id) and the
// failure being decided: the same job and failure always get the same
// extra, and jobs that failed together are spread out.
//
// # Deciding
//
// [Decide] takes the strategy, the job's failure times, its last run's
// uptime, the jitter seed and the clock, and returns a [Decision]: [Fatal]
// with a [Reason], [RetryNow] once now is not before Due, or [Wait]. It is
// a pure function that does not allocate. [Compile] checks a strategy once
// into a [Policy] for many decisions, tabulating its delays up to the cap
// (at most 8.5 KiB). A scheduler that keeps failures in memory holds a
// [History] per job, made by [NewHistory] on the Policy its jobs share: it
// keeps exactly the window, 8 bytes a failure, decides in constant time,
// and saves itself as binary or JSON.
//
// # Retrying in process
//
// [Retry] runs an operation until it succeeds, deciding each retry with the
// same rules: each call is a run, its length the uptime, the moment it
// returned the failure. It gives up with a [*GiveUpError] on the strategy's
// fatal decision, a [Permanent] error, the context, a deadline the next
// retry would pass, or a spent [Budget]; a [RetryAfter] error stretches the
// wait, up to a cap.
//
// The job lifecycle (statuses, events, the table of legal moves and the
// controller's step) is in the package
// github.com/retrypolicy/retrypolicy/lifecycle.
//
// # Concurrency
//
// Strategy, Backoff and Decision are plain values, and a Policy is
// immutable: all are safe to share between goroutines. Decide only reads
// the failure slice, so goroutines may decide on one slice at once as long
// as none writes to it. A History and a Budget are safe for concurrent use.
package retrypolicy
