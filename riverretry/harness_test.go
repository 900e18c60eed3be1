package riverretry

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"
)

// outcome is how one run of a test job ends.
type outcome string

const (
	fail    outcome = "error"
	crash   outcome = "panic"
	snooze  outcome = "snooze"
	cancel  outcome = "cancel"
	succeed outcome = "ok"
	// permanent returns retry.Permanent of an error.
	permanent outcome = "permanent"
	// retryAfter returns retry.After of an error, asking for
	// testArgs.After.
	retryAfter outcome = "retry-after"
	// httpRetryAfter calls a service through a retryhttp transport, which
	// answers 429 with a Retry-After of testArgs.After, and returns the
	// client's error.
	httpRetryAfter outcome = "http-retry-after"
	// httpRetryAfterBrisk does the same through a transport whose strategy
	// is brisk (delays up to 1 s), counting the calls in briskCalls.
	httpRetryAfterBrisk outcome = "http-retry-after-brisk"
	// hang runs for hangFor, whatever its context says, as a run whose
	// client died looks to the others.
	hang outcome = "hang"
)

const hangFor = 5 * time.Minute

// testArgs is a job that runs for Run, then ends as Outcomes says for its
// run (the last outcome repeats).
type testArgs struct {
	Case     string        `json:"case"`
	Run      time.Duration `json:"run"`
	Outcomes []outcome     `json:"outcomes"`
	After    time.Duration `json:"after,omitempty"`
}

func (testArgs) Kind() string { return "test" }

// kindArgs is the same job under another kind, which has a strategy of its
// own in the policy's Config.Kinds.
type kindArgs struct{ testArgs }

func (kindArgs) Kind() string { return "kinded" }

// observed is one run of a job as its worker saw it.
type observed struct {
	attempt   int
	scheduled time.Time // the job's scheduled_at when it was fetched
	started   time.Time
	ended     time.Time
	outcome   outcome
	metadata  []byte // the job's metadata when it was fetched
}

// observations collects every run of every job, safe for the workers of
// one client.
type observations struct {
	mu   sync.Mutex
	runs map[int64][]observed
	// over, once set, makes every run succeed (an outage over, its dead
	// jobs replayed).
	over atomic.Bool
}

func (o *observations) add(id int64, run observed) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.runs == nil {
		o.runs = map[int64][]observed{}
	}
	o.runs[id] = append(o.runs[id], run)
}

func (o *observations) of(id int64) []observed {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]observed(nil), o.runs[id]...)
}

type testWorker[T interface {
	river.JobArgs
	args() testArgs
}] struct {
	river.WorkerDefaults[T]
	seen *observations
}

func (a testArgs) args() testArgs { return a }

func (w *testWorker[T]) Work(ctx context.Context, job *river.Job[T]) error {
	a := job.Args.args()
	run := observed{attempt: job.Attempt, scheduled: job.ScheduledAt, started: time.Now(), metadata: job.Metadata}
	if a.Run > 0 {
		select {
		case <-time.After(a.Run):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// The outcome by run, not attempt: a snoozed run does not use one up.
	run.outcome = a.Outcomes[min(len(w.seen.of(job.ID)), len(a.Outcomes)-1)]
	if w.seen.over.Load() {
		run.outcome = succeed
	}
	run.ended = time.Now()
	w.seen.add(job.ID, run)
	switch run.outcome {
	case fail:
		return fmt.Errorf("%s: attempt %d failed", a.Case, job.Attempt)
	case crash:
		panic(fmt.Sprintf("%s: attempt %d panicked", a.Case, job.Attempt))
	case snooze:
		return river.JobSnooze(time.Second)
	case cancel:
		return river.JobCancel(errors.New("the worker cancels"))
	case permanent:
		return retry.Permanent(fmt.Errorf("%s: attempt %d: 404 not found", a.Case, job.Attempt))
	case retryAfter:
		return retry.After(fmt.Errorf("%s: attempt %d: 429 too many requests", a.Case, job.Attempt), a.After)
	case httpRetryAfter:
		return callTooManyRequests(ctx, a.After, retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5})
	case httpRetryAfterBrisk:
		return callTooManyRequests(ctx, a.After, brisk)
	case hang:
		time.Sleep(hangFor)
		return fmt.Errorf("%s: attempt %d hung", a.Case, job.Attempt)
	}
	return nil
}

// harness is a River client with a Policy installed, on a database of its
// own.
type harness[TTx any] struct {
	t         testing.TB
	db        *sql.DB // the SQLite database, nil on PostgreSQL
	client    *river.Client[TTx]
	policy    *Policy
	seen      *observations
	logs      *syncBuffer // River's warnings and errors
	policyLog *syncBuffer // the policy's lines, JSON, from Debug up
	errs      *recordingHandler
	// precision is how finely the database keeps times.
	precision time.Duration
}

// syncBuffer is a bytes.Buffer for a logger shared by goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// recordingHandler is a user's error handler chained after the policy: it
// records every error it is given.
type recordingHandler struct {
	mu       sync.Mutex
	errors   map[int64][]string
	panics   map[int64]int
	cancelIf func(job *rivertype.JobRow) bool
}

func (h *recordingHandler) HandleError(ctx context.Context, job *rivertype.JobRow, err error) *river.ErrorHandlerResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.errors == nil {
		h.errors = map[int64][]string{}
	}
	h.errors[job.ID] = append(h.errors[job.ID], err.Error())
	if h.cancelIf != nil && h.cancelIf(job) {
		return &river.ErrorHandlerResult{SetCancelled: true}
	}
	return nil
}

