package riverretry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/echo"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

const (
	// MetadataStrategy is the job metadata key of a job's own strategy, a
	// strategy descriptor object: {"retry_strategy": {"strategy":
	// "bounded", "max_attempts": 5}}.
	MetadataStrategy = "retry_strategy"

	// MetadataKey is the job metadata key under which the policy keeps a
	// job's failures and its last decision.
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

	// Logger receives the policy's warnings: a job whose strategy is
	// invalid, a rescued job given up. Nil means slog.Default().
	Logger *slog.Logger

	// Now is the policy's clock; nil means time.Now. A test that stubs
	// River's clock (river.Config.Test.Time) gives the policy the same one.
	Now func() time.Time
}

// Policy applies retrypolicy strategies to River jobs. Install it with
// Install, which makes it the client's retry policy (NextRetry), its error
// handler (HandleError, HandlePanic) and its middleware (Work for workers,
// InsertMany for inserts); each alone is not enough. A Policy is safe for
// concurrent use, and one Policy serves any number of clients.
type Policy struct {
	standard *retrypolicy.Policy
	kinds    map[string]*retrypolicy.Policy
	next     river.ErrorHandler
	logger   *slog.Logger
	now      func() time.Time
	cache    strategyCache
	pending  pending
	fallback river.DefaultClientRetryPolicy
}

var (
	_ river.ClientRetryPolicy       = (*Policy)(nil)
	_ river.ErrorHandler            = (*Policy)(nil)
	_ rivertype.WorkerMiddleware    = (*Policy)(nil)
	_ rivertype.JobInsertMiddleware = (*Policy)(nil)
)

// New returns a Policy for cfg. It returns an error naming the kind and
// the field for an invalid strategy in cfg.
func New(cfg Config) (*Policy, error) {
	p := &Policy{
		kinds:  make(map[string]*retrypolicy.Policy, len(cfg.Kinds)),
		next:   cfg.ErrorHandler,
		logger: cfg.Logger,
		now:    cfg.Now,
	}
	if p.logger == nil {
		p.logger = slog.Default()
	}
	if p.now == nil {
		p.now = time.Now
	}
	s := cfg.Default
	if s == (retrypolicy.Strategy{}) {
		s = retrypolicy.Default()
	}
	var err error
	if p.standard, err = retrypolicy.Compile(s); err != nil {
		return nil, fmt.Errorf("riverretry: Config.Default: %w", err)
	}
	for kind, s := range cfg.Kinds {
		if p.kinds[kind], err = retrypolicy.Compile(s); err != nil {
			return nil, fmt.Errorf("riverretry: Config.Kinds[%s]: %w", echo.Quote(kind), err)
		}
	}
	return p, nil
}

