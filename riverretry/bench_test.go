package riverretry

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/queuekit"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	_ "modernc.org/sqlite"
)

// benchStrategy is the strategy of the benchmarks' jobs: it gives up only
// after 100,000 failures in a week, and the week's window keeps every
// failure of a job that fails every few minutes.
const benchStrategy = `{"strategy":"bounded","max_attempts":100000,"window_secs":604800,"backoff":{"kind":"exponential_with_jitter","base_delay_secs":1,"max_delay_secs":300}}`

// jobWithFailures returns a job at attempt n+1 after n failures spread
// evenly over the week before now, each in River's Errors and in the
// policy's record, under benchStrategy.
func jobWithFailures(n int, now time.Time) *rivertype.JobRow {
	job := &rivertype.JobRow{ID: 4242, Attempt: n + 1, MaxAttempts: MaxAttempts, Kind: "bench", CreatedAt: now.Add(-8 * 24 * time.Hour)}
	r := queuekit.Record{Seen: n}
	gap := 7 * 24 * time.Hour / time.Duration(n+1)
	for i := range n {
		at := now.Add(-time.Duration(n-i) * gap)
		job.Errors = append(job.Errors, rivertype.AttemptError{At: at.Add(-time.Second), Attempt: i + 1, Error: "upstream unavailable"})
		r.Failures = append(r.Failures, at.Truncate(time.Millisecond).UnixNano())
	}
	job.Metadata = []byte(`{"retry_strategy":` + benchStrategy + `,"retrypolicy":` + string(r.AppendJSON(nil)) + `}`)
	attempted := now.Add(-time.Second)
	job.AttemptedAt = &attempted
	return job
}

// BenchmarkNextRetry puts the policy's NextRetry beside River's default on
// a job with 8 failures (compare with benchstat -col /impl):
//
//   - impl=river: River's DefaultClientRetryPolicy, its attempt^4 schedule;
//   - impl=decided: the policy as River calls it after a run failed, the
//     middleware having decided: the handoff of the decision (put by the
//     middleware, taken by NextRetry) and the clock;
//   - impl=handoff: the handoff alone, the middleware's put and
//     NextRetry's take, without the clock;
//   - impl=from-job: the rescue path, no decision made (a run rescued after
//     its client died): it reads the job's strategy (cached by its bytes)
//     and its 8 failures from the metadata, checks them, and decides.
func BenchmarkNextRetry(b *testing.B) {
	job := jobWithFailures(8, time.Now())
	p, err := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	p.NextRetry(job) // compiles and caches the job's strategy
	var sink time.Time
	b.Run("impl=river", func(b *testing.B) {
		var river river.DefaultClientRetryPolicy
		b.ReportAllocs()
		for b.Loop() {
			sink = river.NextRetry(job)
		}
	})
	// The middleware's decision on the job's failure, as put for NextRetry.
	at := time.Now()
	d := retrypolicy.Decision{Action: retrypolicy.Wait, InWindow: 9, Due: at.Add(time.Hour)}
	b.Run("impl=decided", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p.pending.put(job, d, at)
			sink = p.NextRetry(job)
		}
	})
	b.Run("impl=handoff", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p.pending.put(job, d, at)
			_, sink, _ = p.pending.take(job.ID, job.Attempt)
		}
	})
	b.Run("impl=from-job", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = p.NextRetry(job)
		}
	})
	_ = sink
}

// cpuTime is the CPU time the process has used, user and system. The
// first reading of a measurement collects the garbage of what ran before,
// so that the measurement does not pay for it.
func startCPU(b *testing.B) time.Duration {
	runtime.GC()
	return cpuTime(b)
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAttemptCPU puts the CPU time of one failed attempt in River's
// client beside the middleware's work on it, as cpu-ns/attempt (compare
// with benchstat -col /impl):
//
//   - impl=river/failures=10: River alone, jobs failing at once and
//     retried at once, each failing 10 times: fetching, running,
//     recording the error, scheduling the retry; on PostgreSQL when
//     .ci/with-postgres gives one (River's client process only), else on
//     SQLite in memory (the database's work counted too);
//   - impl=river/failures=1000: the same for jobs that have failed 1,000
//     times, River's errors holding each;
//   - impl=middleware/failures=N: the policy's share of a failed attempt of
//     a job with N failures in its window: reading and checking the
//     record, deciding, and writing it back, River's JSON encoding of the
//     written record included, as River would do it at the attempt's end.
func BenchmarkAttemptCPU(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run("impl=middleware/failures="+strconv.Itoa(n), func(b *testing.B) { benchMiddleware(b, n) })
	}
	b.Run("impl=river/failures=10", func(b *testing.B) { benchRiverAttempts(b, 0) })
	b.Run("impl=river/failures=1000", func(b *testing.B) { benchRiverAttempts(b, 1000) })
}