func (h *recordingHandler) HandlePanic(ctx context.Context, job *rivertype.JobRow, panicVal any, trace string) *river.ErrorHandlerResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.panics == nil {
		h.panics = map[int64]int{}
	}
	h.panics[job.ID]++
	return nil
}

func (h *recordingHandler) seenErrors(id int64) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.errors[id]...)
}

// kindStrategy is the strategy of kindArgs jobs.
var kindStrategy = retrypolicy.Strategy{
	Kind: retrypolicy.Bounded, MaxAttempts: 3, Window: time.Hour,
	Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 1500 * time.Millisecond},
}

// stubClock makes River pass its clock's time to every query, so that
// SQLite compares scheduled times with the test's clock (a synctest
// bubble's) rather than its own.
type stubClock struct{}

func (stubClock) Now() time.Time       { return time.Now() }
func (stubClock) NowOrNil() *time.Time { t := time.Now(); return &t }

// newHarness starts a client on driver, migrated, with the policy and a
// chained error handler installed; tweak adjusts the River config.
func newHarness[TTx any](t testing.TB, driver riverdriver.Driver[TTx], precision time.Duration, tweak func(*river.Config)) *harness[TTx] {
	return newHarnessWith(t, driver, precision, tweak, Config{})
}

// newHarnessWith is newHarness with a policy configured as base says
// besides the harness's own kinds, error handler and logger.
func newHarnessWith[TTx any](t testing.TB, driver riverdriver.Driver[TTx], precision time.Duration, tweak func(*river.Config), base Config) *harness[TTx] {
	ctx := context.Background()
	migrator, err := rivermigrate.New(driver, nil)
	require.NoError(t, err)
	_, err = migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	require.NoError(t, err)

	h := &harness[TTx]{t: t, seen: &observations{}, logs: &syncBuffer{}, policyLog: &syncBuffer{}, errs: &recordingHandler{}, precision: precision}
	base.Kinds = map[string]retrypolicy.Strategy{"kinded": kindStrategy}
	base.ErrorHandler = h.errs
	base.Logger = slog.New(slog.NewJSONHandler(h.policyLog, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h.policy, err = New(base)
	require.NoError(t, err)
	workers := river.NewWorkers()
	river.AddWorker(workers, &testWorker[testArgs]{seen: h.seen})
	river.AddWorker(workers, &testWorker[kindArgs]{seen: h.seen})
	cfg := &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 20}},
		Workers:           workers,
		FetchPollInterval: 100 * time.Millisecond,
		FetchCooldown:     10 * time.Millisecond,
		Logger:            slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if tweak != nil {
		tweak(cfg)
	}
	require.NoError(t, h.policy.Install(cfg))
	h.client, err = river.NewClient(driver, cfg)
	require.NoError(t, err)
	require.NoError(t, h.client.Start(ctx))
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		h.client.Stop(stop)
	})
	return h
}

