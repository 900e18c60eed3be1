package riverretry

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/queuekit"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

const (
	// MetadataStrategy is the job metadata key of a job's own strategy, a
	// strategy descriptor object: {"retry_strategy": {"strategy":
	// "bounded", "max_attempts": 5}}.
	MetadataStrategy = "retry_strategy"

	// MetadataKey is the job metadata key under which the policy keeps a
	// job's record: the failures that can still count.
	MetadataKey = "retrypolicy"

	// MaxAttempts is the River MaxAttempts to configure with the policy:
	// the most a PostgreSQL smallint holds. River discards a job at its
	// MaxAttempts without asking the policy, so that it is the strategy
	// that decides when a job gives up.
	MaxAttempts = 32767
)

// Config configures a Policy.
type Config struct {
	// Default is the strategy of a job without its own (MetadataStrategy)
	// and without one for its kind in Kinds. The zero Strategy means
	// retrypolicy.Default().
	Default retrypolicy.Strategy

	// Kinds maps a job kind to the strategy of its jobs that do not carry
	// their own.
	Kinds map[string]retrypolicy.Strategy

	// ErrorHandler, if not nil, is called after the policy for every error
	// and panic of a job, and may cancel the job too. It is also called for
	// the error on which the strategy gives up, which River does not pass
	// to error handlers as it cancels the job.
	ErrorHandler river.ErrorHandler

	// Logger receives the policy's warnings (a job whose strategy is
	// invalid, a rescued job given up) and, at the Debug level, each
	// decision. Nil means the river.Config's Logger once Install has put
	// the policy in it, and slog.Default() until then or without one.
	Logger *slog.Logger

	// Now is the policy's clock; nil means time.Now. A test that stubs
	// River's clock (river.Config.Test.Time) gives the policy the same one.
	Now func() time.Time

	// Hooks are told what the policy does, to count it (otelretry's
	// metrics are made so); riverretry depends on no metrics library.
	Hooks Hooks

	// DeferAfter is the longest wait a retry loop of this library (retry.Do,
	// a retryhttp transport) makes inside a job's run: a loop whose next
	// wait is longer gives up at once (retry.Deferred) and the job runs
	// again no earlier than its failure plus that wait, so that a worker is
	// never held by a long Retry-After. Zero is DefaultDeferAfter; a
	// negative one defers nothing.
	DeferAfter time.Duration

	// WaitLimit is the job's limit: the longest wait a server may ask (a
	// Retry-After a retry loop in the run read, an error marked
	// retry.After), or a loop in the run defer, before the job runs again.
	// The job never runs sooner than asked: a longer wait is not cut, but
	// makes the job fatal (retry_after_too_long), cancelled with a
	// *FatalError carrying the wait, which the job's record keeps too.
	// Zero is the longest delay of the strategy of the job's kind (Kinds,
	// else Default; a fixed backoff's delay, an exponential one's
	// MaxDelay) but at least an hour, and an hour when it has no cap
	// (retry.WaitLimit for a durable layer); a job's own strategy
	// (MetadataStrategy) does not change it.
	WaitLimit time.Duration
}

// DefaultDeferAfter is Config.DeferAfter's default.
const DefaultDeferAfter = 5 * time.Second

// Hooks are functions the policy calls as it works, each with the job's
// kind; a nil one is not called. They are called from River's goroutines
// at once, so they must be fast and safe for concurrent use.
type Hooks struct {
	// Decided is called once for each failure of a job, with the decision
	// the strategy makes on it (a retry now, a wait, or fatal: the job is
	// then cancelled) and, when the job is given up, why: the fatal
	// decision's reason, or retry.NotRetryable for an error marked
	// retry.Permanent (the zero Reason otherwise). A failure River reports outside
	// a run (a run rescued after its process died, a failure before the
	// middleware) is reported when River asks NextRetry for its retry, and
	// not again when the run after it acts on that decision.
	Decided func(ctx context.Context, kind string, d retrypolicy.Decision, gaveUp retry.Reason)
	// Repaired is called for each job record the policy did not trust and
	// read from River's errors instead.
	Repaired func(ctx context.Context, kind string)
	// Refused is called for each insert the policy refused for its job's
	// metadata or strategy.
	Refused func(ctx context.Context, kind string)
}

