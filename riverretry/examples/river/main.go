// Command river runs River jobs under retrypolicy strategies.
//
// It runs on an in-memory SQLite database by default, on PostgreSQL when
// DATABASE_URL is set. Four jobs fail in their own ways (errors, a panic, long runs that
// earn uptime credit, one that never recovers) under three strategies, and
// the program prints each job's timeline: every attempt, the decision on
// its failure, when the retry was scheduled, and how the job ended. Last, it
// shows that a job with an invalid strategy is refused at insert.
//
// On PostgreSQL it migrates River's schema into the database DATABASE_URL
// names, and leaves the example's jobs there: give it a database of its
// own.
//
//	go run ./examples/river                 # from riverretry/
//	DATABASE_URL=postgres://… go run ./examples/river
package main

import (
	"context"
	"database/sql"
	"encoding"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/riverretry"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	_ "modernc.org/sqlite"
)

func main() {
	if err := run(context.Background(), os.Stdout, os.Getenv("DATABASE_URL"), nil); err != nil {
		fmt.Fprintln(os.Stderr, "river example:", err)
		os.Exit(1)
	}
}

// behaviour is how a job's runs go: each lasts Run, the first Fail of them
// fail (PanicAt panics instead), and the next one succeeds.
type behaviour struct {
	Name    string        `json:"name"`
	Run     time.Duration `json:"run"`
	Fail    int           `json:"fail"`
	PanicAt int           `json:"panic_at,omitempty"`
}

// Three kinds of job: two with a strategy for their kind, one whose jobs
// carry their own.
type emailArgs struct{ behaviour }
type reportArgs struct{ behaviour }
type chargeArgs struct{ behaviour }

func (emailArgs) Kind() string  { return "email" }
func (reportArgs) Kind() string { return "report" }
func (chargeArgs) Kind() string { return "charge" }

type args interface {
	river.JobArgs
	how() behaviour
}

func (b behaviour) how() behaviour { return b }

// worker runs any of the kinds by its behaviour.
type worker[T args] struct{ river.WorkerDefaults[T] }

func (w *worker[T]) Work(ctx context.Context, job *river.Job[T]) error {
	b := job.Args.how()
	select {
	case <-time.After(b.Run):
	case <-ctx.Done():
		return ctx.Err()
	}
	switch {
	case job.Attempt == b.PanicAt:
		panic(fmt.Sprintf("%s: nil map write in attempt %d", b.Name, job.Attempt))
	case job.Attempt <= b.Fail:
		return fmt.Errorf("%s: upstream unavailable (attempt %d)", b.Name, job.Attempt)
	}
	return nil
}

// The strategies. Kinds' strategies are built in Go and may count
// milliseconds; a job's own is a descriptor, which counts whole seconds.
// The email strategy gives up 700 ms into an outage, for a brisk example:
// retrypolicy-vet would report it.
var (
	//retrypolicy-vet:ignore gives-up-fast
	emailStrategy = retrypolicy.Strategy{
		Kind: retrypolicy.Bounded, MaxAttempts: 4, Window: time.Minute,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: 100 * time.Millisecond, Multiplier: 2, MaxDelay: time.Second},
	}
	reportStrategy = retrypolicy.Strategy{
		Kind:    retrypolicy.UnlessStopped,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.ExponentialWithJitter, BaseDelay: 300 * time.Millisecond, Multiplier: 2, MaxDelay: 5 * time.Second},
	}
	chargeStrategy = `{"strategy": "bounded", "max_attempts": 3, "window_secs": 600, "backoff": {"kind": "fixed", "base_delay_secs": 1}}`
)

// run starts a River client with the policy installed, inserts the jobs,
// waits until each has ended and prints the timelines to out. configure,
// if not nil, adjusts the client's configuration (a test gives River its
// clock).
func run(ctx context.Context, out io.Writer, databaseURL string, configure func(*river.Config)) error {
	if databaseURL != "" {
		pool, err := pgxpool.New(ctx, databaseURL)
		if err != nil {
			return err
		}
		defer pool.Close()
		fmt.Fprintln(out, "River on PostgreSQL: migrating River's schema into DATABASE_URL's database, where the example's jobs stay")
		return runOn(ctx, out, riverpgxv5.New(pool), configure)
	}
	// SQLite in memory: one connection, so that every query sees the same
	// database and none waits on a lock.
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	fmt.Fprintln(out, "River on SQLite in memory")
	return runOn(ctx, out, riversqlite.New(db), configure)
}

