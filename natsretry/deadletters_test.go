package natsretry_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/natsretry"
	"github.com/retrypolicy/retrypolicy/queuekit"
	"github.com/retrypolicy/retrypolicy/queuekit/deadlettertest"
	"github.com/retrypolicy/retrypolicy/retry"
)

// deadFixture is the dead-letter kit's fixture on a server of its own:
// dead letters published to DEAD as the policy writes them, sent back to
// JOBS.
type deadFixture struct {
	e *env
	d *natsretry.DeadLetters
}

func newDeadFixture(t *testing.T) deadlettertest.Fixture {
	e := newEnv(t)
	d, err := natsretry.OpenDeadLetters(context.Background(), e.js, "DEAD")
	require.NoError(t, err)
	return deadFixture{e: e, d: d}
}

func (f deadFixture) Driver() queuekit.Driver { return f.d }
func (f deadFixture) Route() queuekit.Route   { return queuekit.Route{Stream: "JOBS"} }
func (f deadFixture) Key(l queuekit.Letter) string {
	return string(l.Payload)
}

func (f deadFixture) Make(t *testing.T, key string, r retry.Reason) {
	f.e.publish(t, "dead.jobs", key, deadHeader("jobs."+key, "JOBS", r.String()))
}

func (f deadFixture) Forge(t *testing.T, key string) {
	f.e.publish(t, "dead.jobs", key, deadHeader("$JS.API.STREAM.DELETE.JOBS", "JOBS", "attempts_exhausted"))
}

// Arrived counts the payloads of the work stream.
func (f deadFixture) Arrived(t *testing.T) map[string]int {
	ctx := context.Background()
	info, err := f.e.jobs.Info(ctx)
	require.NoError(t, err)
	out := map[string]int{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
		m, err := f.e.jobs.GetMsg(ctx, seq)
		require.NoError(t, err)
		out[string(m.Data)]++
	}
	return out
}

// deadHeader is the header the policy gives a dead letter of subject,
// from stream, given up for reason.
func deadHeader(subject, stream, reason string) nats.Header {
	h := nats.Header{}
	h.Set(natsretry.HeaderSubject, subject)
	h.Set(natsretry.HeaderStream, stream)
	h.Set(natsretry.HeaderReason, reason)
	h.Set(natsretry.HeaderFailures, "3")
	h.Set(natsretry.HeaderError, "down")
	return h
}

// TestDeadLettersKeepTheKitsContract runs the dead-letter kit's suite on
// a JetStream server: among its checks, two replays at once send each
// letter once (the slow one reads each letter again at its send, and
// skips those the fast one took, whatever their sequence's age against
// the stream's duplicate window), and a letter already deleted is skipped
// (the server answers a deletion of one with an error no sentinel of the
// client matches).
func TestDeadLettersKeepTheKitsContract(t *testing.T) {
	deadlettertest.Run(t, newDeadFixture)
}

// TestForgedDeadLettersAreRefused: a dead letter forged by anyone who may
// publish to the dead-letter subject cannot make a replay publish to
// JetStream's API, a reply subject, a subject its stream does not capture
// or another stream: each is refused and left in place, and nothing is
// published (the work stream is still there, holding nothing).
func TestForgedDeadLettersAreRefused(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"other.>"}})
	require.NoError(t, err)
	d, err := natsretry.OpenDeadLetters(ctx, e.js, "DEAD")
	require.NoError(t, err)
	cases := []struct{ subject, stream, want string }{
		{"$JS.API.STREAM.DELETE.JOBS", "JOBS", "a system, API or reply subject"},
		{"$SYS.REQ.SERVER.PING", "JOBS", "a system, API or reply subject"},
		{"_INBOX.abc", "JOBS", "a system, API or reply subject"},
		{"jobs.*", "JOBS", "not one a message is published to"},
		{"jobs..a", "JOBS", "not one a message is published to"},
		{"other.a", "JOBS", `stream "JOBS" does not capture its subject "other.a"`},
		{"other.a", "OTHER", `it came from stream "OTHER"`},
		{"jobs.a", "", `it came from stream ""`},
		{"", "JOBS", "not a dead letter"},
	}
	for _, c := range cases {
		e.publish(t, "dead.jobs", "{}", deadHeader(c.subject, c.stream, "attempts_exhausted"))
	}
	var why []string
	rep, err := queuekit.DeadLetters{Driver: d}.Replay(ctx, natsretry.Filter{}, queuekit.ReplayOptions{Route: queuekit.Route{Stream: "JOBS"}, Rate: 1000,
		Each: func(r queuekit.ReplayResult) {
			assert.ErrorIs(t, r.Err, queuekit.ErrRefused)
			why = append(why, fmt.Sprint(r.Err))
		}})
	require.NoError(t, err)
	assert.Equal(t, len(cases), rep.Refused)
	for i, c := range cases {
		assert.Contains(t, why[i], c.want, "%s from %q", c.subject, c.stream)
	}
	info, err := e.jobs.Info(ctx)
	require.NoError(t, err, "the work stream is still there")
	assert.Zero(t, info.State.Msgs, "nothing was published")
	info, err = e.dead.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(len(cases)), info.State.Msgs, "each left in place")
}

