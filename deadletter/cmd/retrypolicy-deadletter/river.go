package main

import (
	"context"
	"database/sql"
	"errors"
	"iter"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	_ "modernc.org/sqlite" // SQLite, in pure Go

	"github.com/retrypolicy/retrypolicy/riverretry"
)

// riverSource is River's database: the jobs the policy gave up.
type riverSource[TTx any] struct {
	d         *riverretry.DeadJobs[TTx]
	f         riverretry.Filter
	closeConn func()
}

// openRiver opens River's database the options name: a SQLite file, or a
// PostgreSQL database.
func openRiver(ctx context.Context, o *options, c common) (source, error) {
	f := riverretry.Filter{Reasons: c.reasons, Since: c.since, Until: c.until, Error: c.errText, All: c.all}
	if o.kind != "" {
		f.Kinds = strings.Split(o.kind, ",")
	}
	if err := f.Check(); err != nil {
		return nil, invalid{errors.New(flagOf(err.Error()))}
	}
	if o.sqlite != "" {
		db, err := sql.Open("sqlite", "file:"+o.sqlite+"?mode=rw&_pragma=busy_timeout(5000)")
		if err == nil {
			err = db.PingContext(ctx)
		}
		if err != nil {
			return nil, errors.New("--sqlite " + o.sqlite + ": " + err.Error())
		}
		return newRiverSource(riversqlite.New(db), f, o.page, func() { db.Close() })
	}
	pool, err := pgxpool.New(ctx, o.databaseURL)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		return nil, errors.New("--database-url: " + err.Error())
	}
	return newRiverSource(riverpgxv5.New(pool), f, o.page, pool.Close)
}

// newRiverSource makes a River client on driver, for reading and
// updating jobs only (it runs none), and the dead jobs of its database.
func newRiverSource[TTx any](driver riverdriver.Driver[TTx], f riverretry.Filter, page int, closeConn func()) (source, error) {
	client, err := river.NewClient(driver, &river.Config{})
	var d *riverretry.DeadJobs[TTx]
	if err == nil {
		d, err = riverretry.NewDeadJobs(client, page)
	}
	if err != nil {
		closeConn()
		return nil, errors.New(strings.TrimPrefix(err.Error(), "riverretry: "))
	}
	return &riverSource[TTx]{d: d, f: f, closeConn: closeConn}, nil
}

func riverRow(dj riverretry.DeadJob) row {
	return row{ID: uint64(dj.Job.ID), GivenUp: dj.GivenUp.UTC(), Reason: dj.Reason, Kind: dj.Job.Kind, Failures: dj.Job.Attempt,
		Error: dj.Error, WaitAskedSecs: dj.WaitAsked.Seconds()}
}

func (s *riverSource[TTx]) count(ctx context.Context) (map[string]int, error) {
	return s.d.Count(ctx, s.f)
}

func (s *riverSource[TTx]) list(ctx context.Context) iter.Seq2[row, error] {
	return func(yield func(row, error) bool) {
		for dj, err := range s.d.List(ctx, s.f) {
			var r row
			if err == nil {
				r = riverRow(dj)
			}
			if !yield(r, err) {
				return
			}
		}
	}
}

func (s *riverSource[TTx]) show(ctx context.Context, id uint64) (full, error) {
	if id > 1<<62 {
		return full{}, invalid{errors.New("show: ID: no job has that id")}
	}
	dj, err := s.d.Get(ctx, int64(id))
	if err != nil {
		return full{}, err
	}
	return full{row: riverRow(dj), Header: map[string][]string{"metadata": {string(dj.Job.Metadata)}}, Payload: dj.Job.EncodedArgs}, nil
}

func (s *riverSource[TTx]) replay(ctx context.Context, r replayArgs) (replayReport, error) {
	if r.stream != "" {
		return replayReport{}, invalid{errors.New("--stream: applies to JetStream's dead letters; a River job goes back to its own queue")}
	}
	o := riverretry.ReplayOptions{Rate: r.rate, Jitter: r.jitter, Limit: r.limit, DryRun: r.dryRun, ResetAttempts: r.resetAttempts,
		Each: func(res riverretry.ReplayResult) {
			out := replayed{row: riverRow(res.DeadJob), Outcome: string(res.Outcome), SentID: uint64(res.ID)}
			if res.Err != nil {
				out.Why = res.Err.Error()
			}
			r.each(out)
		},
		Progress: func(p riverretry.ReplayProgress) {
			r.progress(replayProgress{replayed: p.Replayed, failed: p.Failed, left: -1, rate: p.Rate, elapsed: p.Elapsed})
		}}
	rep, err := s.d.Replay(ctx, s.f, o)
	return replayReport{matched: rep.Matched, replayed: rep.Replayed, failed: rep.Failed, would: rep.Would, elapsed: rep.Elapsed}, err
}

func (s *riverSource[TTx]) purge(ctx context.Context) (int, error) { return s.d.Purge(ctx, s.f) }

func (s *riverSource[TTx]) close() { s.closeConn() }