// Policy applies retrypolicy strategies to River jobs. Install it with
// Install, which makes it the client's retry policy (NextRetry), its error
// handler (HandleError, HandlePanic) and its middleware (Work for workers,
// InsertMany for inserts); each alone is not enough. A Policy is safe for
// concurrent use, and one Policy serves any number of clients.
type Policy struct {
	policies *queuekit.Policies
	next     river.ErrorHandler
	hooks    Hooks
	logger   *slog.Logger
	// ownLogger is whether Config gave the logger; without it, Install
	// takes River's.
	ownLogger bool
	now       func() time.Time
	// setMetadata is river.MetadataSet, or a benchmark's stand-in for
	// River's encoding of the value outside a job's run.
	setMetadata func(ctx context.Context, key string, value any) error
	pending     pending
	deferAfter  time.Duration
}

var (
	_ river.ClientRetryPolicy       = (*Policy)(nil)
	_ river.ErrorHandler            = (*Policy)(nil)
	_ rivertype.WorkerMiddleware    = (*Policy)(nil)
	_ rivertype.JobInsertMiddleware = (*Policy)(nil)
)

// New returns a Policy for cfg. It returns an error naming the kind and
// the field for an invalid strategy in cfg, and logs at Warn, once, each
// trap that plan.LintGo finds in its strategies.
func New(cfg Config) (*Policy, error) {
	strategies := queuekit.Config{Default: cfg.Default, Kinds: cfg.Kinds, WaitLimit: cfg.WaitLimit}
	policies, err := queuekit.NewPolicies(strategies)
	if err != nil {
		return nil, fmt.Errorf("riverretry: %w", err)
	}
	p := &Policy{
		policies:    policies,
		next:        cfg.ErrorHandler,
		hooks:       cfg.Hooks,
		deferAfter:  cmp.Or(cfg.DeferAfter, DefaultDeferAfter),
		logger:      cfg.Logger,
		now:         cfg.Now,
		setMetadata: river.MetadataSet,
	}
	if p.logger == nil {
		p.logger, p.ownLogger = slog.Default(), false
	} else {
		p.ownLogger = true
	}
	if p.now == nil {
		p.now = time.Now
	}
	// The lint has no tick: River runs a retry when it is due (within its
	// scheduler's few seconds), not on a controller's minute.
	strategies.LogLint(p.logger, "riverretry:", "none: linted with each retry when due, as River runs it")
	return p, nil
}

// Install makes p the retry policy, the error handler and a middleware of
// a River client configuration, and raises its MaxAttempts to MaxAttempts
// when it is not set. It returns an error, and changes nothing, when cfg
// already has another retry policy or error handler: chain an error
// handler with Config.ErrorHandler. A policy made without a Logger logs to
// cfg's Logger from then on, when it has one. Install it before the client
// starts.
func (p *Policy) Install(cfg *river.Config) error {
	if cfg.RetryPolicy != nil && cfg.RetryPolicy != river.ClientRetryPolicy(p) {
		return errors.New("riverretry: Install: the river.Config already has a RetryPolicy")
	}
	if cfg.ErrorHandler != nil && cfg.ErrorHandler != river.ErrorHandler(p) {
		return errors.New("riverretry: Install: the river.Config already has an ErrorHandler; give it to riverretry.Config.ErrorHandler to chain it")
	}
	cfg.RetryPolicy, cfg.ErrorHandler = p, p
	if !p.ownLogger && cfg.Logger != nil {
		p.logger = cfg.Logger // before the client starts: River's goroutines see it
	}
	installed := false
	for _, m := range cfg.Middleware {
		installed = installed || m == rivertype.Middleware(p)
	}
	if !installed {
		cfg.Middleware = append(cfg.Middleware, p)
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = MaxAttempts
	}
	return nil
}

// IsMiddleware marks p as River middleware.
func (p *Policy) IsMiddleware() bool { return true }

