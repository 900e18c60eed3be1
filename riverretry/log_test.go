package riverretry

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/attemptlog"
	"github.com/retrypolicy/retrypolicy/fleet"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flakyArgs is a job whose dependency is down until downUntil.
type flakyArgs struct{}

func (flakyArgs) Kind() string { return "flaky" }

// flakyWorker fails while the dependency is down.
type flakyWorker struct {
	river.WorkerDefaults[flakyArgs]
	downUntil time.Time
}

func (w *flakyWorker) Work(ctx context.Context, job *river.Job[flakyArgs]) error {
	time.Sleep(200 * time.Millisecond) // a run takes a while: its uptime
	if time.Now().Before(w.downUntil) {
		return errors.New("the dependency is down")
	}
	return nil
}

// flakyDescriptor gives up at 4 failures within an hour, 3 s apart.
const flakyDescriptor = `{"strategy":"bounded","max_attempts":4,"window_secs":3600,"backoff":{"kind":"fixed","base_delay_secs":3}}`

var flakyStrategy = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 4, Window: time.Hour,
	Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 3 * time.Second}}

// TestWriteLogReplaysAsRiverRan: River on SQLite runs 20 jobs, inserted a
// second apart, whose dependency is down for the first 20.2 s of River's
// clock. The log WriteLog writes, replayed under the strategy
// that ran with no tick (River runs a retry when it is due, within its
// fetch's tenth of a second here), gives the completions and fatal jobs
// River recorded, and attempts within 5%.
func TestWriteLogReplaysAsRiverRan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		begin := time.Now()
		// Down until 20.2 s: the fourth attempt of a job inserted at k s
		// starts 9.6 s to 10 s after it, River's fetch latency included, so
		// none starts within 0.2 s of the recovery, where a replay that
		// runs each retry exactly when due could see it differently.
		worker := &flakyWorker{downUntil: begin.Add(20*time.Second + 200*time.Millisecond)}
		h := newSQLiteHarness(t, func(cfg *river.Config) {
			cfg.Workers = river.NewWorkers()
			river.AddWorker(cfg.Workers, worker)
		})
		var ids []int64
		for k := range 20 {
			time.Sleep(time.Until(begin.Add(time.Duration(k) * time.Second)))
			res, err := h.client.Insert(context.Background(), flakyArgs{}, &river.InsertOpts{Metadata: []byte(`{"retry_strategy":` + flakyDescriptor + `}`)})
			require.NoError(t, err)
			ids = append(ids, res.Job.ID)
		}
		rows := h.waitEnded(ids, 10*time.Minute)
		completed, fatal, attempts := 0, 0, 0
		for _, job := range rows {
			attempts += job.Attempt
			switch job.State {
			case rivertype.JobStateCompleted:
				completed++
			case rivertype.JobStateCancelled:
				fatal++
			}
		}
		require.NotZero(t, completed, "some jobs outlive the outage")
		require.NotZero(t, fatal, "and some give up in it")

		var buf bytes.Buffer
		n, err := WriteLog(context.Background(), &buf, h.client, LogOptions{Kinds: []string{"flaky"}})
		require.NoError(t, err)
		assert.Equal(t, attempts, n, "a line for each attempt River made")
		log, err := fleet.ReadLog(&buf)
		require.NoError(t, err)
		got, err := fleet.Replay{}.Run(context.Background(), log, flakyStrategy) // River runs a retry when due: no tick
		require.NoError(t, err)
		assert.Equal(t, completed, got.Completed, "completed")
		assert.Equal(t, fatal, got.Fatal, "fatal")
		assert.InDelta(t, attempts, got.Attempts, 0.05*float64(attempts), "attempts")
		t.Logf("River: %d completed, %d fatal, %d attempts; replayed: %d, %d, %d", completed, fatal, attempts, got.Completed, got.Fatal, got.Attempts)
	})
}

// TestWriteLogBounds: From, To and Kinds select the attempts written;
// the lines are as fleet.ReadLog reads them.
func TestWriteLogBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSQLiteHarness(t, nil)
		res, err := h.client.Insert(context.Background(), testArgs{Case: "logged", Outcomes: []outcome{fail, fail, succeed}},
			&river.InsertOpts{Metadata: []byte(`{"retry_strategy":{"strategy":"bounded","max_attempts":5,"backoff":{"kind":"fixed","base_delay_secs":2}}}`)})
		require.NoError(t, err)
		h.waitEnded([]int64{res.Job.ID}, 10*time.Minute)
		var all bytes.Buffer
		n, err := WriteLog(context.Background(), &all, h.client, LogOptions{})
		require.NoError(t, err)
		assert.Equal(t, 3, n, "two failed attempts and the one that succeeded")
		assert.Equal(t, n, strings.Count(all.String(), "\n"))
		_, err = fleet.ReadLog(strings.NewReader(all.String()))
		require.NoError(t, err)
		var none bytes.Buffer
		n, err = WriteLog(context.Background(), &none, h.client, LogOptions{Kinds: []string{"no such kind"}})
		require.NoError(t, err)
		assert.Zero(t, n)
		n, err = WriteLog(context.Background(), &none, h.client, LogOptions{From: time.Now().Add(time.Hour)})
		require.NoError(t, err)
		assert.Zero(t, n, "nothing starts in the future")
		assert.Empty(t, none.String())
	})
}

