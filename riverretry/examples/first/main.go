// Command first is riverretry's first program: a River job that fails twice.
//
// River runs on SQLite in memory, its schema migrated and the policy
// installed; the job is retried under its kind's strategy.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	_ "modernc.org/sqlite" // SQLite in pure Go, as the driver "sqlite"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/riverretry"
)

// fetchArgs is a job that fails until its third attempt.
type fetchArgs struct{}

func (fetchArgs) Kind() string { return "fetch" }

type fetchWorker struct {
	river.WorkerDefaults[fetchArgs]
}

func (fetchWorker) Work(_ context.Context, job *river.Job[fetchArgs]) error {
	if job.Attempt < 3 {
		return errors.New("upstream unavailable")
	}
	return nil
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "first:", err)
		os.Exit(1)
	}
}

// queue opens SQLite in memory with River's tables: one connection, so
// that every query sees the same database (each connection to ":memory:"
// opens a database of its own).
func queue(ctx context.Context) (*sql.DB, error) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	migrator, err := rivermigrate.New(riversqlite.New(db), nil)
	if err == nil {
		_, err = migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// run runs one job to its end and says how it ended.
func run(ctx context.Context, out io.Writer) error {
	db, err := queue(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	driver := riversqlite.New(db)

	// The policy: a strategy for the kind, in milliseconds for a brisk
	// example. It gives up 150 ms into an outage, which retrypolicy-vet
	// would report; here that is meant.
	policy, err := riverretry.New(riverretry.Config{Kinds: map[string]retrypolicy.Strategy{
		//retrypolicy-vet:ignore gives-up-fast
		"fetch": {Kind: retrypolicy.Bounded, MaxAttempts: 5, Backoff: retrypolicy.Backoff{BaseDelay: 10 * time.Millisecond, MaxDelay: time.Second}},
	}})
	if err != nil {
		return err
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &fetchWorker{})
	config := &river.Config{
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2}},
		Workers: workers,
		// SQLite has no LISTEN/NOTIFY: River polls, every second by
		// default. A shorter poll needs a shorter cooldown too, for River
		// refuses a poll shorter than its cooldown (100 ms by default).
		FetchPollInterval: 20 * time.Millisecond,
		FetchCooldown:     10 * time.Millisecond,
	}
	if err := policy.Install(config); err != nil {
		return err
	}
	client, err := river.NewClient(driver, config)
	if err != nil {
		return err
	}
	done, cancel := client.Subscribe(river.EventKindJobCompleted, river.EventKindJobCancelled)
	defer cancel()
	if err := client.Start(ctx); err != nil {
		return err
	}
	defer client.Stop(ctx)

	if _, err := client.Insert(ctx, fetchArgs{}, nil); err != nil {
		return err
	}
	select {
	case ev := <-done:
		fmt.Fprintf(out, "%s after %d attempts; %d errors recorded\n", ev.Job.State, ev.Job.Attempt, len(ev.Job.Errors))
		return nil
	case <-time.After(time.Minute):
		return errors.New("the job did not end within a minute")
	}
}
