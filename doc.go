// Package retrypolicy decides what a job scheduler does with a job that
// failed with an error a retry may fix: retry it now, wait until a given
// time, or give up (fatal).
//
// # Strategies
//
// A [Strategy] is one of three kinds:
//
//	none            never retries: the first failure is fatal
//	bounded         retries until the job has failed MaxAttempts times
//	                within the last Window (default one hour, at most 7 days)
//	unless_stopped  retries forever (the default strategy)
//
// Strategies are read from and written to the descriptor's JSON with [Parse]
// and [Strategy.MarshalJSON], built from ampctl-style flags with [Flags], and
// checked with [Strategy.Validate]. Every problem comes back at once in a
// [*ValidationError] that names each field by its JSON path or flag and
// matches [ErrInvalid].
//
// # The window
//
// Failures count over a sliding window that ends at the newest failure, not
// at the clock: a failure at t counts iff last-window <= t <= last. The
// window is the strategy's for bounded and one hour for unless_stopped. As it
// is anchored at the failure, the fatal verdict and the due time never change
// while a job waits: every controller tick and every replica agree.
//
// # Backoff
//
// The delay owed after the window's k-th failure:
//
//	fixed                    base_delay_secs
//	exponential              base_delay_secs × multiplier^(k-1), up to max_delay_secs
//	exponential_with_jitter  as exponential, plus up to a quarter of the delay
//
// With the default backoff (exponential, 1 s, ×2, up to an hour) the delays
// after the first five failures are 1, 2, 4, 8 and 16 seconds. Delays
// saturate at [MaxDelay] (100 years); nothing overflows or goes negative.
//
// # Uptime credit
//
// A job that ran a while before failing gets part of its backoff back. Each
// step of the delay is paid back by the time the job ran, starting from the
// largest. With the default backoff, a job with 4 failures in the window owes
// 8 s. If its last run lasted 10 s, that pays the 8 and leaves 2, short of
// the next step (4), so it waits 4 s; a 15 s run pays 8, 4 and 2, and it
// waits 1 s. Credit never goes below the first step and never takes a failure
// out of the window: a bounded job that keeps failing is fatal however long
// it runs. See [Backoff.Credited].
//
// # Jitter
//
// exponential_with_jitter adds u × credited / 4, with u in [0, 1) derived
// from a seed the caller gives (a hash of the job id, see [SeedFromString])
// and the failure being decided. The same job and failure always get the same
// extra; different jobs that failed together are spread out. No global random
// source is used.
//
// # Deciding
//
// [Decide] takes the strategy, the job's failure times, its last run's uptime,
// the jitter seed and the clock, and returns a [Decision]: [Fatal] with a
// [Reason], [RetryNow] once now is not before Due, or [Wait]. It is a pure
// function that does not allocate; Strategy values are safe to share between
// goroutines. A scheduler that keeps failures in memory can use a [History]
// instead: it keeps only what decisions need and counts in O(log n).
//
// # Concurrency
//
// Strategy, Backoff, Decision and Status are plain values, safe to share
// between goroutines. Decide only reads its Input's slice, so goroutines may
// decide on one history at once as long as none writes to it. A [History] is
// safe for concurrent use. A [Flags] value belongs to one command line and is
// not.
//
// # Lifecycle
//
// A job's [Status] moves on [Event]s as the lifecycle table says, and [Next]
// refuses every other move with a [*TransitionError]. [Step] is the
// controller's move for a job in ERROR: FATAL when no retries are left,
// SCHEDULED when the backoff has passed, ERROR otherwise. [ParentStatus]
// gives a deployment's status from its children's.
package retrypolicy
