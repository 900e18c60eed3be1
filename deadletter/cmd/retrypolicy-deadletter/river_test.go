package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/riverretry"
)

// chargeArgs and emailArgs are the jobs of TestRiversJobsAfterAnOutage.
type chargeArgs struct {
	N int `json:"n"`
}

func (chargeArgs) Kind() string { return "charge" }

type emailArgs struct {
	N int `json:"n"`
}

func (emailArgs) Kind() string { return "email" }

// riverOutage is a River client on a SQLite file whose policy gave up,
// during an outage, 6 charges (a 429 asking for 2 hours, beyond the job's
// limit: retry_after_too_long) and 4 e-mails (not_retryable); the outage
// over, charges succeed, each run counted.
type riverOutage struct {
	path   string
	client *river.Client[*sql.Tx]
	over   atomic.Bool
	mu     sync.Mutex
	runs   map[int64]int // a charge's runs after the outage, by job id
}

type chargeWorker struct {
	river.WorkerDefaults[chargeArgs]
	o *riverOutage
}

func (w *chargeWorker) Work(_ context.Context, job *river.Job[chargeArgs]) error {
	if !w.o.over.Load() {
		return retry.After(errors.New("payments: 429 too many requests"), 2*time.Hour)
	}
	w.o.mu.Lock()
	defer w.o.mu.Unlock()
	w.o.runs[job.ID]++
	return nil
}

type emailWorker struct {
	river.WorkerDefaults[emailArgs]
}

func (emailWorker) Work(context.Context, *river.Job[emailArgs]) error {
	return retry.Permanent(errors.New("smtp: 550 no such mailbox"))
}

func newRiverOutage(t *testing.T) *riverOutage {
	t.Helper()
	ctx := context.Background()
	o := &riverOutage{path: filepath.Join(t.TempDir(), "river.db"), runs: map[int64]int{}}
	db, err := sql.Open("sqlite", "file:"+o.path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	driver := riversqlite.New(db)
	migrator, err := rivermigrate.New(driver, nil)
	require.NoError(t, err)
	_, err = migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	require.NoError(t, err)
	policy, err := riverretry.New(riverretry.Config{})
	require.NoError(t, err)
	workers := river.NewWorkers()
	river.AddWorker(workers, &chargeWorker{o: o})
	river.AddWorker(workers, &emailWorker{})
	cfg := &river.Config{Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 4}}, Workers: workers,
		FetchPollInterval: 50 * time.Millisecond, FetchCooldown: 10 * time.Millisecond}
	require.NoError(t, policy.Install(cfg))
	o.client, err = river.NewClient(driver, cfg)
	require.NoError(t, err)
	require.NoError(t, o.client.Start(ctx))
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		o.client.Stop(stop)
	})
	var params []river.InsertManyParams
	for i := range 10 {
		if i < 6 {
			params = append(params, river.InsertManyParams{Args: chargeArgs{N: i}})
		} else {
			params = append(params, river.InsertManyParams{Args: emailArgs{N: i}})
		}
	}
	_, err = o.client.InsertMany(ctx, params)
	require.NoError(t, err)
	o.waitFor(t, rivertype.JobStateCancelled, 10)
	o.over.Store(true)
	return o
}

// waitFor waits until n jobs are in state.
func (o *riverOutage) waitFor(t *testing.T, state rivertype.JobState, n int) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		res, err := o.client.JobList(context.Background(), river.NewJobListParams().States(state).First(100))
		require.NoError(t, err)
		if len(res.Jobs) == n {
			return
		}
		require.True(t, time.Now().Before(deadline), "%d jobs %s, not %d", len(res.Jobs), state, n)
		time.Sleep(10 * time.Millisecond)
	}
}

func (o *riverOutage) cmd(t *testing.T, args ...string) (status int, stdout, stderr string) {
	t.Helper()
	var out, errs strings.Builder
	args = append(args[:1:1], append([]string{"--sqlite", o.path}, args[1:]...)...)
	status = run(context.Background(), args, &out, &errs)
	return status, out.String(), errs.String()
}

