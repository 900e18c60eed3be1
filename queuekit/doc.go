// Package queuekit holds what every queue adapter of retrypolicy needs besides its queue.
//
// An adapter (riverretry for River, and one for any other queue) is the
// glue between a queue's hooks and the decision; what does not depend on
// the queue lives here, once:
//
//   - [Policies]: the strategies of a queue's jobs, a default and one for
//     each kind, compiled at start and linted for the traps a crash loop
//     shows ([Config.Lint]); a job's own strategy, carried with it as a
//     descriptor, compiled once and cached by its bytes.
//   - [Settle]: the one call an adapter makes for a failed run, returning
//     what it acts on: the decision on the job's failures ([Decide]), then
//     what the run's error changes in it ([Judge], on retry.ReadMarks: a
//     permanent error gives the job up; a wait a server asked, or a loop
//     in the run deferred, is waited in full, never cut, and beyond the
//     job's limit, [Policies.WaitLimit], gives the job up as
//     retry.RetryAfterTooLong), and the failures the job's record keeps
//     ([Keep]).
//   - [Record]: what an adapter keeps of a job between its runs (the last
//     attempt it saw end and the failures that can still count), in the
//     binary encoding of the root History, as bytes ([Record.AppendBinary])
//     or inside a job's JSON metadata ([ReadMetadata], [Record.AppendJSON]).
//   - [Seed]: the jitter seed of a job with a numeric id, computed without
//     allocating.
//   - [Quote]: a name from outside (a job's kind) made safe for a message.
//   - The dead-letter kit, for what follows a give-up: a [Driver] each
//     engine implements (read a page of dead letters, send one back,
//     remove one), and over it the one loop, [DeadLetters]: dead letters
//     listed, counted and purged by a [Filter], and replayed at a rate
//     ([DeadLetters.Replay]) so that two replays at once, or one
//     interrupted and run again, send each letter once. Package
//     deadlettertest is the suite every Driver passes.
//   - [Pacing]: the one rule a replay is paced by.
//
// The attempt log that adapters write for replay is package attemptlog.
//
// Everything here is safe for concurrent use but a [Pacing], which counts
// its sends (one a replay); none of it logs but
// Config.LogLint, to the logger it is given: an adapter reports what it is
// given in its own logger's words.
package queuekit