// Install makes p the retry policy, the error handler and a middleware of
// a River client configuration, and raises its MaxAttempts to MaxAttempts
// when it is not set. It returns an error, and changes nothing, when cfg
// already has another retry policy or error handler: chain an error
// handler with Config.ErrorHandler.
func (p *Policy) Install(cfg *river.Config) error {
	if cfg.RetryPolicy != nil && cfg.RetryPolicy != river.ClientRetryPolicy(p) {
		return errors.New("riverretry: Install: the river.Config already has a RetryPolicy")
	}
	if cfg.ErrorHandler != nil && cfg.ErrorHandler != river.ErrorHandler(p) {
		return errors.New("riverretry: Install: the river.Config already has an ErrorHandler; give it to riverretry.Config.ErrorHandler to chain it")
	}
	cfg.RetryPolicy, cfg.ErrorHandler = p, p
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
// records the failure, the run's length and the decision in the job's
// metadata (MetadataKey), keeps the decision for HandleError and
// NextRetry, and, when the strategy gives up on an error, returns
// river.JobCancel of a *FatalError wrapping it, so that River records the
// reason and cancels the job. Cancels, snoozes and interruptions by a
// stopping client are not failures. Before a run, failures River holds
// that no run of the middleware saw end (a run rescued after its process
// died) are decided on first: a job they make fatal is cancelled without
// running.
func (p *Policy) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	var room [16]failure
	strategy, rec, ok := readMetadata(job.Metadata, room[:])
	if !ok {
		return doInner(ctx) // NextRetry says why and applies River's default
	}
	pol, err := p.policyFor(job.Kind, strategy)
	if err != nil {
		return doInner(ctx)
	}
	rec, unseen := history(job, rec)
	if unseen {
		newest := rec.failures[0].at
		for _, f := range rec.failures {
			if f.at.After(newest) {
				newest = f.at
			}
		}
		if d := p.decideOn(pol, rec.failures, 0, job.ID, newest); d.Action == retrypolicy.Fatal {
			rec.failures = keepWindow(rec.failures, d.InWindow)
			rec.seen, rec.uptime, rec.decision = job.Attempt, 0, d
			p.setRecord(ctx, rec)
			return river.JobCancel(&FatalError{Decision: d, Err: errors.New(lastError(job))})
		}
	}
	start := p.now()
	ended := false
	defer func() {
		if !ended { // a panic, which goes on to River after this
			p.failed(ctx, job, pol, rec, start, nil)
		}
	}()
	err = doInner(ctx)
	ended = true
	switch {
	case err == nil:
		return nil
	case !isFailure(ctx, err):
		rec.seen = job.Attempt
		p.setRecord(ctx, rec)
		return err
	}
	return p.failed(ctx, job, pol, rec, start, err)
}

// failed decides on the failure of the run of job that started at start,
// records it, and returns the error for River: err, or river.JobCancel of
// it when the strategy gives up. err is nil for a panic.
func (p *Policy) failed(ctx context.Context, job *rivertype.JobRow, pol *retrypolicy.Policy, rec record, start time.Time, err error) error {
	at := p.now()
	uptime := at.Sub(start)
	rec.failures = append(rec.failures, failure{attempt: job.Attempt, at: at})
	d := p.decideOn(pol, rec.failures, uptime, job.ID, at)
	rec.failures = keepWindow(rec.failures, d.InWindow)
	rec.seen, rec.uptime, rec.decision = job.Attempt, uptime, d
	p.setRecord(ctx, rec)
	if d.Action == retrypolicy.Fatal && err != nil {
		if p.next != nil {
			p.next.HandleError(ctx, job, err)
		}
		return river.JobCancel(&FatalError{Decision: d, Err: err})
	}
	p.pending.put(job.ID, job.Attempt, d, at)
	return err
}

// setRecord writes rec into the job's metadata when the attempt ends.
func (p *Policy) setRecord(ctx context.Context, rec record) {
	rec.failures = append([]failure(nil), rec.failures...) // rec outlives the caller's room
	if err := river.MetadataSet(ctx, MetadataKey, rec); err != nil {
		p.logger.ErrorContext(ctx, "riverretry: cannot record the failure in the job's metadata", slog.String("error", err.Error()))
	}
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
	d, ok := p.pending.peek(job.ID, job.Attempt)
	if !ok {
		now := p.now()
		var uptime time.Duration
		if job.AttemptedAt != nil {
			uptime = max(now.Sub(*job.AttemptedAt), 0)
		}
		if d, ok = p.decideUnseen(ctx, job, now, uptime); !ok {
			return false
		}
		p.pending.put(job.ID, job.Attempt, d, now)
	}
	if job.Attempt >= job.MaxAttempts {
		p.pending.drop(job.ID) // River discards it without asking NextRetry
	}
	return d.Action == retrypolicy.Fatal
}

// NextRetry implements river.ClientRetryPolicy: the due time of the
// decision on the failure, or now when it is already due. A failure
// nothing decided on yet (a run rescued by River after its process died)
// is decided on here, as failing now after a run of no length; if the
// strategy gives up on it, the job is retried at once and the middleware
// cancels it before it runs, as River's rescuer cannot cancel. A job whose
// strategy is invalid gets River's default schedule, and a log line.
func (p *Policy) NextRetry(job *rivertype.JobRow) time.Time {
	now := p.now()
	d, ok := p.pending.take(job.ID, job.Attempt)
	if !ok {
		if d, ok = p.decideUnseen(context.Background(), job, now, 0); !ok {
			return p.fallback.NextRetry(job)
		}
	}
	if d.Action == retrypolicy.Fatal || d.Due.Before(now) {
		return now
	}
	return d.Due
}

