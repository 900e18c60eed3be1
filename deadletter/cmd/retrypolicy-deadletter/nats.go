package main

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/retrypolicy/retrypolicy/natsretry"
)

// natsSource is a JetStream dead-letter stream.
type natsSource struct {
	d         *natsretry.DeadLetters
	f         natsretry.Filter
	closeConn func()
}

// openNATS connects to the server and opens the dead-letter stream the
// options name.
func openNATS(ctx context.Context, o *options, c common) (source, error) {
	f := natsretry.Filter{Reasons: c.reasons, Subject: o.subject, Stream: o.from, Since: c.since, Until: c.until, Error: c.errText, All: c.all}
	if err := f.Check(); err != nil {
		return nil, invalid{errors.New(flagOf(err.Error()))}
	}
	opts := []nats.Option{nats.Name("retrypolicy-deadletter")}
	if o.creds != "" {
		opts = append(opts, nats.UserCredentials(o.creds))
	}
	nc, err := nats.Connect(o.url, opts...)
	if err != nil {
		return nil, fmt.Errorf("--nats %s: %w", o.url, err)
	}
	js, err := jetstream.New(nc)
	var d *natsretry.DeadLetters
	if err == nil {
		d, err = natsretry.OpenDeadLetters(ctx, js, o.dead, o.page)
	}
	if err != nil {
		nc.Close()
		return nil, errors.New(strings.TrimPrefix(err.Error(), "natsretry: "))
	}
	return &natsSource{d: d, f: f, closeConn: nc.Close}, nil
}

func natsRow(dl natsretry.DeadLetter) row {
	return row{ID: dl.Sequence, GivenUp: dl.Time.UTC(), Reason: dl.Reason, Subject: dl.Subject, Stream: dl.Stream,
		Failures: dl.Failures, Error: dl.Error, WaitAskedSecs: dl.WaitAsked.Seconds()}
}

func (s *natsSource) count(ctx context.Context) (map[string]int, error) { return s.d.Count(ctx, s.f) }

func (s *natsSource) list(ctx context.Context) iter.Seq2[row, error] {
	return func(yield func(row, error) bool) {
		for dl, err := range s.d.List(ctx, s.f) {
			if !yield(natsRow(dl), err) {
				return
			}
		}
	}
}

func (s *natsSource) show(ctx context.Context, id uint64) (full, error) {
	dl, err := s.d.Get(ctx, id)
	if err != nil {
		return full{}, err
	}
	return full{row: natsRow(dl), Header: dl.Header, Payload: dl.Data}, nil
}

func (s *natsSource) replay(ctx context.Context, r replayArgs) (replayReport, error) {
	if r.stream == "" {
		return replayReport{}, invalid{errors.New("--stream: the stream the dead letters came from is required (a dead letter's own headers are not trusted to say where to publish)")}
	}
	if r.resetAttempts {
		return replayReport{}, invalid{errors.New("--reset-attempts: applies to River's jobs; a replayed message always starts anew")}
	}
	o := natsretry.ReplayOptions{Stream: r.stream, Rate: r.rate, Jitter: r.jitter, Limit: r.limit, DryRun: r.dryRun,
		Each: func(res natsretry.ReplayResult) {
			out := replayed{row: natsRow(res.DeadLetter), Outcome: string(res.Outcome), SentID: res.Sequence}
			if res.Err != nil {
				out.Why = res.Err.Error()
			}
			r.each(out)
		},
		Progress: func(p natsretry.ReplayProgress) {
			r.progress(replayProgress{replayed: p.Replayed, refused: p.Refused, failed: p.Failed, left: int64(p.Left), rate: p.Rate, elapsed: p.Elapsed})
		}}
	rep, err := s.d.Replay(ctx, s.f, o)
	return replayReport{matched: rep.Matched, replayed: rep.Replayed, duplicates: rep.Duplicates, refused: rep.Refused,
		failed: rep.Failed, would: rep.Would, elapsed: rep.Elapsed, window: rep.DuplicateWindow}, err
}

func (s *natsSource) purge(ctx context.Context) (int, error) { return s.d.Purge(ctx, s.f) }

func (s *natsSource) close() { s.closeConn() }