// Work is the worker middleware: it times each run of a job, and when the
// run fails (an error or a panic) it decides on the failure once: it
// records the failure in the job's metadata (MetadataKey), keeps the
// decision for HandleError and NextRetry, and, when the strategy gives up
// on an error, returns river.JobCancel of a *FatalError wrapping it, so
// that River records the reason and cancels the job. An error marked
// retry.Permanent ends the job so too; one marked
// retry.After waits at least what it asks, within the cap.
// Cancels, snoozes and interruptions by a stopping client are not
// failures. Before a run, failures River holds that no run of the
// middleware saw end (a run rescued after its process died) are decided
// on first: a job they make fatal is cancelled without running.
func (p *Policy) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	var room [16]int64
	pol, rec, added := p.read(ctx, reading{job: job, now: p.now(), room: room[:]})
	if added > 0 {
		slices.Sort(rec.Failures)
		n := len(rec.Failures) - 1
		// NextRetry decided on these failures and reported it when River
		// asked it for their retry: this acts on them, and reports nothing.
		newest := time.Unix(0, rec.Failures[n])
		s := queuekit.Settle(p.failure(run{job: job, pol: pol, rec: queuekit.Record{Failures: rec.Failures[:n]}, start: newest}, newest))
		if s.Action == retrypolicy.Fatal {
			rec.Seen, rec.GaveUp, rec.Failures = job.Attempt, s.GaveUp, s.Kept
			p.setRecord(ctx, rec)
			return river.JobCancel(&FatalError{Decision: s.Decision, Reason: s.GaveUp, Err: errors.New(lastError(job))})
		}
	}
	r := run{job: job, pol: pol, rec: rec, start: p.now()}
	ctx = retry.DeferAfter(ctx, p.deferAfter)
	ended := false
	defer func() {
		if !ended { // a panic, which goes on to River after this
			p.failed(ctx, r, nil)
		}
	}()
	err := doInner(ctx)
	ended = true
	if err == nil || !isFailure(ctx, err) {
		return err
	}
	return p.failed(ctx, r, err)
}

// run is a run of a job under the policy: the job, its strategy's policy,
// its record before the run, and when the run started.
type run struct {
	job   *rivertype.JobRow
	pol   *retrypolicy.Policy
	rec   queuekit.Record
	start time.Time
}

// failed decides on the failure of the run r, records it, and returns the
// error for River: err, or river.JobCancel of it when the job ends. err is
// nil for a panic.
func (p *Policy) failed(ctx context.Context, r run, err error) error {
	job, rec := r.job, r.rec
	in := p.failure(r, p.now())
	in.Marks = retry.ReadMarks(err)
	s := queuekit.Settle(in)
	p.logDecision(ctx, job, s)
	rec.Seen, rec.Failures = job.Attempt, s.Kept
	if s.Action == retrypolicy.Fatal {
		rec.GaveUp, rec.Asked = s.GaveUp, s.Asked
	}
	p.setRecord(ctx, rec)
	if s.Action == retrypolicy.Fatal && err != nil {
		if p.next != nil {
			p.next.HandleError(ctx, job, err)
		}
		return river.JobCancel(&FatalError{Decision: s.Decision, Reason: s.GaveUp, Wait: s.Asked, Err: err})
	}
	p.pending.put(job, s.Decision, s.At)
	return err
}

// failure is the failure of the run r, which ended at end, as
// queuekit.Settle takes it: after the failures r's record holds, with the
// uptime from r's start.
func (p *Policy) failure(r run, end time.Time) queuekit.Failure {
	return queuekit.Failure{Policy: r.pol, Failures: r.rec.Failures, Ended: end, Uptime: end.Sub(r.start), Seed: queuekit.Seed(r.job.ID),
		Limit: p.policies.WaitLimit(r.job.Kind)}
}

// setRecord writes rec, which keeps of its failures only those that can
// count again (queuekit.Settle), into the job's metadata when the attempt
// ends.
func (p *Policy) setRecord(ctx context.Context, rec queuekit.Record) {
	if err := p.setMetadata(ctx, MetadataKey, json.RawMessage(rec.AppendJSON(nil))); err != nil {
		p.logger.ErrorContext(ctx, "riverretry: cannot record the failure in the job's metadata", slog.String("error", err.Error()))
	}
}

