// Package riverretry applies retrypolicy strategies to the jobs of a River
// queue.
//
// A River (github.com/riverqueue/river) job then has bounded attempts
// within a sliding window, backoff with uptime credit and jitter, and a
// fatal end, in place of River's fixed attempt^4 schedule and attempt
// counter.
//
// # Installing
//
//	policy, err := riverretry.New(riverretry.Config{
//		Default: retrypolicy.Default(),
//		Kinds:   map[string]retrypolicy.Strategy{"email": emailStrategy},
//	})
//	…
//	config := &river.Config{Queues: …, Workers: …}
//	if err := policy.Install(config); err != nil { … }
//	client, err := river.NewClient(driver, config)
//
// Install makes the policy the client's RetryPolicy, its ErrorHandler and
// one of its Middleware, and sets MaxAttempts to MaxAttempts when it is
// unset. All of them are needed: River asks NextRetry only when to retry,
// never whether; only an error handler or the worker can cancel a job; and
// only middleware sees when a run starts and fails. Chain an error handler
// of your own with Config.ErrorHandler.
//
// River discards a job when its attempts reach MaxAttempts, whatever the
// strategy says: keep MaxAttempts above what any strategy allows (the
// constant MaxAttempts, 32767, is the most a PostgreSQL smallint holds).
//
// # Which strategy
//
// A job's strategy is its own, a strategy descriptor under the metadata
// key MetadataStrategy, else Config.Kinds of its kind, else
// Config.Default:
//
//	client.Insert(ctx, args, &river.InsertOpts{
//		Metadata: []byte(`{"retry_strategy": {"strategy": "bounded", "max_attempts": 5}}`),
//	})
//
// An insert of a job whose metadata is not a JSON object, or whose
// strategy is invalid, fails with an error naming the kind (for a strategy,
// a *StrategyError naming the fields); nothing of the batch is inserted.
// Other keys may hold any JSON. A job that holds an invalid strategy anyway
// (written to the database by other means) runs under its kind's strategy,
// with a log line on each read; never under River's default schedule.
//
// New lints Config.Default and each of Config.Kinds (queuekit.Config.Lint)
// and logs each warning once, at
// Warn, naming the field, its fix in the Strategy's Go names: a bounded strategy that never gives up, one
// that gives up within a minute of an outage, waits that grow to days, a
// retry storm. It still returns the policy: a warning is not an error.
//
// # What a failure is
//
// The middleware times each run with the policy's clock. A run that
// returns an error or panics is a failure at the moment it ended, to the
// millisecond, and its uptime is how long it ran; a river.JobCancel, a
// river.JobSnooze, a remote cancel, or an interruption by a stopping client
// is not a failure. The decision is retrypolicy's, with the job's failures
// in the window, that uptime, and the jitter seed SeedFromString of the
// job's decimal id; it is made once per failure, by the middleware, and the
// error handler and NextRetry both act on it:
//
//   - wait: the job is retried at the decision's Due;
//   - retry now: it is retried at once;
//   - fatal: it is cancelled (state cancelled), its error a *FatalError
//     that says why and wraps the run's error. River does not pass a
//     cancelling error to error handlers; the policy passes it to
//     Config.ErrorHandler itself. After a panic, the error handler cancels
//     the job.
//
// A worker speaks the library's own vocabulary beside River's: an error
// marked retry.Permanent ends the job as a fatal decision does (the
// reason not_retryable), and one marked retry.After runs again no sooner
// than its failure plus what it asks, never cut; a wait beyond the job's
// limit (Config.WaitLimit: by default the longest delay of the strategy of
// the job's kind but at least an hour) cancels the job, the reason
// retry_after_too_long and the wait in its *FatalError. river.JobCancel
// and river.JobSnooze keep their own meaning. Each decision is logged at the Debug level, with the job, the
// attempt, the failure's instant and the run's uptime.
//
// A job is a durable retry layer: its strategy decides every failure,
// whatever happened inside the run. The loops of this library that run
// inside it (retry.Do, a retryhttp transport, under the context Work
// hands the worker) retry at one layer, and do not sleep a wait longer
// than Config.DeferAfter (5 s by default): they give up at once with the
// reason deferred, and the job runs again no earlier than its failure plus
// that wait (or its strategy's due time, whichever is later), so that a
// worker is never held by a long Retry-After. A wait a server asks beyond
// such a loop's own limit is deferred whole, never cut to that limit: a
// 429 asking 600 s of a transport capped at a second runs the job again
// 600 s after its failure, whatever the job strategy's own cap. The job's strategy still
// counts the failure, and a fatal decision still ends the job.
//
// # The record
//
// River's AttemptError.At is when a run started, and the failure being
// handled is not yet in the job's Errors when River asks NextRetry. So the
// middleware keeps a record of its own in the job's metadata under
// MetadataKey, only what deciding needs: the last attempt it saw end, and
// the failures that can still count (those in the window of the newest,
// for a bounded strategy at most its MaxAttempts), to the millisecond, in
// the binary encoding of retrypolicy.History as base64url (a failure a few
// seconds after the one before takes 3 bytes, minutes after 4; see
// queuekit.Record):
//
//	{"retrypolicy": {"seen_attempt": 3, "history": "AwIDqNixzLNonBisGwA"}}
//
// holds three failures: at 14:59:58.1, 15:00:01.2 and 15:00:04.7 UTC on
// 2 November 2026.
//
// Every read checks the record against what River keeps and the clock: a
// record of the wrong shape, an attempt seen beyond the job's, more
// failures than the job has had attempts or River has errors, a failure
// more than MaxClockSkew after the reading client's clock or the start of
// the job's current attempt, or before the job was created. Such a record
// is not trusted: the failures are read from River's errors instead (at the
// times River gives, when the runs started), with one log line naming the
// job and what was wrong, and the record is written anew at the next
// failure. A failure up to MaxClockSkew ahead counts as now, so that the
// run that just failed is always the one decided.
//
// A failure River holds that no run of the middleware saw end counts too,
// at the time River gives it: a run whose client died is rescued by
// another client's rescuer, which records the failure at the time of the
// rescue and asks NextRetry (the decision is then made there, with no
// uptime credit, as how long the run lasted is unknown); a job of a kind
// no worker handles fails before the middleware runs and is decided on by
// the error handler, its uptime measured from River's AttemptedAt. River's
// rescuer cannot cancel a job: when the strategy gives up on a rescued run,
// the job is made available at once and the middleware cancels it before
// it runs again.
//
// # Clocks
//
// Due is computed from the failure instant of the policy's clock, and
// River compares it with its own clock and the database's. Across
// machines, keep clocks within MaxClockSkew of each other: a client whose
// clock runs ahead schedules its retries late by as much, and one further
// ahead than MaxClockSkew writes records the others do not trust. NextRetry
// never returns a time past the year 9000, which every database River
// supports reads back.
package riverretry
