package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/natsretry"
	"github.com/retrypolicy/retrypolicy/retry"
)

// within bounds every wait for what the server does; reached only when a
// test fails.
const within = 30 * time.Second

// outage is a JetStream server on which a policy gave up, during an
// outage of a payments API, 12 charges (attempts_exhausted, "payments: 503
// Service Unavailable") and 4 e-mails to bad addresses (not_retryable),
// and whose consumer, the outage over, handles every message published
// again, counting each payload.
type outage struct {
	url     string
	js      jetstream.JetStream
	dead    jetstream.Stream
	over    atomic.Bool
	mu      sync.Mutex
	handled map[string]int
}

func newOutage(t *testing.T) *outage {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	require.NoError(t, err)
	go s.Start()
	t.Cleanup(s.Shutdown)
	require.True(t, s.ReadyForConnections(within))
	nc, err := nats.Connect(s.ClientURL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx := context.Background()
	o := &outage{url: s.ClientURL(), js: js, handled: map[string]int{}}
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"}})
	require.NoError(t, err)
	o.dead, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "DEAD", Subjects: []string{"dead.>"}})
	require.NoError(t, err)
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "PARK", Subjects: []string{"park.>"}, Retention: jetstream.WorkQueuePolicy})
	require.NoError(t, err)
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "retrypolicy", LimitMarkerTTL: time.Minute})
	require.NoError(t, err)
	c, err := js.CreateConsumer(ctx, "JOBS", jetstream.ConsumerConfig{Durable: "worker", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	once := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 1, Window: time.Minute}
	pctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	p, err := natsretry.New(pctx, js, natsretry.Config{Default: once, History: kv, DeadLetter: "dead.jobs", Park: "park",
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	cc, err := p.Consume(pctx, c, o.handle)
	require.NoError(t, err)
	t.Cleanup(cc.Stop)
	for i := range 16 {
		subject, data := fmt.Sprintf("jobs.charge.%d", i), fmt.Sprintf("charge-%d", i)
		if i >= 12 {
			subject, data = fmt.Sprintf("jobs.email.%d", i), fmt.Sprintf("email-%d", i)
		}
		_, err := js.Publish(ctx, subject, []byte(data))
		require.NoError(t, err)
	}
	o.deadLetters(t, 16)
	o.over.Store(true)
	return o
}

// handle fails while the outage lasts, then counts each payload.
func (o *outage) handle(_ context.Context, m jetstream.Msg) error {
	switch {
	case strings.HasPrefix(m.Subject(), "jobs.email."):
		return retry.Permanent(errors.New("smtp: 550 no such mailbox"))
	case !o.over.Load():
		return errors.New("payments: 503 Service Unavailable")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.handled[string(m.Data())]++
	return nil
}

// deadLetters waits until the dead-letter stream holds n messages.
func (o *outage) deadLetters(t *testing.T, n uint64) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		info, err := o.dead.Info(context.Background())
		require.NoError(t, err)
		if info.State.Msgs == n {
			return
		}
		require.True(t, time.Now().Before(deadline), "%d dead letters, not %d", info.State.Msgs, n)
		time.Sleep(5 * time.Millisecond)
	}
}

// cmd runs the command with args, the server's URL and the dead-letter
// stream added, and returns its status and output.
func (o *outage) cmd(t *testing.T, args ...string) (status int, stdout, stderr string) {
	t.Helper()
	var out, errs bytes.Buffer
	args = append(args[:1:1], append([]string{"--nats", o.url, "--dead", "DEAD"}, args[1:]...)...)
	status = run(context.Background(), args, &out, &errs)
	return status, out.String(), errs.String()
}

// TestAfterAnOutage: the operator's story. Counted by reason; the charges
// that failed for the outage listed by reason and error; replayed at a
// rate to the stream they came from, each handled once; the e-mails
// purged by reason; nothing left.
func TestAfterAnOutage(t *testing.T) {
	o := newOutage(t)
	status, out, _ := o.cmd(t, "count")
	require.Equal(t, exitOK, status)
	assert.Equal(t, "12  attempts_exhausted\n 4  not_retryable\n16  in all\n", out)

	status, out, _ = o.cmd(t, "list", "--reason", "attempts_exhausted", "--error", "503", "--json")
	require.Equal(t, exitOK, status)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 12)
	var first row
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	assert.Equal(t, "jobs.charge.0", first.Subject)
	assert.Equal(t, "JOBS", first.Stream)
	assert.Equal(t, "payments: 503 Service Unavailable", first.Error)
	assert.Equal(t, 1, first.Failures)

	status, out, _ = o.cmd(t, "show", fmt.Sprint(first.ID))
	require.Equal(t, exitOK, status)
	assert.Contains(t, out, "reason    attempts_exhausted\nfrom      jobs.charge.0\nfailures  1\n")
	assert.Contains(t, out, "payload (8 bytes)\ncharge-0\n")

	status, out, errs := o.cmd(t, "replay", "--stream", "JOBS", "--rate", "100000", "--reason", "attempts_exhausted")
	require.Equal(t, exitOK, status, errs)
	assert.Contains(t, out, "replayed 12 (0 already sent by an interrupted replay), skipped 0 (gone already), refused 0, failed 0, in ")
	assert.Contains(t, errs, "replayed 12, skipped 0, refused 0, failed 0, 4 not yet read")
	o.eachHandledOnce(t, 12)

	status, _, errs = o.cmd(t, "purge")
	assert.Equal(t, exitInvalid, status)
	assert.Equal(t, "retrypolicy-deadletter: purge: no filter: give one (--reason, --since, --until, --error, and --subject, --from-stream or --kind), or --all to purge every dead letter\n", errs)
	status, out, _ = o.cmd(t, "purge", "--reason", "not_retryable")
	require.Equal(t, exitOK, status)
	assert.Equal(t, "purged 4 dead letters\n", out)
	status, out, _ = o.cmd(t, "count")
	require.Equal(t, exitOK, status)
	assert.Equal(t, "0  in all\n", out)
}