// reading is a read of a job's record: the job, the time of the read, and
// room for its failures.
type reading struct {
	job  *rivertype.JobRow
	now  time.Time
	room []int64
}

// read returns what deciding on the failures of rd's job at rd.now needs:
// its policy, its record, checked against River's columns (and repaired
// from them, with a log line, when it cannot be trusted), with the
// failures the middleware never saw appended to it, and how many those
// were. The failures are appended to rd.room.
func (p *Policy) read(ctx context.Context, rd reading) (*retrypolicy.Policy, queuekit.Record, int) {
	job := rd.job
	m := readMetadata(job.Metadata)
	pol, err := p.policyFor(job.Kind, m.Strategy)
	if err != nil {
		pol = p.policies.Kind(job.Kind)
		p.logger.WarnContext(ctx, "riverretry: the job's strategy is invalid; its kind's strategy applies",
			slog.Int64("job_id", job.ID), slog.String("kind", job.Kind), slog.String("error", err.Error()))
	}
	rec, problem := checkRecord(rd, m, queuekit.MostKept(pol))
	if problem != "" {
		p.logger.WarnContext(ctx, "riverretry: "+problem+"; its failures are read from River's errors instead",
			slog.Int64("job_id", job.ID), slog.String("kind", job.Kind))
		if p.hooks.Repaired != nil {
			p.hooks.Repaired(ctx, job.Kind)
		}
	}
	added := unseen(job, &rec, rd.now)
	return pol, rec, added
}

// isFailure reports whether a run that returned err failed: not a cancel,
// a snooze, a remote cancel or an interruption by a stopping client (a
// context cancelled with a cause of its own, which the run returned).
func isFailure(ctx context.Context, err error) bool {
	var cancel *rivertype.JobCancelError
	var snooze *rivertype.JobSnoozeError
	if errors.As(err, &cancel) || errors.As(err, &snooze) {
		return false
	}
	if ctx.Err() != nil {
		cause := context.Cause(ctx)
		if cause != ctx.Err() && (errors.Is(cause, rivertype.ErrJobCancelledRemotely) || errors.Is(err, context.Canceled) || errors.Is(err, cause)) {
			return false
		}
	}
	return true
}

// lastError returns the text of the newest error River holds for job.
func lastError(job *rivertype.JobRow) string {
	if len(job.Errors) == 0 {
		return "a run ended without an error on record"
	}
	return job.Errors[len(job.Errors)-1].Error
}

// HandleError implements river.ErrorHandler: it cancels the job when the
// strategy gives up on the failure, then calls Config.ErrorHandler. A
// failure the middleware did not see (a job of a kind no worker handles)
// is decided on here, at the time of the call, its run's length taken from
// River's AttemptedAt.
func (p *Policy) HandleError(ctx context.Context, job *rivertype.JobRow, err error) *river.ErrorHandlerResult {
	cancel := p.handle(ctx, job)
	if p.next != nil {
		if r := p.next.HandleError(ctx, job, err); r != nil && r.SetCancelled {
			cancel = true
		}
	}
	return p.result(job, cancel)
}

// HandlePanic implements river.ErrorHandler for a panic, as HandleError.
func (p *Policy) HandlePanic(ctx context.Context, job *rivertype.JobRow, panicVal any, trace string) *river.ErrorHandlerResult {
	cancel := p.handle(ctx, job)
	if p.next != nil {
		if r := p.next.HandlePanic(ctx, job, panicVal, trace); r != nil && r.SetCancelled {
			cancel = true
		}
	}
	return p.result(job, cancel)
}

func (p *Policy) result(job *rivertype.JobRow, cancel bool) *river.ErrorHandlerResult {
	if !cancel {
		return nil
	}
	p.pending.drop(job.ID) // River will not ask NextRetry
	return &river.ErrorHandlerResult{SetCancelled: true}
}