// exampleJobs are the jobs the example runs, with what their timelines
// say of their strategies.
var exampleJobs = []struct {
	args     river.JobArgs
	strategy string // what the timeline says of it
	metadata string
}{
	{emailArgs{behaviour{Name: "send-welcome-email", Fail: 2}}, "its kind's: bounded, 4 failures within 1m, exponential from 100ms ×2", ""},
	{reportArgs{behaviour{Name: "render-report", Fail: 2, PanicAt: 1}}, "its kind's: unless_stopped, exponential with jitter from 300ms ×2", ""},
	{reportArgs{behaviour{Name: "rebuild-index", Run: 700 * time.Millisecond, Fail: 2}}, "its kind's, and each run lasts 700ms: uptime credit", ""},
	{chargeArgs{behaviour{Name: "charge-card", Fail: 1 << 30}}, "its own: " + chargeStrategy, `{"retry_strategy": ` + chargeStrategy + `}`},
}

// runOn runs the example's jobs through a River client on driver and
// prints their timelines.
func runOn[TTx any](ctx context.Context, out io.Writer, driver riverdriver.Driver[TTx], configure func(*river.Config)) error {
	client, decided, err := newClient(ctx, driver, configure)
	if err != nil {
		return err
	}
	events, cancel := client.Subscribe(river.EventKindJobFailed, river.EventKindJobCompleted, river.EventKindJobCancelled)
	defer cancel()
	if err := client.Start(ctx); err != nil {
		return err
	}
	defer client.Stop(context.WithoutCancel(ctx))

	start := time.Now()
	names := map[int64]int{} // job id → index in exampleJobs
	for i, j := range exampleJobs {
		opts := &river.InsertOpts{}
		if j.metadata != "" {
			opts.Metadata = []byte(j.metadata)
		}
		res, err := client.Insert(ctx, j.args, opts)
		if err != nil {
			return fmt.Errorf("inserting %T: %w", j.args, err)
		}
		names[res.Job.ID] = i
	}
	timelines, err := collect(events, start, decided)
	if err != nil {
		return err
	}
	printTimelines(out, timelines, names)

	// An insert is checked as the jobs are: a job whose strategy is invalid
	// is refused, naming the field, and nothing of its batch is inserted.
	_, err = client.Insert(ctx, chargeArgs{behaviour{Name: "refused"}}, &river.InsertOpts{
		Metadata: []byte(`{"retry_strategy": {"strategy": "bounded", "max_attempts": 0}}`),
	})
	fmt.Fprintf(out, "\nAn insert with an invalid strategy is refused, as it should be:\n  %v\n", err)
	return nil
}

// newClient migrates River's schema on driver and returns a client with
// the policy installed, and the log of the policy's decisions.
func newClient[TTx any](ctx context.Context, driver riverdriver.Driver[TTx], configure func(*river.Config)) (*river.Client[TTx], *decisionLog, error) {
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		return nil, nil, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, nil, fmt.Errorf("migrating: %w", err)
	}
	// The policy logs each decision at the Debug level; the timelines
	// take them from there.
	decided := &decisionLog{lines: map[[2]int64]string{}}
	policy, err := riverretry.New(riverretry.Config{
		Kinds:  map[string]retrypolicy.Strategy{"email": emailStrategy, "report": reportStrategy},
		Logger: slog.New(decided),
	})
	if err != nil {
		return nil, nil, err
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &worker[emailArgs]{})
	river.AddWorker(workers, &worker[reportArgs]{})
	river.AddWorker(workers, &worker[chargeArgs]{})
	config := &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 10}},
		Workers:           workers,
		FetchPollInterval: 20 * time.Millisecond, // SQLite has no LISTEN: poll often, for a brisk demo
		FetchCooldown:     10 * time.Millisecond, // and River refuses a poll shorter than the cooldown
		Logger:            quietLogger(),
	}
	if configure != nil {
		configure(config)
	}
	if err := policy.Install(config); err != nil {
		return nil, nil, err
	}
	client, err := river.NewClient(driver, config)
	return client, decided, err
}