// TestAReplayAfterTheDeadStreamIsMadeAgain: the dead-letter stream deleted
// and made again (to change its storage or replicas) restarts its
// sequences; the new letters, replayed, reach the work stream, none taken
// for a duplicate of the old letters at the same sequences and lost.
func TestAReplayAfterTheDeadStreamIsMadeAgain(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	replay := func(prefix string) queuekit.ReplayReport {
		for i := range 3 {
			e.publish(t, "dead.jobs", fmt.Sprintf("%s%d", prefix, i), deadHeader("jobs.a", "JOBS", "attempts_exhausted"))
		}
		d, err := natsretry.OpenDeadLetters(ctx, e.js, "DEAD")
		require.NoError(t, err)
		rep, err := queuekit.DeadLetters{Driver: d}.Replay(ctx, natsretry.Filter{}, queuekit.ReplayOptions{Route: queuekit.Route{Stream: "JOBS"}, Rate: 1000})
		require.NoError(t, err)
		return rep
	}
	assert.Equal(t, 3, replay("old").Replayed)
	require.NoError(t, e.js.DeleteStream(ctx, "DEAD"))
	_, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: "DEAD", Subjects: []string{"dead.>"}, Storage: jetstream.MemoryStorage})
	require.NoError(t, err)
	rep := replay("new")
	assert.Equal(t, 3, rep.Replayed)
	assert.Zero(t, rep.Duplicates, "taken for the old letters")
	info, err := e.jobs.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(6), info.State.Msgs)
}

// TestAReplayedMessageRunsAnew: a message the policy gave up, replayed,
// runs again from nothing, with its payload and its own headers; the
// dead-letter headers stay behind.
func TestAReplayedMessageRunsAnew(t *testing.T) {
	e := newEnv(t)
	var runs atomic.Int64
	var tenant atomic.Value
	e.consume(t, natsretry.Config{Default: retrypolicy.Strategy{Kind: retrypolicy.None}},
		func(_ context.Context, m jetstream.Msg) error {
			tenant.Store(m.Headers().Get("Tenant"))
			if runs.Add(1) == 1 {
				return errors.New("down")
			}
			return nil
		})
	e.publish(t, "jobs.a", "x", nats.Header{"Tenant": []string{"acme"}})
	e.deadMessages(t, 1)
	ctx := context.Background()
	d, err := natsretry.OpenDeadLetters(ctx, e.js, "DEAD")
	require.NoError(t, err)
	var sent uint64
	_, err = queuekit.DeadLetters{Driver: d}.Replay(ctx, natsretry.Filter{}, queuekit.ReplayOptions{Route: queuekit.Route{Stream: "JOBS"}, Rate: 1000,
		Each: func(r queuekit.ReplayResult) { sent = r.Sent.ID }})
	require.NoError(t, err)
	eventually(t, "the replayed message acked", func() bool { u, p := e.pending(t); return runs.Load() == 2 && u == 0 && p == 0 })
	assert.Equal(t, "acme", tenant.Load())
	replayed, err := e.jobs.GetMsg(ctx, sent)
	require.NoError(t, err)
	assert.Empty(t, replayed.Header.Get(natsretry.HeaderReason), "the dead-letter headers stay behind")
}

// TestBadFiltersAreRefused: each names its field and rule.
func TestBadFiltersAreRefused(t *testing.T) {
	for _, c := range []struct {
		f    natsretry.Filter
		want string
	}{
		{natsretry.Filter{Subject: "jobs..a"}, `natsretry: Filter.Subject: "jobs..a" is not a subject pattern`},
		{natsretry.Filter{Subject: "jobs.>.a"}, `natsretry: Filter.Subject: "jobs.>.a" is not a subject pattern`},
		{natsretry.Filter{Stream: "JOBS", Filter: queuekit.Filter{All: true}}, "natsretry: Filter.All: selects every dead letter, so it takes no other criterion"},
		{natsretry.Filter{Filter: queuekit.Filter{Reasons: []retry.Reason{200}}}, "natsretry: Filter.Reasons"},
	} {
		err := c.f.Check()
		require.Error(t, err)
		assert.True(t, strings.HasPrefix(err.Error(), c.want), "%v", err)
	}
	_, err := natsretry.OpenDeadLetters(context.Background(), nil, "DEAD")
	assert.EqualError(t, err, "natsretry: OpenDeadLetters: no JetStream context")
}

// TestAListingEndsWhenTheServerGoesAway: a listing whose server shuts
// down part way through ends with an error, rather than waiting for the
// rest for ever.
func TestAListingEndsWhenTheServerGoesAway(t *testing.T) {
	s := startServer(t, t.TempDir(), -1)
	e := setup(t, s.ClientURL(), 1, time.Second, 0)
	for i := range 100 {
		e.publish(t, "dead.jobs", "x", deadHeader(fmt.Sprintf("jobs.%d", i), "JOBS", "not_retryable"))
	}
	d, err := natsretry.OpenDeadLetters(context.Background(), e.js, "DEAD")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		n := 0
		for _, err := range (queuekit.DeadLetters{Driver: d, Page: 10}).List(context.Background(), natsretry.Filter{}) {
			if err != nil {
				done <- err
				return
			}
			if n++; n == 5 {
				s.Shutdown()
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		require.Error(t, err, "the listing ended without the rest and without an error")
		assert.Contains(t, err.Error(), "natsretry: reading dead letters")
	case <-time.After(within):
		t.Fatalf("the listing did not end within %v of its server going away", within)
	}
}
