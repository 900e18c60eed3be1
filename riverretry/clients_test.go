package riverretry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/retrypolicy/retrypolicy"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A test binary started with clientEnv set is not a test run but one River
// client of TestManyClientsOnPostgres, on the database in clientDBEnv,
// until it gets SIGTERM (or SIGKILL).
const (
	clientEnv   = "RIVERRETRY_TEST_CLIENT"
	clientDBEnv = "RIVERRETRY_TEST_CLIENT_DATABASE_URL"
)

// skewedClient is the client whose clock runs clockAhead ahead, the
// policy's and River's. It takes no part in leader election: as the
// leader, River's rescuer would take every other client's running job for
// stuck.
const (
	skewedClient = "3"
	clockAhead   = 10 * time.Minute
)

// skewOf is how far a client's clock runs ahead.
func skewOf(client string) time.Duration {
	if client == skewedClient {
		return clockAhead
	}
	return 0
}

// aheadClock is River's clock on the skewed client.
type aheadClock struct{}

func (aheadClock) Now() time.Time       { return time.Now().Add(clockAhead) }
func (aheadClock) NowOrNil() *time.Time { t := time.Now().Add(clockAhead); return &t }

func TestMain(m *testing.M) {
	if id := os.Getenv(clientEnv); id != "" {
		if err := runClient(id, os.Getenv(clientDBEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "client", id+":", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// sharedArgs is a job of the shared test: its first Fail runs fail (the
// first panics when Panic), each run lasting RunMS milliseconds.
type sharedArgs struct {
	Fail  int  `json:"fail"`
	RunMS int  `json:"run_ms"`
	Panic bool `json:"panic"`
}

func (a sharedArgs) shared() sharedArgs { return a }

// Three kinds, each with its strategy in the clients' Config.Kinds.
type (
	boundedJob struct{ sharedArgs }
	growingJob struct{ sharedArgs }
	jitterJob  struct{ sharedArgs }
)

func (boundedJob) Kind() string { return "shared-bounded" }
func (growingJob) Kind() string { return "shared-growing" }
func (jitterJob) Kind() string  { return "shared-jitter" }

var sharedKinds = map[string]retrypolicy.Strategy{
	"shared-bounded": {Kind: retrypolicy.Bounded, MaxAttempts: 4, Window: time.Minute,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 30 * time.Millisecond}},
	"shared-growing": {Kind: retrypolicy.UnlessStopped,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: 20 * time.Millisecond, Multiplier: 2, MaxDelay: 200 * time.Millisecond}},
	"shared-jitter": {Kind: retrypolicy.Bounded, MaxAttempts: 6, Window: time.Minute,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.ExponentialWithJitter, BaseDelay: 10 * time.Millisecond, Multiplier: 3, MaxDelay: 300 * time.Millisecond}},
}

// sharedHostile are the metadata of the shared test's hostile jobs, with
// the placeholders of plantMetadata.
var sharedHostile = []string{
	`{"retrypolicy":{"seen_attempt":0,"failures":[{"attempt":0,"at":"9999-12-31T23:59:59Z"}]}}`,
	`{"retrypolicy":{"seen_attempt":0,"history":"{9999}"}}`,
	`{"retrypolicy":{"seen_attempt":"3","history":"x"}}`,
	`{"retrypolicy":{"seen_attempt":100000,"history":"{many}"}}`,
	`{"retrypolicy":null,"user":{nest300}}`,
}

// sharedOwn is the strategy a tenth of the jobs carry in their metadata.
const sharedOwn = `{"strategy":"bounded","max_attempts":3,"backoff":{"kind":"fixed","base_delay_secs":1}}`

// sharedWorker works the shared jobs, recording each run in rr_runs: when
// it started, the job's scheduled time and metadata as fetched, and when
// and how it ended (no end for a run whose process was killed).
type sharedWorker[T interface {
	river.JobArgs
	shared() sharedArgs
}] struct {
	river.WorkerDefaults[T]
	pool   *pgxpool.Pool
	client string
}

func (w *sharedWorker[T]) Work(ctx context.Context, job *river.Job[T]) error {
	a := job.Args.shared()
	var run int64
	// Not under the job's timeout: on a loaded machine, waiting for a
	// connection may outlast it, and a run must never go unrecorded.
	err := w.pool.QueryRow(context.WithoutCancel(ctx), `INSERT INTO rr_runs (job_id, attempt, client, scheduled_at, started_at, metadata)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
		job.ID, job.Attempt, w.client, job.ScheduledAt, time.Now(), string(job.Metadata)).Scan(&run)
	if err != nil {
		return fmt.Errorf("recording the run: %w", err)
	}
	time.Sleep(time.Duration(a.RunMS) * time.Millisecond)
	outcome := "ok"
	switch {
	case job.Attempt <= a.Fail && a.Panic && job.Attempt == 1:
		outcome = "panic"
	case job.Attempt <= a.Fail:
		outcome = "error"
	}
	if _, err := w.pool.Exec(context.WithoutCancel(ctx), `UPDATE rr_runs SET ended_at = $1, outcome = $2 WHERE id = $3`, time.Now(), outcome, run); err != nil {
		return fmt.Errorf("recording the run's end: %w", err)
	}
	switch outcome {
	case "panic":
		panic("shared job panics")
	case "error":
		return errors.New("shared job fails")
	}
	return nil
}

// runClient is one client process of the shared test.
func runClient(id, databaseURL string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return err
	}
	cfg.MaxConns = 40
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	// The policy logs its decisions to stdout, for the test to check;
	// River logs its errors to stderr.
	policyConfig := Config{Kinds: sharedKinds, Logger: slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if id == skewedClient {
		policyConfig.Now = aheadClock{}.Now
	}
	policy, err := New(policyConfig)
	if err != nil {
		return err
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &sharedWorker[boundedJob]{pool: pool, client: id})
	river.AddWorker(workers, &sharedWorker[growingJob]{pool: pool, client: id})
	river.AddWorker(workers, &sharedWorker[jitterJob]{pool: pool, client: id})
	config := &river.Config{
		ID:                   "client-" + id,
		Queues:               map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 30}},
		Workers:              workers,
		FetchPollInterval:    20 * time.Millisecond,
		FetchCooldown:        5 * time.Millisecond,
		JobTimeout:           2 * time.Second,
		RescueStuckJobsAfter: 3 * time.Second,
		Logger:               slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	}
	if id == skewedClient {
		config.Test.Time = aheadClock{}
		config.LeaderElectionDisabled = true
	}
	if err := policy.Install(config); err != nil {
		return err
	}
	client, err := river.NewClient(riverpgxv5.New(pool), config)
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return client.Stop(stopCtx)
}

// sharedRun is a row of rr_runs.
type sharedRun struct {
	attempt   int
	client    string
	scheduled time.Time
	started   time.Time
	ended     *time.Time
	outcome   string
	metadata  []byte
}

// TestManyClientsOnPostgres: three River clients, each a process with its
// own connection pool, share one database and 1,000 jobs under mixed
// strategies that fail several times, and a few whose records are
// hostile. One client's clock runs 10 minutes ahead; another is killed in
// the middle of a run. No job is lost or runs twice at once; every
// decision is the library's on the failures as recorded, every retry is
// scheduled when it says, the rescued runs included; every job ends as
// its strategy says.
func TestManyClientsOnPostgres(t *testing.T) {
	databaseURL := postgresDatabase(t)
	ctx := context.Background()
	pool := postgresPool(t, databaseURL)
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	require.NoError(t, err)
	_, err = migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `CREATE TABLE rr_runs (id bigserial PRIMARY KEY, job_id bigint NOT NULL, attempt int NOT NULL,
		client text NOT NULL, scheduled_at timestamptz NOT NULL, started_at timestamptz NOT NULL,
		ended_at timestamptz, outcome text, metadata text NOT NULL)`)
	require.NoError(t, err)

	// The jobs, inserted by a client that only inserts, through the
	// policy's insert middleware.
	policy, err := New(Config{Kinds: sharedKinds})
	require.NoError(t, err)
	insertConfig := &river.Config{}
	require.NoError(t, policy.Install(insertConfig))
	inserter, err := river.NewClient(riverpgxv5.New(pool), insertConfig)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(7, 11))
	const jobs = 1000
	params := make([]river.InsertManyParams, jobs)
	for i := range params {
		a := sharedArgs{Fail: rng.IntN(7), RunMS: 5 + rng.IntN(30), Panic: rng.IntN(10) == 0}
		if rng.IntN(10) == 0 {
			a.RunMS = 400 + rng.IntN(400) // long runs, so that a kill finds some running
		}
		var args river.JobArgs
		switch i % 3 {
		case 0:
			args = boundedJob{a}
		case 1:
			args = growingJob{a}
		default:
			args = jitterJob{a}
		}
		params[i] = river.InsertManyParams{Args: args}
		if i%10 == 9 {
			params[i].InsertOpts = &river.InsertOpts{Metadata: []byte(`{"` + MetadataStrategy + `":` + sharedOwn + `}`)}
		}
	}
	// A few jobs that fail until their strategy gives up, with records no
	// version of the policy writes.
	for _, meta := range sharedHostile {
		params = append(params, river.InsertManyParams{Args: boundedJob{sharedArgs{Fail: 99, RunMS: 5}},
			InsertOpts: &river.InsertOpts{Metadata: []byte(plantMetadata(meta, time.Now()))}})
	}
	_, err = inserter.InsertMany(ctx, params)
	require.NoError(t, err)

	// Three clients, one process each.
	procs := map[string]*exec.Cmd{}
	var logs sync.Map
	for _, id := range []string{"1", "2", "3"} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), clientEnv+"="+id, clientDBEnv+"="+databaseURL)
		out, errOut := &syncBuffer{}, &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, errOut
		logs.Store(id, [2]*syncBuffer{out, errOut})
		require.NoError(t, cmd.Start())
		procs[id] = cmd
	}
	t.Cleanup(func() {
		for _, cmd := range procs {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})

	// Kill client 1 in the middle of a run.
	deadline := time.Now().Add(time.Minute)
	for {
		var running int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM rr_runs WHERE client = '1' AND ended_at IS NULL`).Scan(&running))
		if running > 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "client 1 never ran a job")
		time.Sleep(5 * time.Millisecond)
	}
	require.NoError(t, procs["1"].Process.Kill())
	procs["1"].Wait()
	killed := time.Now()
	delete(procs, "1")
	var stranded int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM rr_runs WHERE client = '1' AND ended_at IS NULL`).Scan(&stranded))
	require.Positive(t, stranded, "the kill left runs unfinished")
	t.Logf("killed client 1 with %d run(s) unfinished", stranded)

	// Every job ends.
	deadline = time.Now().Add(3 * time.Minute)
	for {
		var open int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state NOT IN ('completed', 'cancelled', 'discarded')`).Scan(&open))
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			var report string
			logs.Range(func(id, out any) bool {
				report += fmt.Sprintf("client %s:\n%s\n", id, out.([2]*syncBuffer)[1].String())
				return true
			})
			t.Fatalf("%d jobs did not end within 3 minutes\n%s", open, report)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for id, cmd := range procs {
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		err := cmd.Wait()
		out, _ := logs.Load(id)
		assert.NoError(t, err, "client %s stops cleanly:\n%s", id, out.([2]*syncBuffer)[1].String())
	}
	procs = nil

	// Read everything back.
	rows, err := pool.Query(ctx, `SELECT id, state, attempt, errors, metadata, args, kind FROM river_job`)
	require.NoError(t, err)
	type final struct {
		state    rivertype.JobState
		attempt  int
		errors   []rivertype.AttemptError
		metadata []byte
		args     sharedArgs
		kind     string
	}
	finals := map[int64]final{}
	for rows.Next() {
		var f final
		var id int64
		var errs [][]byte
		var args []byte
		require.NoError(t, rows.Scan(&id, &f.state, &f.attempt, &errs, &f.metadata, &args, &f.kind))
		for _, e := range errs {
			var ae rivertype.AttemptError
			require.NoError(t, json.Unmarshal(e, &ae))
			f.errors = append(f.errors, ae)
		}
		require.NoError(t, json.Unmarshal(args, &f.args))
		finals[id] = f
	}
	require.NoError(t, rows.Err())
	require.Len(t, finals, jobs+len(sharedHostile), "no job is lost")

	runRows, err := pool.Query(ctx, `SELECT job_id, attempt, client, scheduled_at, started_at, ended_at, outcome, metadata FROM rr_runs ORDER BY started_at`)
	require.NoError(t, err)
	runs := map[int64][]sharedRun{}
	for runRows.Next() {
		var r sharedRun
		var id int64
		var outcome *string
		var meta string
		require.NoError(t, runRows.Scan(&id, &r.attempt, &r.client, &r.scheduled, &r.started, &r.ended, &outcome, &meta))
		if outcome != nil {
			r.outcome = *outcome
		}
		r.metadata = []byte(meta)
		runs[id] = append(runs[id], r)
	}
	require.NoError(t, runRows.Err())

	rescued, states, total := 0, map[rivertype.JobState]int{}, 0
	for _, r := range runs {
		total += len(r)
	}
	decisionLogs := map[string]string{}
	logs.Range(func(id, out any) bool {
		decisionLogs[id.(string)] = out.([2]*syncBuffer)[0].String()
		return true
	})
	for id, f := range finals {
		states[f.state]++
		if checkSharedJob(t, id, f.kind, f.args, f.state, f.errors, f.metadata, runs[id], killed, decisionLogs) {
			rescued++
		}
	}
	t.Logf("%d jobs, %d runs, %d rescued; ended: %v", len(finals), total, rescued, states)

	// The skewed client decided on failures with its clock ahead, and the
	// hostile records were each repaired once.
	ahead, repairs := 0, 0
	for client, out := range decisionLogs {
		for line := range strings.Lines(out) {
			var l logged
			require.NoError(t, json.Unmarshal([]byte(line), &l))
			if l.Msg == "riverretry: decided" && l.FailedAt.After(time.Now().Add(clockAhead/2)) {
				assert.Equal(t, skewedClient, client, "only the skewed client's clock is ahead")
				ahead++
			}
			if strings.Contains(line, repaired) {
				repairs++
			}
		}
	}
	t.Logf("%d decisions by the client 10 minutes ahead; %d records repaired", ahead, repairs)
	assert.Positive(t, ahead, "the skewed client decided")
	assert.GreaterOrEqual(t, repairs, len(sharedHostile)-1, "every hostile record but the null one was repaired")
	// A killed client may also leave runs it fetched but had not started,
	// or had ended but not yet reported: those are rescued too.
	assert.GreaterOrEqual(t, rescued, stranded, "every unfinished run was rescued")
}