// collect reads events until every job has ended, and returns each job's
// timeline lines, by job id.
func collect(events <-chan *river.Event, start time.Time, decided *decisionLog) (map[int64][]string, error) {
	timelines := map[int64][]string{}
	for ended := 0; ended < len(exampleJobs); {
		var ev *river.Event
		select {
		case ev = <-events:
		case <-time.After(time.Minute):
			return nil, errors.New("the jobs did not end within a minute")
		}
		line, final := describe(ev, start, decided)
		timelines[ev.Job.ID] = append(timelines[ev.Job.ID], line)
		if final {
			ended++
		}
	}
	return timelines, nil
}

// printTimelines prints the timelines in the order the jobs were
// inserted.
func printTimelines(out io.Writer, timelines map[int64][]string, names map[int64]int) {
	ids := make([]int64, 0, len(timelines))
	for id := range timelines {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	for _, id := range ids {
		j := exampleJobs[names[id]]
		fmt.Fprintf(out, "\n%s (%s), strategy %s\n", j.args.(args).how().Name, j.args.Kind(), j.strategy)
		for _, line := range timelines[id] {
			fmt.Fprintln(out, "  "+line)
		}
	}
}

// describe words one event of a job's timeline, with times since start,
// and reports whether the job has ended.
func describe(ev *river.Event, start time.Time, decided *decisionLog) (string, bool) {
	job := ev.Job
	at := func(t time.Time) string { return "+" + t.Sub(start).Round(10*time.Millisecond).String() }
	lastError := ""
	if n := len(job.Errors); n > 0 {
		lastError = firstLine(job.Errors[n-1].Error)
	}
	head := fmt.Sprintf("attempt %d", job.Attempt)
	switch ev.Kind {
	case river.EventKindJobCompleted:
		return fmt.Sprintf("%s  completed at %s", head, at(*job.FinalizedAt)), true
	case river.EventKindJobCancelled:
		return fmt.Sprintf("%s  failed: %s\n  -> %s at %s", head, lastError, job.State, at(*job.FinalizedAt)), true
	case river.EventKindJobFailed:
		if job.State != rivertype.JobStateDiscarded {
			break
		}
		return fmt.Sprintf("%s  failed: %s\n  -> discarded by River at %s", head, lastError, at(*job.FinalizedAt)), true
	}
	return fmt.Sprintf("%s  failed: %s\n  -> %s; scheduled for %s", head, lastError, decided.of(job.ID, job.Attempt), at(job.ScheduledAt)), false
}

// decisionLog is a slog.Handler that keeps the policy's Debug lines
// "riverretry: decided", by job and attempt: how long the run lasted and
// the decision's numbers. It drops every other line.
type decisionLog struct {
	mu    sync.Mutex
	lines map[[2]int64]string
}

func (l *decisionLog) Enabled(context.Context, slog.Level) bool { return true }

func (l *decisionLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "riverretry: decided" {
		return nil
	}
	var job, attempt int64
	var text []string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "job_id":
			job = a.Value.Int64()
		case "attempt":
			attempt = a.Value.Int64()
		case "uptime":
			text = append(text, fmt.Sprintf("ran %.2fs", a.Value.Duration().Seconds()))
		case "decision":
			for _, f := range a.Value.Resolve().Group() {
				text = append(text, f.Key+"="+valueText(f.Value))
			}
		}
		return true
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines[[2]int64{job, attempt}] = strings.Join(text, " ")
	return nil
}

// valueText is v as a text handler writes it: seconds as decimals.
func valueText(v slog.Value) string {
	if m, ok := v.Any().(encoding.TextMarshaler); ok && v.Kind() == slog.KindAny {
		if b, err := m.MarshalText(); err == nil {
			return string(b)
		}
	}
	return v.String()
}

func (l *decisionLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *decisionLog) WithGroup(string) slog.Handler      { return l }

func (l *decisionLog) of(job int64, attempt int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lines[[2]int64{job, int64(attempt)}]
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// quietLogger keeps River's own log lines (a job errored, panicked) out of
// the timelines.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