// handle returns whether the failure of job's current attempt is fatal.
func (p *Policy) handle(ctx context.Context, job *rivertype.JobRow) bool {
	fatal, ok := p.pending.peek(job.ID, job.Attempt)
	if !ok {
		now := p.now().Truncate(time.Millisecond)
		r := run{job: job, start: now}
		if job.AttemptedAt != nil && job.AttemptedAt.Before(now) {
			r.start = *job.AttemptedAt
		}
		d := p.decideUnseen(ctx, r, now)
		p.pending.put(job, d, now)
		fatal = d.Action == retrypolicy.Fatal
	}
	if job.Attempt >= job.MaxAttempts {
		p.pending.drop(job.ID) // River discards it without asking NextRetry
	}
	return fatal
}

// latestDue is the latest due time NextRetry gives River, well inside the
// range of times PostgreSQL and River's SQLite driver read back.
var latestDue = time.Date(9000, time.January, 1, 0, 0, 0, 0, time.UTC)

// NextRetry implements river.ClientRetryPolicy: the due time of the
// decision on the failure, or now when it is already due, and never after
// the year 9000. A failure nothing decided on yet (a run rescued by River
// after its process died) is decided on here, as failing now after a run
// of no length; if the strategy gives up on it, the job is retried at once
// and the middleware cancels it before it runs, as River's rescuer cannot
// cancel.
func (p *Policy) NextRetry(job *rivertype.JobRow) time.Time {
	now := p.now()
	fatal, due, ok := p.pending.take(job.ID, job.Attempt)
	if !ok {
		at := now.Truncate(time.Millisecond)
		d := p.decideUnseen(context.Background(), run{job: job, start: at}, at)
		fatal, due = d.Action == retrypolicy.Fatal, d.Due
	}
	switch {
	case fatal || due.Before(now):
		return now
	case due.After(latestDue):
		return latestDue
	}
	return due
}

// decideUnseen decides on a failure of the run r at now (a whole
// millisecond) that the middleware did not record: r's job, run since
// r.start.
func (p *Policy) decideUnseen(ctx context.Context, r run, now time.Time) retrypolicy.Decision {
	job := r.job
	var room [16]int64
	r.pol, r.rec, _ = p.read(ctx, reading{job: job, now: now, room: room[:]})
	s := queuekit.Settle(p.failure(r, now))
	p.logDecision(ctx, job, s)
	d := s.Decision
	if d.Action == retrypolicy.Fatal {
		p.logger.InfoContext(ctx, "riverretry: the strategy gives up on a failure River reports outside a run; the job is cancelled when next fetched",
			slog.Int64("job_id", job.ID), slog.String("kind", job.Kind), slog.Any("decision", d))
	}
	return d
}

// logDecision tells the Decided hook of s, the settlement of job's
// failure, and logs it at the Debug level.
func (p *Policy) logDecision(ctx context.Context, job *rivertype.JobRow, s queuekit.Settlement) {
	if p.hooks.Decided != nil {
		p.hooks.Decided(ctx, job.Kind, s.Decision, s.GaveUp)
	}
	if !p.logger.Enabled(ctx, slog.LevelDebug) {
		return
	}
	p.logger.DebugContext(ctx, "riverretry: decided", slog.Int64("job_id", job.ID), slog.Int("attempt", job.Attempt),
		slog.Time("failed_at", s.At.UTC()), slog.Int("failures", s.Decided),
		slog.Duration("uptime", s.Uptime), slog.Any("decision", s.Decision), slog.String("gave_up", s.GaveUp.String()))
}

// policyFor returns the policy of a job: its own strategy (the raw
// MetadataStrategy value, nil when absent), else its kind's.
func (p *Policy) policyFor(kind string, raw []byte) (*retrypolicy.Policy, error) {
	if raw == nil {
		return p.policies.Kind(kind), nil
	}
	pol, err := p.policies.Own(raw)
	if err != nil {
		ve, _ := errors.AsType[*retrypolicy.ValidationError](err)
		return nil, &StrategyError{Kind: kind, Err: ve}
	}
	return pol, nil
}