// TestRiversJobsAfterAnOutage: the operator's story on River's SQLite
// file. Counted by reason; the charges listed by kind; replayed at a
// rate, started anew, each run once more; the e-mails purged by reason.
func TestRiversJobsAfterAnOutage(t *testing.T) {
	o := newRiverOutage(t)
	status, out, errs := o.cmd(t, "count")
	require.Equal(t, exitOK, status, errs)
	assert.Equal(t, " 4  not_retryable\n 6  retry_after_too_long\n10  in all\n", out)

	status, out, _ = o.cmd(t, "list", "--kind", "charge", "--json")
	require.Equal(t, exitOK, status)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 6)
	for _, l := range lines {
		var r row
		require.NoError(t, json.Unmarshal([]byte(l), &r))
		assert.Equal(t, "charge", r.Kind)
		assert.Equal(t, "retry_after_too_long", r.Reason)
		assert.Equal(t, 7200.0, r.WaitAskedSecs)
		assert.Equal(t, "payments: 429 too many requests", r.Error)
	}

	status, out, errs = o.cmd(t, "replay", "--kind", "charge", "--rate", "100000", "--reset-attempts")
	require.Equal(t, exitOK, status, errs)
	assert.Contains(t, out, "replayed 6 (0 already sent by an interrupted replay), skipped 0 (gone already), refused 0, failed 0, in ")
	o.waitFor(t, rivertype.JobStateCompleted, 6)
	o.mu.Lock()
	assert.Len(t, o.runs, 6)
	for id, n := range o.runs {
		assert.Equal(t, 1, n, "job %d", id)
	}
	o.mu.Unlock()

	status, _, errs = o.cmd(t, "replay", "--stream", "JOBS", "--rate", "1")
	assert.Equal(t, exitInvalid, status)
	assert.Equal(t, "retrypolicy-deadletter: --stream: applies to JetStream's dead letters; a River job goes back to its own queue\n", errs)
	status, out, _ = o.cmd(t, "purge", "--reason", "not_retryable")
	require.Equal(t, exitOK, status)
	assert.Equal(t, "purged 4 dead letters\n", out)
	status, out, _ = o.cmd(t, "count")
	require.Equal(t, exitOK, status)
	assert.Equal(t, "0  in all\n", out)
}

// TestTwoReplaysAtOnceBesideAWorker: two operators replay the same
// charges at once, on the SQLite file a worker runs them from while 300
// jobs are inserted on the worker's side: each charge runs once more, no
// replay fails, and no write of either, nor any insert, meets a locked
// database.
func TestTwoReplaysAtOnceBesideAWorker(t *testing.T) {
	o := newRiverOutage(t)
	type result struct {
		status    int
		out, errs string
	}
	results := make(chan result, 2)
	inserted := make(chan error, 1)
	go func() { // the worker's side writes meanwhile
		for i := range 300 {
			if _, err := o.client.Insert(context.Background(), emailArgs{N: 100 + i}, nil); err != nil {
				inserted <- err
				return
			}
		}
		inserted <- nil
	}()
	for range 2 {
		go func() {
			var out, errs strings.Builder
			status := run(context.Background(), []string{"replay", "--sqlite", o.path, "--kind", "charge", "--rate", "100000"}, &out, &errs)
			results <- result{status, out.String(), errs.String()}
		}()
	}
	for range 2 {
		r := <-results
		assert.Equal(t, exitOK, r.status, r.errs)
		assert.NotContains(t, r.out+r.errs, "locked")
		assert.NotContains(t, r.out+r.errs, "BUSY")
	}
	require.NoError(t, <-inserted, "an insert of the worker's side")
	o.waitFor(t, rivertype.JobStateCompleted, 6)
	o.mu.Lock()
	defer o.mu.Unlock()
	assert.Len(t, o.runs, 6)
	for id, n := range o.runs {
		assert.Equal(t, 1, n, "job %d", id)
	}
}

// TestAJobsErrorCannotForgeALine: a job's error holding a line break and
// an escape sequence is shown on its one line, escaped.
func TestAJobsErrorCannotForgeALine(t *testing.T) {
	o := newRiverOutage(t)
	now := time.Now()
	job, err := o.client.Driver().GetExecutor().JobInsertFull(context.Background(), &riverdriver.JobInsertFullParams{
		Attempt: 1, EncodedArgs: []byte(`{}`), FinalizedAt: &now, Kind: "email", MaxAttempts: 1, Priority: 1,
		Metadata: []byte(`{"retrypolicy":{"gave_up":"not_retryable"}}`), Queue: river.QueueDefault, ScheduledAt: &now,
		State:  rivertype.JobStateCancelled,
		Errors: [][]byte{[]byte(`{"at":"2026-12-06T00:00:00Z","attempt":1,"error":"boom\nreason    attempts_exhausted\u001b]0;pwned\u0007"}`)}})
	require.NoError(t, err)
	status, out, errs := o.cmd(t, "show", strconv.FormatInt(job.ID, 10))
	require.Equal(t, exitOK, status, errs)
	assert.Equal(t, 1, strings.Count(out, "\nreason "), out)
	assert.Contains(t, out, `error     boom\nreason    attempts_exhausted\u001b]0;pwned\u0007`+"\n")
	assert.NotContains(t, out, "\x1b")
}
