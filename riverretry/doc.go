// Package riverretry applies retrypolicy strategies to the jobs of a River
// queue (github.com/riverqueue/river): bounded attempts within a sliding
// window, backoff with uptime credit and jitter, and a fatal end, in place
// of River's fixed attempt^4 schedule and attempt counter.
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
// An insert of a job whose strategy is invalid fails with a *StrategyError
// naming the fields; nothing of the batch is inserted. A job that holds an
// invalid strategy anyway (written to the database by other means) gets
// River's default schedule and a log line on each failure.
//
// # What a failure is
//
// The middleware times each run with the policy's clock. A run that
// returns an error or panics is a failure at the moment it ended, and its
// uptime is how long it ran; a river.JobCancel, a river.JobSnooze, a remote
// cancel, or an interruption by a stopping client is not a failure. The
// decision is retrypolicy's, with the job's failures in the window, that
// uptime, and the jitter seed SeedFromString of the job's decimal id; it is
// made once per failure, by the middleware, and the error handler and
// NextRetry both act on it:
//
//   - wait: the job is retried at the decision's Due;
//   - retry now: it is retried at once;
//   - fatal: it is cancelled (state cancelled), its error a *FatalError
//     that says why and wraps the run's error. River does not pass a
//     cancelling error to error handlers; the policy passes it to
//     Config.ErrorHandler itself. After a panic, the error handler cancels
//     the job.
//
// River's AttemptError.At is when a run started, and the failure being
// handled is not yet in the job's Errors when River asks NextRetry. So the
// middleware keeps its own record in the job's metadata under MetadataKey:
// the failures that can still count (the window of the newest), each with
// its attempt and instant, the last attempt it saw end, the last run's
// uptime and the decision, for instance:
//
//	{"retrypolicy": {"seen_attempt": 3,
//	  "failures": [{"attempt": 2, "at": "2026-11-02T15:00:01.2Z"}, {"attempt": 3, "at": "2026-11-02T15:00:04.7Z"}],
//	  "last_uptime_secs": 0.5, "decision": {"action": "wait", …}}}
//
// A failure River holds that no run of the middleware saw end counts too,
// at the time River gives it: a run whose client died is rescued by
// another client's rescuer, which records the failure at the time of the
// rescue and asks NextRetry (the decision is then made there, with no
// uptime credit, as how long the run lasted is unknown); a job of a kind
// no worker handles fails before the middleware runs and is decided on by
// the error handler, its uptime measured from River's AttemptedAt. River's rescuer cannot cancel a job:
// when the strategy gives up on a rescued run, the job is made available at
// once and the middleware cancels it before it runs again.
//
// # Clocks
//
// Due is computed from the failure instant of the policy's clock, and
// River compares it with its own clock and the database's. Across
// machines, keep clocks synchronized: a job is never fetched before its
// scheduled time by the database's clock.
package riverretry