// InsertMany is the insert middleware: it refuses a batch in which a job's
// metadata is not a JSON object, or carries an invalid strategy
// (MetadataStrategy), with an error naming the job's kind, for a strategy a
// *StrategyError naming the fields at fault; nothing is inserted then.
// Other keys may hold any JSON.
func (p *Policy) InsertMany(ctx context.Context, manyParams []*rivertype.JobInsertParams, doInner func(context.Context) ([]*rivertype.JobInsertResult, error)) ([]*rivertype.JobInsertResult, error) {
	for _, params := range manyParams {
		if len(bytes.TrimSpace(params.Metadata)) == 0 {
			continue
		}
		m := readMetadata(params.Metadata)
		if m.Problem == queuekit.NotObject || !json.Valid(params.Metadata) {
			p.refused(ctx, params.Kind)
			return nil, fmt.Errorf("riverretry: job of kind %s: %s", queuekit.Quote(params.Kind), queuekit.NotObject)
		}
		if m.Strategy != nil {
			if _, err := p.policyFor(params.Kind, m.Strategy); err != nil {
				p.refused(ctx, params.Kind)
				return nil, err
			}
		}
	}
	return doInner(ctx)
}

// refused tells the Refused hook of an insert of kind refused.
func (p *Policy) refused(ctx context.Context, kind string) {
	if p.hooks.Refused != nil {
		p.hooks.Refused(ctx, kind)
	}
}

// FatalError is the error of a job on which its strategy gives up: River
// records it and cancels the job. It wraps the run's error.
type FatalError struct {
	// Decision is the fatal decision.
	Decision retrypolicy.Decision
	// Reason says why: the decision's reason, retry.NotRetryable for an
	// error marked retry.Permanent, or retry.RetryAfterTooLong for a wait
	// asked beyond Config.WaitLimit.
	Reason retry.Reason
	// Wait is, for retry.RetryAfterTooLong, the wait asked (a server's,
	// or a loop's in the run that deferred it); Decision.Due is the
	// failure plus it.
	Wait time.Duration
	// Err is the error of the failed run.
	Err error
}

// Error says why the job is given up, then the run's error.
func (e *FatalError) Error() string {
	asked := ""
	if e.Reason == retry.RetryAfterTooLong {
		asked = ", asked to wait " + e.Wait.String()
	}
	return "riverretry: giving up (" + e.Reason.String() + asked + ", " + strconv.Itoa(e.Decision.InWindow) + " failure(s) in the window): " + e.Err.Error()
}

// Unwrap returns the run's error.
func (e *FatalError) Unwrap() error { return e.Err }

// StrategyError is a job strategy (MetadataStrategy) that is invalid.
type StrategyError struct {
	// Kind is the job's kind.
	Kind string
	// Err lists the problems, each naming its field within the strategy.
	Err *retrypolicy.ValidationError
}

// Error names the job's kind and every problem, on one line, each field
// named from the metadata ("retry_strategy.max_attempts").
func (e *StrategyError) Error() string {
	var b strings.Builder
	b.WriteString("riverretry: job of kind " + queuekit.Quote(e.Kind) + ": invalid " + MetadataStrategy + ": ")
	for i, fe := range e.Err.Errors {
		if i > 0 {
			b.WriteString("; ")
		}
		if fe.Field != "$" {
			fe.Field = MetadataStrategy + "." + fe.Field
		} else {
			fe.Field = MetadataStrategy
		}
		b.WriteString(fe.Error())
	}
	if e.Err.Omitted > 0 {
		b.WriteString("; and " + strconv.Itoa(e.Err.Omitted) + " more")
	}
	return b.String()
}

// Unwrap returns the validation error, which matches retrypolicy.ErrInvalid.
func (e *StrategyError) Unwrap() error { return e.Err }

// pending holds each failing job's decision, made by the middleware, for
// the error handler and NextRetry that River calls next for the same
// failure, so that both act on one decision. An entry lives from the
// failure to NextRetry, or to the error handler when River will not ask
// NextRetry; entries that River never asks for (a client stopped in
// between) are dropped once old.
//
// Entries live in a table of slots indexed by the job's id, so that the
// handoff costs no map operation: jobs that fail at the same time are few
// and their ids close. A job whose slot holds another job's live entry
// goes to the overflow map instead, so no decision is lost.
type pending struct {
	mu    sync.Mutex
	slots *[pendingSlots]decided
	more  map[int64]decided
}

