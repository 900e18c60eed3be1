package riverretry_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	_ "modernc.org/sqlite"

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

// A first program: River on SQLite in memory, its schema migrated, the
// policy installed, and a job that fails twice, retried under its kind's
// strategy.
func Example() {
	ctx := context.Background()

	// SQLite in memory: one connection, so that every query sees the same
	// database (each connection to ":memory:" opens a database of its own).
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	driver := riversqlite.New(db)

	// River's tables.
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		panic(err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		panic(err)
	}

	// The policy: a strategy for the kind, in milliseconds for a brisk
	// example.
	policy, err := riverretry.New(riverretry.Config{Kinds: map[string]retrypolicy.Strategy{
		"fetch": {Kind: retrypolicy.Bounded, MaxAttempts: 5, Backoff: retrypolicy.Backoff{BaseDelay: 10 * time.Millisecond, MaxDelay: time.Second}},
	}})
	if err != nil {
		panic(err)
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
		panic(err)
	}
	client, err := river.NewClient(driver, config)
	if err != nil {
		panic(err)
	}
	done, cancel := client.Subscribe(river.EventKindJobCompleted, river.EventKindJobCancelled)
	defer cancel()
	if err := client.Start(ctx); err != nil {
		panic(err)
	}
	defer client.Stop(ctx)

	if _, err := client.Insert(ctx, fetchArgs{}, nil); err != nil {
		panic(err)
	}
	select {
	case ev := <-done:
		fmt.Printf("%s after %d attempts; %d errors recorded\n", ev.Job.State, ev.Job.Attempt, len(ev.Job.Errors))
	case <-time.After(time.Minute):
		fmt.Println("the job did not end within a minute")
	}
	// Output:
	// completed after 3 attempts; 2 errors recorded
}