// eachHandledOnce waits until n payloads were handled, and checks each was
// handled once.
func (o *outage) eachHandledOnce(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		o.mu.Lock()
		got := len(o.handled)
		o.mu.Unlock()
		if got >= n {
			break
		}
		require.True(t, time.Now().Before(deadline), "%d of %d handled", got, n)
		time.Sleep(5 * time.Millisecond)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range n {
		assert.Equal(t, 1, o.handled[fmt.Sprintf("charge-%d", i)], "charge-%d", i)
	}
}

// TestADryRunAndAForgedDeadLetter: a dry run says what it would send and
// sends nothing; a dead letter published by hand naming JetStream's API
// is refused, reported, and left in place (the command exits 1).
func TestADryRunAndAForgedDeadLetter(t *testing.T) {
	o := newOutage(t)
	status, out, _ := o.cmd(t, "replay", "--stream", "JOBS", "--rate", "1", "--dry-run", "--subject", "jobs.charge.*", "--limit", "2")
	require.Equal(t, exitOK, status)
	assert.Equal(t, "would replay 1 (jobs.charge.0)\nwould replay 2 (jobs.charge.1)\nwould replay 2 of 2 selected\n", out)
	forged := nats.NewMsg("dead.jobs")
	forged.Header.Set(natsretry.HeaderSubject, "$JS.API.STREAM.DELETE.JOBS")
	forged.Header.Set(natsretry.HeaderStream, "JOBS")
	ack, err := o.js.PublishMsg(context.Background(), forged)
	require.NoError(t, err)
	status, out, _ = o.cmd(t, "replay", "--stream", "JOBS", "--rate", "100000", "--from-stream", "JOBS", "--subject", "$JS.>")
	assert.Equal(t, exitFailed, status)
	assert.Contains(t, out, fmt.Sprintf("refused %d ($JS.API.STREAM.DELETE.JOBS): natsretry: dead letter %[1]d: its subject \"$JS.API.STREAM.DELETE.JOBS\" is a system, API or reply subject\n", ack.Sequence))
	o.deadLetters(t, 17)
}

// rateRule is the rule of --rate, before the value given.
const rateRule = "must be at least one a day (1.16e-05 a second) and at most 100000 a second, got "