// decided is a decision on job id's attempt as pending keeps it: whether
// it is fatal, and when the retry is due, in Unix seconds and nanoseconds;
// at is when it was put, in Unix nanoseconds, to tell an entry left
// behind. A slot is empty when its entry is not set. It holds no pointer,
// so that the table's stores need no write barrier and the collector does
// not scan it; its fields are read and written one by one, which costs
// less than copying the struct.
type decided struct {
	id, dueSec, at int64
	attempt        int
	dueNsec        int32
	set, fatal     bool
}

// fill sets e to d, the decision on job's attempt, put at at (Unix
// nanoseconds).
func (e *decided) fill(job *rivertype.JobRow, d *retrypolicy.Decision, at int64) {
	e.id, e.attempt, e.set, e.fatal = job.ID, job.Attempt, true, d.Action == retrypolicy.Fatal
	e.dueSec, e.dueNsec, e.at = d.Due.Unix(), int32(d.Due.Nanosecond()), at
}

func (e *decided) due() time.Time { return time.Unix(e.dueSec, int64(e.dueNsec)) }

const (
	// pendingSlots is the size of the table of slots (40 KiB).
	pendingSlots = 1024
	// maxPending is the size past which the overflow map drops entries
	// older than stalePending; a slot's entry that old gives way to
	// another job's.
	maxPending   = 4096
	stalePending = 10 * time.Minute
)

func (q *pending) slot(id int64) *decided {
	return &q.slots[uint64(id)%pendingSlots]
}

// put keeps d, the decision on job's current attempt, made at at.
func (q *pending) put(job *rivertype.JobRow, d retrypolicy.Decision, at time.Time) {
	id, now := job.ID, at.UnixNano()
	q.mu.Lock()
	if q.slots == nil {
		q.slots = new([pendingSlots]decided)
	}
	if s := q.slot(id); !s.set || s.id == id || now-s.at > int64(stalePending) {
		s.fill(job, &d, now)
		if len(q.more) > 0 {
			delete(q.more, id)
		}
		q.mu.Unlock()
		return
	}
	if q.more == nil {
		q.more = make(map[int64]decided)
	}
	if len(q.more) >= maxPending {
		for k, e := range q.more {
			if now-e.at > int64(stalePending) {
				delete(q.more, k)
			}
		}
	}
	var e decided
	e.fill(job, &d, now)
	q.more[id] = e
	q.mu.Unlock()
}

// peek returns whether the decision on job id's attempt is fatal, and
// false when there is none for that attempt.
func (q *pending) peek(id int64, attempt int) (fatal, ok bool) {
	q.mu.Lock()
	fatal, _, ok = q.look(id, attempt, false)
	q.mu.Unlock()
	return fatal, ok
}

// take returns the decision on job id's attempt, whether it is fatal and
// when it is due, and false when there is none for that attempt; it drops
// job id's entry.
func (q *pending) take(id int64, attempt int) (fatal bool, due time.Time, ok bool) {
	q.mu.Lock()
	fatal, due, ok = q.look(id, attempt, true)
	q.mu.Unlock()
	return fatal, due, ok
}

func (q *pending) drop(id int64) {
	q.mu.Lock()
	q.look(id, 0, true)
	q.mu.Unlock()
}

// look is take, dropping the entry only if asked; q.mu is held.
func (q *pending) look(id int64, attempt int, drop bool) (fatal bool, due time.Time, ok bool) {
	if q.slots != nil {
		if s := q.slot(id); s.set && s.id == id {
			s.set = !drop
			return s.fatal, s.due(), s.attempt == attempt
		}
	}
	e, found := q.more[id]
	if !found {
		return false, time.Time{}, false
	}
	if drop {
		delete(q.more, id)
	}
	return e.fatal, e.due(), e.attempt == attempt
}