// decideUnseen decides on a failure of job at now that the middleware did
// not record. It reports false, and logs why, when the job's metadata or
// strategy is invalid.
func (p *Policy) decideUnseen(ctx context.Context, job *rivertype.JobRow, now time.Time, uptime time.Duration) (retrypolicy.Decision, bool) {
	var room [16]failure
	strategy, rec, ok := readMetadata(job.Metadata, room[:])
	if !ok {
		p.logger.WarnContext(ctx, "riverretry: the job's metadata is not a JSON object the policy can read; River's default retry policy applies",
			slog.Int64("job_id", job.ID), slog.String("kind", job.Kind))
		return retrypolicy.Decision{}, false
	}
	pol, err := p.policyFor(job.Kind, strategy)
	if err != nil {
		p.logger.WarnContext(ctx, "riverretry: the job's strategy is invalid; River's default retry policy applies",
			slog.Int64("job_id", job.ID), slog.String("kind", job.Kind), slog.String("error", err.Error()))
		return retrypolicy.Decision{}, false
	}
	rec, _ = history(job, rec)
	rec.failures = append(rec.failures, failure{attempt: job.Attempt, at: now})
	d := p.decideOn(pol, rec.failures, uptime, job.ID, now)
	if d.Action == retrypolicy.Fatal {
		p.logger.InfoContext(ctx, "riverretry: the strategy gives up on a failure River reports outside a run; the job is cancelled when next fetched",
			slog.Int64("job_id", job.ID), slog.String("kind", job.Kind), slog.Any("decision", d))
	}
	return d, true
}

// decideOn decides on the newest of failures, at now, for job id.
func (p *Policy) decideOn(pol *retrypolicy.Policy, failures []failure, uptime time.Duration, id int64, now time.Time) retrypolicy.Decision {
	var room [32]time.Time
	times := room[:0]
	for _, f := range failures {
		times = append(times, f.at)
	}
	d, _ := pol.Decide(times, uptime, seedOf(id), now) // failures is never empty
	return d
}

// seedOf is the jitter seed of job id: SeedFromString of its decimal id.
// The digits are written on the stack and read in place, as SeedFromString
// keeps nothing of its argument, so that a decision does not allocate.
func seedOf(id int64) uint64 {
	var room [20]byte
	digits := strconv.AppendInt(room[:0], id, 10)
	return retrypolicy.SeedFromString(unsafe.String(&digits[0], len(digits)))
}

// policyFor returns the policy of a job: its own strategy (the raw
// MetadataStrategy value, nil when absent), else its kind's, else the
// default.
func (p *Policy) policyFor(kind string, raw []byte) (*retrypolicy.Policy, error) {
	if raw != nil {
		return p.cache.get(raw, kind)
	}
	if pol, ok := p.kinds[kind]; ok {
		return pol, nil
	}
	return p.standard, nil
}

// InsertMany is the insert middleware: it refuses a batch in which a job
// carries an invalid strategy (MetadataStrategy), with a *StrategyError
// naming the job's kind and the fields at fault; nothing is inserted then.
func (p *Policy) InsertMany(ctx context.Context, manyParams []*rivertype.JobInsertParams, doInner func(context.Context) ([]*rivertype.JobInsertResult, error)) ([]*rivertype.JobInsertResult, error) {
	for _, params := range manyParams {
		strategy, _, ok := readMetadata(params.Metadata, nil)
		if !ok {
			return nil, fmt.Errorf("riverretry: job of kind %s: metadata must be a JSON object", echo.Quote(params.Kind))
		}
		if strategy != nil {
			if _, err := p.cache.get(strategy, params.Kind); err != nil {
				return nil, err
			}
		}
	}
	return doInner(ctx)
}

