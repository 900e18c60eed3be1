package natsretry_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy/natsretry"
	"github.com/retrypolicy/retrypolicy/retry"
)

// The tests of JetStream's contracts: each point of a hostile probe, on an
// embedded server.

// TestAStreamMadeAgainLosesNoDeadLetter: message A, at sequence 1, fails
// for good and is dead-lettered; the stream is deleted and made again, and
// message B, at sequence 1 again, fails for good too. Both have a copy in
// the dead-letter stream. Until a message's identity held its timestamp,
// B's copy had A's message id and was dropped as a duplicate: B was lost.
func TestAStreamMadeAgainLosesNoDeadLetter(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	runOnce := func(payload string, dead int) {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		p, err := natsretry.New(cctx, e.js, natsretry.Config{History: e.kv, DeadLetter: "dead.jobs", Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		cc, err := p.Consume(cctx, e.consumer, func(context.Context, jetstream.Msg) error {
			return retry.Permanent(errors.New("bad input"))
		}, jetstream.PullExpiry(time.Second))
		require.NoError(t, err)
		defer cc.Stop()
		seq := e.publish(t, "jobs.a", payload, nil)
		require.Equal(t, uint64(1), seq, "both messages at sequence 1")
		e.deadMessages(t, dead)
		eventually(t, "the message terminated", func() bool { u, p := e.pending(t); return u == 0 && p == 0 })
	}
	runOnce("A", 1)
	require.NoError(t, e.js.DeleteStream(ctx, "JOBS"))
	var err error
	e.jobs, err = e.js.CreateStream(ctx, jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"}, Storage: jetstream.FileStorage})
	require.NoError(t, err)
	e.consumer, err = e.js.CreateOrUpdateConsumer(ctx, "JOBS", jetstream.ConsumerConfig{Durable: "worker",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxDeliver: -1})
	require.NoError(t, err)
	runOnce("B", 2)
	dead := e.deadMessages(t, 2)
	assert.Equal(t, "A", string(dead[0].Data))
	assert.Equal(t, "B", string(dead[1].Data))
}

// TestReplayPublishesOnlyWhereTheMessageCameFrom: a dead letter forged by
// anyone who may publish to the dead-letter subject cannot make Replay
// publish to JetStream's API, a reply subject, a subject its stream does
// not capture or another stream: each is an error, and nothing is
// published (the work stream is still there, holding nothing). Until the
// operator named the stream, a forged Retrypolicy-Subject of
// $JS.API.STREAM.DELETE.JOBS deleted the work stream.
func TestReplayPublishesOnlyWhereTheMessageCameFrom(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"other.>"}})
	require.NoError(t, err)
	forged := func(subject, stream string) *jetstream.RawStreamMsg {
		h := nats.Header{}
		h.Set(natsretry.HeaderSubject, subject)
		h.Set(natsretry.HeaderStream, stream)
		h.Set(natsretry.HeaderReason, "attempts_exhausted")
		seq := e.publish(t, "dead.jobs", "{}", h)
		m, err := e.dead.GetMsg(ctx, seq)
		require.NoError(t, err)
		return m
	}
	for _, c := range []struct{ subject, stream, want string }{
		{"$JS.API.STREAM.DELETE.JOBS", "JOBS", "a system, API or reply subject"},
		{"$SYS.REQ.SERVER.PING", "JOBS", "a system, API or reply subject"},
		{"_INBOX.abc", "JOBS", "a system, API or reply subject"},
		{"jobs.*", "JOBS", "not one a message is published to"},
		{"jobs..a", "JOBS", "not one a message is published to"},
		{"other.a", "JOBS", `stream "JOBS" does not capture its subject "other.a"`},
		{"other.a", "OTHER", `it came from stream "OTHER"`},
		{"jobs.a", "", `it came from stream ""`},
	} {
		_, err := natsretry.Replay(ctx, e.js, forged(c.subject, c.stream), "JOBS")
		assert.ErrorContains(t, err, c.want, "%s from %q", c.subject, c.stream)
	}
	info, err := e.jobs.Info(ctx)
	require.NoError(t, err, "the work stream is still there")
	assert.Zero(t, info.State.Msgs, "nothing was published")
	other, err := e.js.Stream(ctx, "OTHER")
	require.NoError(t, err)
	assert.Zero(t, other.CachedInfo().State.Msgs)

	ack, err := natsretry.Replay(ctx, e.js, forged("jobs.a", "JOBS"), "JOBS")
	require.NoError(t, err, "a dead letter of the stream named, on a subject it captures")
	assert.Equal(t, "JOBS", ack.Stream)
}