// updateLog rewrites testdata/river-outage.jsonl from a fresh run.
var updateLog = flag.Bool("update-log", false, "rewrite testdata/river-outage.jsonl, the log the docs replay")

// TestTheDocsLogIsARiverRun: River on SQLite runs 100 jobs, inserted over
// the first two minutes, under Amp's jittered example strategy
// (retry forever, 2 s doubling to 5 minutes), while their dependency is
// down for the first three minutes of River's clock. WriteLog's log of it
// is testdata/river-outage.jsonl, which docs/what-if.md replays: the
// committed log is what such a run records (every job completes, as many
// attempts within 5%), and -update-log writes it again.
func TestTheDocsLogIsARiverRun(t *testing.T) {
	const jittered = `{"strategy":"unless_stopped","backoff":{"kind":"exponential_with_jitter","base_delay_secs":2,"max_delay_secs":300}}`
	var fresh bytes.Buffer
	synctest.Test(t, func(t *testing.T) {
		begin := time.Now()
		worker := &flakyWorker{downUntil: begin.Add(3 * time.Minute)}
		h := newSQLiteHarness(t, func(cfg *river.Config) {
			cfg.Workers = river.NewWorkers()
			river.AddWorker(cfg.Workers, worker)
		})
		var ids []int64
		for k := range 100 {
			time.Sleep(time.Until(begin.Add(time.Duration(k) * 1200 * time.Millisecond)))
			res, err := h.client.Insert(context.Background(), flakyArgs{}, &river.InsertOpts{Metadata: []byte(`{"retry_strategy":` + jittered + `}`)})
			require.NoError(t, err)
			ids = append(ids, res.Job.ID)
		}
		h.waitEnded(ids, time.Hour)
		_, err := WriteLog(context.Background(), &fresh, h.client, LogOptions{Kinds: []string{"flaky"}})
		require.NoError(t, err)
	})
	path := filepath.Join("testdata", "river-outage.jsonl")
	if *updateLog {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, fresh.Bytes(), 0o644))
	}
	committed, err := os.ReadFile(path)
	require.NoError(t, err, "go test ./riverretry -run TestTheDocsLogIsARiverRun -update-log writes it")
	want, err := fleet.ReadLog(bytes.NewReader(committed))
	require.NoError(t, err)
	got, err := fleet.ReadLog(&fresh)
	require.NoError(t, err)
	w, g := want.Recorded(), got.Recorded()
	assert.Equal(t, 100, w.Completed, "every job outlives the outage")
	assert.Equal(t, w.Completed, g.Completed)
	assert.InDelta(t, w.Attempts, g.Attempts, 0.05*float64(w.Attempts))
}

// TestWriteLogWritesOnlyWhatReads (N8): a completed job whose attempt
// ended before it started (a clock stepped back) is written ending as it
// started, and an error stamped year 1 is left out; each is reported to
// Mended and logged, WriteLog returns no error, and the whole log reads.
func TestWriteLogWritesOnlyWhatReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSQLiteHarness(t, nil)
		ctx := context.Background()
		stepped := plantJob(t, h, testArgs{Case: "stepped"}, 0, `{}`)
		now := time.Now()
		_, err := h.db.ExecContext(ctx, `UPDATE river_job SET state = 'completed', attempt = 1, attempted_at = ?, finalized_at = ? WHERE id = ?`,
			sqliteTime(now), sqliteTime(now.Add(-time.Hour)), stepped)
		require.NoError(t, err)
		yearOne := plantJob(t, h, testArgs{Case: "year one"}, 0, `{}`)
		_, err = h.db.ExecContext(ctx, `UPDATE river_job SET attempt = 2, errors = jsonb(?) WHERE id = ?`,
			`[{"at":"0001-01-01T00:00:00Z","attempt":1,"error":"stamped year 1","trace":""}]`, yearOne)
		require.NoError(t, err)

		var mended []Mended
		var logs, out bytes.Buffer
		n, err := WriteLog(ctx, &out, h.client, LogOptions{Mended: func(m Mended) { mended = append(mended, m) },
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		require.NoError(t, err)
		assert.Equal(t, 1, n, "the stepped job's attempt, clamped")
		require.Len(t, mended, 2)
		for _, m := range mended {
			switch m.JobID {
			case stepped:
				assert.True(t, m.Written)
				assert.ErrorContains(t, m.Problem, "ended_at: must not be before started_at")
			case yearOne:
				assert.False(t, m.Written)
				assert.ErrorContains(t, m.Problem, "started_at: must be from 1970 to 2262")
			default:
				t.Errorf("job %d reported", m.JobID)
			}
		}
		assert.Equal(t, 2, strings.Count(logs.String(), "level=WARN"))
		got, err := attemptlog.NewReader(&out).Read()
		require.NoError(t, err, "%s", out.String())
		assert.True(t, got.Start.Equal(got.End), "written ending as it started")
	})
}