// FatalError is the error of a job on which its strategy gives up: River
// records it and cancels the job. It wraps the run's error.
type FatalError struct {
	// Decision is the fatal decision: its Reason says why.
	Decision retrypolicy.Decision
	// Err is the error of the failed run.
	Err error
}

// Error says why the strategy gives up, then the run's error.
func (e *FatalError) Error() string {
	return "riverretry: giving up (" + e.Decision.Reason.String() + ", " + strconv.Itoa(e.Decision.InWindow) + " failure(s) in the window): " + e.Err.Error()
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
	b.WriteString("riverretry: job of kind " + echo.Quote(e.Kind) + ": invalid " + MetadataStrategy + ": ")
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

// compileStrategy parses and compiles a job's strategy.
func compileStrategy(raw []byte) cached {
	s, err := retrypolicy.Parse(raw)
	if err != nil {
		var ve *retrypolicy.ValidationError
		if !errors.As(err, &ve) {
			ve = &retrypolicy.ValidationError{Errors: []retrypolicy.FieldError{{Field: "$", Rule: err.Error()}}}
		}
		return cached{err: ve}
	}
	p, err := retrypolicy.Compile(s)
	if err != nil { // not reached: Parse checks what Compile does
		return cached{err: &retrypolicy.ValidationError{Errors: []retrypolicy.FieldError{{Field: "$", Rule: err.Error()}}}}
	}
	return cached{p: p}
}

// strategyCache holds the strategies jobs carry, compiled, by their bytes:
// jobs repeat a few, and compiling costs more than deciding. It holds at
// most maxCached, and starts over when full.
type strategyCache struct {
	mu sync.RWMutex
	m  map[string]cached
}

type cached struct {
	p   *retrypolicy.Policy
	err *retrypolicy.ValidationError
}

const maxCached = 1024

// get returns the compiled strategy raw, or a *StrategyError for the job
// kind.
func (c *strategyCache) get(raw []byte, kind string) (*retrypolicy.Policy, error) {
	c.mu.RLock()
	e, ok := c.m[string(raw)]
	c.mu.RUnlock()
	if !ok {
		e = compileStrategy(raw)
		c.mu.Lock()
		if c.m == nil || len(c.m) >= maxCached {
			c.m = make(map[string]cached)
		}
		c.m[string(raw)] = e
		c.mu.Unlock()
	}
	if e.err != nil {
		return nil, &StrategyError{Kind: kind, Err: e.err}
	}
	return e.p, nil
}

// pending holds each failing job's decision, made by the middleware, for
// the error handler and NextRetry that River calls next for the same
// failure, so that both act on one decision. An entry lives from the
// failure to NextRetry, or to the error handler when River will not ask
// NextRetry; entries that River never asks for (a client stopped in
// between) are dropped once old.
type pending struct {
	mu sync.Mutex
	m  map[int64]decided
}

type decided struct {
	attempt int
	d       retrypolicy.Decision
	at      time.Time
}

// maxPending is the size past which pending drops entries older than
// stalePending.
const (
	maxPending   = 4096
	stalePending = 10 * time.Minute
)

func (q *pending) put(id int64, attempt int, d retrypolicy.Decision, at time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.m == nil {
		q.m = make(map[int64]decided)
	}
	if len(q.m) >= maxPending {
		for k, e := range q.m {
			if at.Sub(e.at) > stalePending {
				delete(q.m, k)
			}
		}
	}
	q.m[id] = decided{attempt: attempt, d: d, at: at}
}

func (q *pending) peek(id int64, attempt int) (retrypolicy.Decision, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	e, ok := q.m[id]
	return e.d, ok && e.attempt == attempt
}

func (q *pending) take(id int64, attempt int) (retrypolicy.Decision, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	e, ok := q.m[id]
	if ok {
		delete(q.m, id)
	}
	return e.d, ok && e.attempt == attempt
}

func (q *pending) drop(id int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.m, id)
}