// checkSharedJob checks one job of the shared test against the library
// and reports whether one of its runs was rescued.
func checkSharedJob(t *testing.T, id int64, kind string, args sharedArgs, state rivertype.JobState, errs []rivertype.AttemptError, finalMeta []byte, runs []sharedRun, killed time.Time, logs map[string]string) (wasRescued bool) {
	t.Helper()
	strategy, ok := sharedKinds[kind]
	require.True(t, ok)
	if own := metadataStrategy(t, finalMeta); own != nil {
		var err error
		strategy, err = retrypolicy.Parse(own)
		require.NoError(t, err)
	}
	seed := retrypolicy.SeedFromString(strconv.FormatInt(id, 10))
	rescueAt := map[int]time.Time{}
	for _, e := range errs {
		if e.Error == "Stuck job rescued by JobRescuer" {
			rescueAt[e.Attempt] = e.At
		}
	}
	// One entry per attempt: a run recorded, or a rescued attempt whose
	// client died before it recorded the run.
	byAttempt := map[int]sharedRun{}
	last := 0
	for _, r := range runs {
		byAttempt[r.attempt] = r
		last = max(last, r.attempt)
	}
	for a := range rescueAt {
		if _, ok := byAttempt[a]; !ok {
			byAttempt[a] = sharedRun{attempt: a, client: "1"}
			last = max(last, a)
		}
	}
	runs = runs[:0]
	for a := 1; a <= last; a++ {
		r, ok := byAttempt[a]
		require.True(t, ok, "job %d: attempt %d neither ran nor was rescued; its errors: %+v", id, a, errs)
		runs = append(runs, r)
	}
	require.NotEmpty(t, runs, "job %d never ran", id)

	// The decision on each attempt's failure: the last the clients logged,
	// but for a rescued attempt not the one its killed client may have
	// made before it died.
	decided := map[int]clientDecision{}
	for client, out := range logs {
		for _, l := range decisionsIn(t, out, id) {
			if _, rescued := rescueAt[l.Attempt]; rescued && client == "1" {
				continue
			}
			decided[l.Attempt] = clientDecision{l, client}
		}
	}

	var failures []time.Time
	skewed := false // a failure was recorded by the skewed client
	for i, run := range runs {
		_, rescued := rescueAt[run.attempt]
		if i > 0 && !run.started.IsZero() {
			prev := runs[i-1]
			if _, prevRescued := rescueAt[prev.attempt]; prevRescued {
				assert.True(t, run.started.After(killed), "job %d: attempt %d started before its client was killed", id, run.attempt)
			} else {
				assert.False(t, run.started.Before(*prev.ended), "job %d: attempt %d started before attempt %d ended", id, run.attempt, prev.attempt)
			}
		}
		var d retrypolicy.Decision
		switch {
		case rescued: // its client was killed: rescued by another, which decided
			got, ok := decided[run.attempt]
			require.True(t, ok, "job %d: the rescue of attempt %d was not decided on", id, run.attempt)
			assert.NotEqual(t, "1", got.client, "job %d: the killed client decided on its rescue", id)
			assert.Equal(t, "1", run.client, "job %d: only the killed client's runs are rescued", id)
			// The rescuer's clock and the policy's read a little apart.
			assert.InDelta(t, 0, float64(got.FailedAt.Sub(rescueAt[run.attempt])), float64(time.Second), "job %d: the rescue fails when River rescues it", id)
			wasRescued = true
			for k, at := range failures {
				if at.After(got.FailedAt) {
					failures[k] = got.FailedAt
				}
			}
			failures = append(failures, got.FailedAt)
			skewed = skewed || got.client == skewedClient
			var err error
			d, err = retrypolicy.Decide(strategy, failures, 0, seed, got.FailedAt)
			require.NoError(t, err)
			sameDecision(t, d, got.logged, "job %d attempt %d: the decision on the rescue is the library's", id, run.attempt)
		case run.outcome == "ok":
			assert.Equal(t, len(runs)-1, i, "job %d: no run after a success", id)
			assert.Equal(t, rivertype.JobStateCompleted, state, "job %d", id)
			continue
		default: // failed: the record after it holds the failure
			meta := finalMeta
			if i+1 < len(runs) {
				meta = runs[i+1].metadata
			}
			seen, recorded, ok := recordOf(t, meta)
			require.True(t, ok, "job %d: attempt %d left no record", id, run.attempt)
			assert.Equal(t, run.attempt, seen, "job %d", id)
			got, ok := decided[run.attempt]
			require.True(t, ok, "job %d: attempt %d was not decided on", id, run.attempt)
			newest := recorded[0]
			assert.True(t, newest.Equal(got.FailedAt), "job %d attempt %d: the record's newest failure is the one decided", id, run.attempt)
			// The worker writes its end, then returns: the middleware's
			// clock reads after that write, which a loaded machine may take
			// a while to make.
			after := newest.Sub(run.ended.Add(skewOf(run.client)))
			assert.True(t, after >= -time.Millisecond && after < 5*time.Second, "job %d: attempt %d failed %v after its worker ended", id, run.attempt, after)
			// A failure recorded ahead of the deciding client's clock
			// counts as at its read, before the run that failed.
			for k, at := range failures {
				if at.After(newest) {
					failures[k] = newest
				}
			}
			failures = append(failures, newest)
			skewed = skewed || run.client == skewedClient
			var err error
			d, err = retrypolicy.Decide(strategy, failures, got.Uptime, seed, newest)
			require.NoError(t, err)
			sameDecision(t, d, got.logged, "job %d attempt %d: the decision is the library's", id, run.attempt)
		}
		if d.Action == retrypolicy.Fatal {
			assert.Equal(t, len(runs)-1, i, "job %d: no run after a fatal decision", id)
			assert.Equal(t, rivertype.JobStateCancelled, state, "job %d", id)
			assert.Contains(t, errs[len(errs)-1].Error, "riverretry: giving up (", "job %d", id)
			continue
		}
		require.Less(t, i+1, len(runs), "job %d: a run after attempt %d's %s", id, run.attempt, d.Action)
		next := runs[i+1]
		switch {
		case rescued:
			// The rescuer's clock and the policy's read a little apart.
			assert.InDelta(t, 0, float64(next.scheduled.Sub(d.Due)), float64(time.Second), "job %d: the retry after the rescue", id)
		case d.Action == retrypolicy.Wait:
			// Scheduled when due, or, on a loaded machine where the due
			// time passed before River asked NextRetry, at once.
			// A client whose clock runs ahead runs a job that early.
			started := next.started.Add(skewOf(next.client))
			if next.scheduled.Sub(d.Due) >= time.Microsecond {
				assert.False(t, started.Before(next.scheduled), "job %d: attempt %d", id, next.attempt)
			} else {
				near(t, time.Microsecond, d.Due, next.scheduled, "job %d: attempt %d scheduled when due", id, next.attempt)
			}
			assert.False(t, started.Before(d.Due.Add(-time.Microsecond)), "job %d: attempt %d started before it was due", id, next.attempt)
		default:
			assert.False(t, next.scheduled.Before(d.Due.Add(-time.Microsecond)), "job %d: retried at once, not before", id)
		}
	}
	// The end, as the rules give it when no run was rescued and every
	// failure was recorded by one clock: a bounded strategy whose failures
	// all fall in its window gives up at max_attempts; unless_stopped
	// never does. (Failures recorded by clocks 10 minutes apart may fall
	// out of a minute's window; the decisions above were checked on the
	// instants as recorded.)
	if !wasRescued && !skewed {
		want := rivertype.JobStateCompleted
		if strategy.Kind == retrypolicy.Bounded && args.Fail >= strategy.MaxAttempts {
			want = rivertype.JobStateCancelled
		}
		assert.Equal(t, want, state, "job %d (%s, %d failures)", id, kind, args.Fail)
	}
	return wasRescued
}

// clientDecision is a decision a client logged.
type clientDecision struct {
	logged
	client string
}

// metadataStrategy returns a job's own strategy from its metadata, or nil.
func metadataStrategy(t testing.TB, metadata []byte) []byte {
	var meta map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(metadata, &meta))
	return meta[MetadataStrategy]
}