// TestBadArgumentsNameTheirFlag: each refused with exit status 2 and the
// flag and rule, before the server is asked anything.
func TestBadArgumentsNameTheirFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"count", "--nats", "nats://127.0.0.1:1"}, "retrypolicy-deadletter: count: --dead, --sqlite or --database-url: name the dead letters: a JetStream dead-letter stream (--dead), or River's database (--sqlite FILE, --database-url postgres://…)\n"},
		{[]string{"count", "--dead", "D", "--sqlite", "f.db"}, "retrypolicy-deadletter: count: --dead and --sqlite: choose one\n"},
		{[]string{"list", "--sqlite", "f.db", "--subject", "jobs.>"}, "retrypolicy-deadletter: list: --subject: applies to JetStream's dead letters (--dead); River's jobs take --kind\n"},
		{[]string{"list", "--dead", "D", "--kind", "email"}, "retrypolicy-deadletter: list: --kind: applies to River's jobs (--sqlite, --database-url); JetStream's dead letters take --subject\n"},
		{[]string{"list", "--dead", "D", "--reason", "tired"}, `retrypolicy-deadletter: --reason: "tired" is not a reason; one of strategy_none, attempts_exhausted, not_retryable, context_done, past_deadline, budget_exhausted, retried_below, deferred, retry_after_too_long, throttled` + "\n"},
		{[]string{"list", "--dead", "D", "--since", "yesterday"}, `retrypolicy-deadletter: --since: "yesterday" is neither an RFC 3339 time nor a duration ago (2h)` + "\n"},
		{[]string{"list", "--dead", "D", "--subject", "jobs..x"}, `retrypolicy-deadletter: --subject: "jobs..x" is not a subject pattern` + "\n"},
		{[]string{"list", "--sqlite", "f.db", "--kind", "a,,b"}, "retrypolicy-deadletter: --kind: a kind is not empty\n"},
		{[]string{"purge", "--dead", "D", "--all", "--reason", "not_retryable"}, "retrypolicy-deadletter: --all: selects every dead letter, so it takes no other criterion\n"},
		{[]string{"purge", "--dead", "D"}, "retrypolicy-deadletter: purge: no filter: give one (--reason, --since, --until, --error, and --subject, --from-stream or --kind), or --all to purge every dead letter\n"},
		{[]string{"list", "--dead", "D", "--page", "-1"}, "retrypolicy-deadletter: list: --page: must be between 0 and 10000, got -1\n"},
		{[]string{"show", "--dead", "D", "1", "2"}, "retrypolicy-deadletter: show: unexpected argument \"2\"\n"},
		{[]string{"nap"}, "retrypolicy-deadletter: unknown command \"nap\"\n\n" + usage},
		// A replay's options, checked before connecting (no server listens at --nats).
		{[]string{"replay", "--dead", "D", "--nats", "nats://127.0.0.1:1", "--stream", "JOBS", "--rate", "0"}, "retrypolicy-deadletter: replay: --rate: " + rateRule + "0\n"},
		{[]string{"replay", "--dead", "D", "--nats", "nats://127.0.0.1:1", "--stream", "JOBS", "--rate", "1e-10"}, "retrypolicy-deadletter: replay: --rate: " + rateRule + "1e-10\n"},
		{[]string{"replay", "--dead", "D", "--nats", "nats://127.0.0.1:1", "--stream", "JOBS", "--rate", "1", "--limit", "-1"}, "retrypolicy-deadletter: replay: --limit: must not be negative, got -1\n"},
		{[]string{"replay", "--dead", "D", "--nats", "nats://127.0.0.1:1", "--rate", "1"}, "retrypolicy-deadletter: --stream: the stream the dead letters came from is required (a dead letter's own headers are not trusted to say where to publish)\n"},
		{[]string{"replay", "--dead", "D", "--nats", "nats://127.0.0.1:1", "--stream", "JOBS", "--rate", "1", "--reset-attempts"}, "retrypolicy-deadletter: --reset-attempts: applies to River's jobs; a replayed message always starts anew\n"},
	} {
		var out, errs bytes.Buffer
		assert.Equal(t, exitInvalid, run(context.Background(), c.args, &out, &errs), c.args)
		assert.Equal(t, c.want, errs.String(), c.args)
		assert.Empty(t, out.String())
	}
}

// TestForgedTextCannotDriveTheTerminal: a dead letter published by hand
// whose reason, error and subject hold escape sequences (a window title
// set, the screen cleared) and C1 controls is listed, shown, counted and
// refused with each escaped; as JSON, each decodes to what it holds, and
// no control character is printed as it is.
func TestForgedTextCannotDriveTheTerminal(t *testing.T) {
	o := newOutage(t)
	const reason, errText, subject = "\x1b]0;pwned\x07", "\x1b[2J\u009b31m", "jobs.\x1b[2J"
	forged := nats.NewMsg("dead.jobs")
	forged.Header.Set(natsretry.HeaderSubject, subject)
	forged.Header.Set(natsretry.HeaderStream, "JOBS")
	forged.Header.Set(natsretry.HeaderReason, reason)
	forged.Header.Set(natsretry.HeaderError, errText)
	ack, err := o.js.PublishMsg(context.Background(), forged)
	require.NoError(t, err)
	raw := func(out string) bool { return strings.ContainsAny(out, "\x1b\x07\u009b") }
	for _, args := range [][]string{
		{"list", "--from-stream", "JOBS", "--subject", "jobs.>"},
		{"show", fmt.Sprint(ack.Sequence)},
		{"count"},
		{"replay", "--stream", "JOBS", "--rate", "100000", "--subject", "jobs.*", "--error", "\x1b[2J"},
	} {
		_, out, errs := o.cmd(t, args...)
		assert.False(t, raw(out+errs), "%v printed a control character: %q", args, out+errs)
		assert.Contains(t, out, `\u001b`, "%v", args)
	}
	_, out, _ := o.cmd(t, "show", "--json", fmt.Sprint(ack.Sequence))
	assert.False(t, raw(out), out)
	var f full
	require.NoError(t, json.Unmarshal([]byte(out), &f))
	assert.Equal(t, reason, f.Reason)
	assert.Equal(t, errText, f.Error)
	assert.Equal(t, subject, f.Subject)
}