// sqlTx is the transaction type of River on database/sql.
type sqlTx = sql.Tx

// newSQLiteHarness is newHarness on SQLite in memory, with River's clock
// the test's (a synctest bubble's).
func newSQLiteHarness(t testing.TB, tweak func(*river.Config)) *harness[*sqlTx] {
	return newSQLiteHarnessWith(t, tweak, Config{})
}

// newSQLiteHarnessWith is newSQLiteHarness with a policy configured as
// base says (newHarnessWith).
func newSQLiteHarnessWith(t testing.TB, tweak func(*river.Config), base Config) *harness[*sqlTx] {
	db, driver := sqliteDB(t)
	h := newHarnessWith(t, driver, time.Millisecond, func(cfg *river.Config) {
		cfg.Test.Time = stubClock{}
		if tweak != nil {
			tweak(cfg)
		}
	}, base)
	h.db = db
	return h
}

// sqliteDriver returns a River driver on a fresh SQLite database in
// memory, with one connection.
func sqliteDriver(t testing.TB) *riversqlite.Driver {
	_, driver := sqliteDB(t)
	return driver
}

// sqliteDB is sqliteDriver with the database handle.
func sqliteDB(t testing.TB) (*sql.DB, *riversqlite.Driver) {
	db, err := sql.Open("sqlite", ":memory:")
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db, riversqlite.New(db)
}

// finalStates are the states in which a job has ended.
var finalStates = map[rivertype.JobState]bool{
	rivertype.JobStateCompleted: true, rivertype.JobStateCancelled: true, rivertype.JobStateDiscarded: true,
}

// waitRetryable waits until job id is retryable (a failure decided, its
// retry scheduled), polling the database, and returns it.
func (h *harness[TTx]) waitRetryable(id int64, within time.Duration) *rivertype.JobRow {
	h.t.Helper()
	deadline := time.Now().Add(within)
	for {
		job, err := h.client.JobGet(context.Background(), id)
		require.NoError(h.t, err)
		if job.State == rivertype.JobStateRetryable {
			return job
		}
		require.True(h.t, time.Now().Before(deadline), "job %d is %s after %v", id, job.State, within)
		time.Sleep(100 * time.Millisecond)
	}
}

// waitEnded waits until every job in ids has ended, polling the database
// (in a synctest bubble, the waits cost no time), and returns them.
func (h *harness[TTx]) waitEnded(ids []int64, within time.Duration) map[int64]*rivertype.JobRow {
	h.t.Helper()
	deadline := time.Now().Add(within)
	rows := map[int64]*rivertype.JobRow{}
	for {
		for _, id := range ids {
			if rows[id] != nil {
				continue
			}
			job, err := h.client.JobGet(context.Background(), id)
			require.NoError(h.t, err)
			if finalStates[job.State] {
				rows[id] = job
			}
		}
		if len(rows) == len(ids) {
			return rows
		}
		if time.Now().After(deadline) {
			var pending []string
			for _, id := range ids {
				if rows[id] == nil {
					job, _ := h.client.JobGet(context.Background(), id)
					pending = append(pending, fmt.Sprintf("job %d: %s attempt %d scheduled %v", id, job.State, job.Attempt, job.ScheduledAt))
				}
			}
			h.t.Fatalf("jobs did not end within %v: %v\nlogs:\n%s", within, pending, h.logs.String())
		}
		time.Sleep(time.Second)
	}
}

// tester is what the helpers need of a *testing.T or a *rapid.T.
type tester interface {
	require.TestingT
	Helper()
}

// testRecord is the policy's record as a test reads it.
type testRecord struct {
	Seen          int     `json:"seen_attempt"`
	History       string  `json:"history"`
	GaveUp        string  `json:"gave_up"`
	WaitAskedSecs float64 `json:"wait_asked_secs"`
}

// givenUp reads why the policy's record says a job was given up, and the
// wait asked it records, with encoding/json.
func givenUp(t tester, metadata []byte) (reason string, waitAskedSecs float64) {
	t.Helper()
	var meta map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(metadata, &meta))
	var r testRecord
	require.NoError(t, json.Unmarshal(meta[MetadataKey], &r))
	return r.GaveUp, r.WaitAskedSecs
}

