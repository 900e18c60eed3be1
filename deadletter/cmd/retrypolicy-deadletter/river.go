package main

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	_ "modernc.org/sqlite" // SQLite, in pure Go

	"github.com/retrypolicy/retrypolicy/queuekit"
	"github.com/retrypolicy/retrypolicy/riverretry"
)

// riverFilter is the filter of River's dead jobs the options give, and
// the route of a replay, checked.
func (o *options) riverFilter(c queuekit.Filter) (queuekit.Selector, queuekit.Route, error) {
	f := riverretry.Filter{Filter: c}
	if o.kind != "" {
		f.Kinds = strings.Split(o.kind, ",")
	}
	if err := f.Check(); err != nil {
		return nil, queuekit.Route{}, errors.New(flagOf(err.Error()))
	}
	if o.replaying && o.replay.stream != "" {
		return nil, queuekit.Route{}, errors.New("--stream: applies to JetStream's dead letters; a River job goes back to its own queue")
	}
	return f, queuekit.Route{ResetAttempts: o.replay.resetAttempts}, nil
}

// sqliteDSN is how the command opens a SQLite file a worker may be using
// at the same time: read and write, never created; a busy timeout, so
// that a write waits for the worker's rather than failing; immediate
// transactions, so that a transaction holds the write lock from its start
// (one that read first and wrote later could fail at its write). The
// file's journal mode is the worker's: the command never changes it.
func sqliteDSN(path string) string {
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?mode=rw&_pragma=busy_timeout(10000)&_txlock=immediate"
}

// openRiver opens River's database the options name: a SQLite file, or a
// PostgreSQL database.
func openRiver(ctx context.Context, o *options) (*engine, error) {
	if o.sqlite != "" {
		db, err := sql.Open("sqlite", sqliteDSN(o.sqlite))
		if err == nil {
			err = db.PingContext(ctx)
		}
		if err != nil {
			return nil, errors.New("--sqlite " + queuekit.Quote(o.sqlite) + ": " + err.Error())
		}
		return newRiverEngine(riversqlite.New(db), o, func() { db.Close() })
	}
	pool, err := pgxpool.New(ctx, o.databaseURL)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		return nil, errors.New("--database-url: " + err.Error())
	}
	return newRiverEngine(riverpgxv5.New(pool), o, pool.Close)
}

// newRiverEngine makes a River client on driver, for reading and
// updating jobs only (it runs none), and the dead jobs of its database.
func newRiverEngine[TTx any](driver riverdriver.Driver[TTx], o *options, closeConn func()) (*engine, error) {
	client, err := river.NewClient(driver, &river.Config{})
	var d *riverretry.DeadJobs[TTx]
	if err == nil {
		d, err = riverretry.NewDeadJobs(client)
	}
	if err != nil {
		closeConn()
		return nil, errors.New(strings.TrimPrefix(err.Error(), "riverretry: "))
	}
	return &engine{letters: queuekit.DeadLetters{Driver: d, Page: o.page}, river: true, close: closeConn}, nil
}