func benchMiddleware(b *testing.B, n int) {
	now := time.Now()
	job := jobWithFailures(n, now)
	p, err := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	p.setMetadata = func(_ context.Context, key string, value any) error {
		_, err := json.Marshal(map[string]any{key: value})
		return err
	}
	failure := errors.New("upstream unavailable")
	fail := func(context.Context) error { return failure }
	ctx := context.Background()
	b.ReportAllocs()
	start := startCPU(b)
	for b.Loop() {
		if err := p.Work(ctx, job, fail); err != failure {
			b.Fatal(err)
		}
		p.pending.drop(job.ID)
	}
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/attempt")
}

// failingArgs is a job that always fails.
type failingArgs struct{}

func (failingArgs) Kind() string { return "failing" }

type failingWorker struct {
	river.WorkerDefaults[failingArgs]
	attempts *atomic.Int64
}

func (w *failingWorker) Work(context.Context, *river.Job[failingArgs]) error {
	w.attempts.Add(1)
	return errors.New("upstream unavailable")
}

// retryAtOnce is a retry policy that retries at once.
type retryAtOnce struct{}

func (retryAtOnce) NextRetry(*rivertype.JobRow) time.Time { return time.Now() }

// benchRiverAttempts measures River's client on PostgreSQL when
// RETRYPOLICY_TEST_DATABASE_URL names a server (.ci/with-postgres sets it),
// the database's work then in another process; else on SQLite in memory,
// the database's work then counted with River's.
func benchRiverAttempts(b *testing.B, failed int) {
	if os.Getenv(databaseURLEnv) != "" {
		pool, err := pgxpool.New(context.Background(), postgresDatabase(b))
		if err != nil {
			b.Fatal(err)
		}
		defer pool.Close()
		runRiverAttempts(b, riverpgxv5.New(pool), failed, func(attempts int) error {
			_, err := pool.Exec(context.Background(), `UPDATE river_job SET attempt = $1::int, errors = array(SELECT jsonb_build_object('at', now(), 'attempt', g, 'error', 'upstream unavailable', 'trace', '') FROM generate_series(1, $1::int) g)`, attempts)
			return err
		})
		return
	}
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	defer db.Close()
	b.Log("on SQLite in memory: the database's work is counted as River's")
	runRiverAttempts(b, riversqlite.New(db), failed, func(attempts int) error {
		_, err := db.Exec(`UPDATE river_job SET attempt = ?1, errors = (WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?1)
			SELECT jsonb_group_array(json_object('at', strftime('%Y-%m-%dT%H:%M:%fZ'), 'attempt', n, 'error', 'upstream unavailable', 'trace', '')) FROM g)`, attempts)
		return err
	})
}

// runRiverAttempts runs b.N failed attempts of jobs that have failed
// failed times already, which setFailed writes into River's columns.
func runRiverAttempts[TTx any](b *testing.B, driver riverdriver.Driver[TTx], failed int, setFailed func(attempts int) error) {
	ctx := context.Background()
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		b.Fatal(err)
	}
	var attempts atomic.Int64
	workers := river.NewWorkers()
	river.AddWorker(workers, &failingWorker{attempts: &attempts})
	const failuresEach = 10
	client, err := river.NewClient(driver, &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 100}},
		Workers:           workers,
		RetryPolicy:       retryAtOnce{},
		MaxAttempts:       failed + failuresEach,
		FetchPollInterval: 50 * time.Millisecond,
		FetchCooldown:     time.Millisecond,
		Logger:            slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		b.Fatal(err)
	}
	jobs := max(b.N/failuresEach, 200)
	params := make([]river.InsertManyParams, jobs)
	for i := range params {
		params[i] = river.InsertManyParams{Args: failingArgs{}}
	}
	if _, err := client.InsertMany(ctx, params); err != nil {
		b.Fatal(err)
	}
	if failed > 0 {
		if err := setFailed(failed); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start := startCPU(b)
	if err := client.Start(ctx); err != nil {
		b.Fatal(err)
	}
	for attempts.Load() < int64(b.N) {
		time.Sleep(time.Millisecond)
	}
	used := cpuTime(b) - start
	b.StopTimer()
	stop, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := client.Stop(stop); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(used)/float64(attempts.Load()), "cpu-ns/attempt")
}