// recordOf reads the policy's record from a job's metadata with
// encoding/json, and its failures with a decoder of the test's own,
// newest first.
func recordOf(t tester, metadata []byte) (seen int, failures []time.Time, ok bool) {
	t.Helper()
	var meta map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(metadata, &meta))
	raw, ok := meta[MetadataKey]
	if !ok {
		return 0, nil, false
	}
	var r testRecord
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&r), "%s", raw)
	ns, ok := historyFailures(r.History)
	require.True(t, ok, "%q", r.History)
	for _, v := range ns {
		failures = append(failures, time.Unix(0, v))
	}
	return r.Seen, failures, true
}

// logged is a decision as the policy logs it.
type logged struct {
	Msg      string        `json:"msg"`
	JobID    int64         `json:"job_id"`
	Attempt  int           `json:"attempt"`
	FailedAt time.Time     `json:"failed_at"`
	Failures int           `json:"failures"`
	Uptime   time.Duration `json:"uptime"`
	Decision struct {
		Action   string    `json:"action"`
		Reason   string    `json:"reason"`
		InWindow int       `json:"failures_in_window"`
		Due      time.Time `json:"due"`
	} `json:"decision"`
}

// decisions returns the policy's decisions on job id, in order.
func (h *harness[TTx]) decisions(id int64) []logged {
	return decisionsIn(h.t, h.policyLog.String(), id)
}

func decisionsIn(t testing.TB, logs string, id int64) []logged {
	t.Helper()
	var out []logged
	for line := range strings.Lines(logs) {
		var l logged
		require.NoError(t, json.Unmarshal([]byte(line), &l), "%s", line)
		if l.Msg == "riverretry: decided" && l.JobID == id {
			out = append(out, l)
		}
	}
	return out
}

// sameDecision asserts that the policy's logged decision is want.
func sameDecision(t testing.TB, want retrypolicy.Decision, got logged, msg string, args ...any) {
	t.Helper()
	what := fmt.Sprintf(msg, args...)
	assert.Equal(t, want.Action.String(), got.Decision.Action, what)
	assert.Equal(t, want.InWindow, got.Decision.InWindow, what)
	if want.Action == retrypolicy.Fatal {
		assert.Equal(t, want.Reason.String(), got.Decision.Reason, what)
		return
	}
	assert.True(t, want.Due.Equal(got.Decision.Due), "%s: due %v, the library says %v", what, got.Decision.Due, want.Due)
}

// near asserts that got is want to the database's precision, which it
// rounds to (SQLite) or truncates to (PostgreSQL through pgx).
func near(t testing.TB, precision time.Duration, want, got time.Time, msg string, args ...any) {
	t.Helper()
	diff := got.Sub(want)
	if diff < 0 {
		diff = -diff
	}
	assert.Less(t, diff, precision, "%s: want %v, got %v", fmt.Sprintf(msg, args...), want, got)
}

// callTooManyRequests calls a service that answers 429 with a Retry-After
// of after, through a retryhttp transport that retries 5 times, with ctx,
// and returns the client's error.
func callTooManyRequests(ctx context.Context, after time.Duration, s retrypolicy.Strategy) error {
	busy := roundTripper(func(req *http.Request) (*http.Response, error) {
		briskCalls.Add(1)
		h := http.Header{"Retry-After": {strconv.Itoa(int(after / time.Second))}}
		return &http.Response{StatusCode: http.StatusTooManyRequests, Header: h, Body: http.NoBody, Request: req}, nil
	})
	t, err := retryhttp.NewTransport(busy, s)
	if err != nil {
		return err
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://busy.test/", nil)
	resp, err := (&http.Client{Transport: t}).Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return fmt.Errorf("the service answered %s", resp.Status)
}

// brisk is a newcomer's strategy for an API call: five attempts, delays
// from 1 ms doubling up to a second.
var brisk = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5,
	Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: time.Millisecond, Multiplier: 2, MaxDelay: time.Second}}

// briskCalls counts the calls callTooManyRequests's service answered.
var briskCalls atomic.Int64

// roundTripper is an http.RoundTripper made of a function.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
