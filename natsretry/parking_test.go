package natsretry_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/natsretry"
	"github.com/retrypolicy/retrypolicy/retry"
)

// TestParkingRunsOncePerConsumerAndStopsWithIt: Wrap called twice on one
// consumer starts one parking consumer and one subscription for it; the
// first stop leaves it running for the other, the last stops it. Until
// parking was a part of its own, each Wrap started another, and no stop
// ended any.
func TestParkingRunsOncePerConsumerAndStopsWithIt(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	nc, js := connect(t, e.url)
	p, err := natsretry.New(ctx, js, natsretry.Config{History: e.kv, DeadLetter: "dead.jobs", Park: "park", Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	before := nc.NumSubscriptions()
	h := func(context.Context, jetstream.Msg) error { return nil }
	_, stop1, err := p.Wrap(ctx, e.consumer, h)
	require.NoError(t, err)
	_, stop2, err := p.Wrap(ctx, e.consumer, h)
	require.NoError(t, err)
	assert.Equal(t, before+1, nc.NumSubscriptions(), "one parking subscription for two Wraps")
	names := e.park.ListConsumers(ctx)
	var n int
	for range names.Info() {
		n++
	}
	require.NoError(t, names.Err())
	assert.Equal(t, 1, n, "one parking consumer")
	stop1()
	assert.Equal(t, before+1, nc.NumSubscriptions(), "still parking for the other consumption")
	stop2()
	stop2() // twice is once
	eventually(t, "the last stop ends the parking", func() bool { return nc.NumSubscriptions() == before })
}

// TestASetupContextEndingCancelsNoHandler: the context given to New and
// Consume is for setup: cancelled once Consume returns, it ends no
// handler's context, and a message parked after it still runs.
func TestASetupContextEndingCancelsNoHandler(t *testing.T) {
	e := newEnv(t)
	setupCtx, cancel := context.WithCancel(context.Background())
	p, err := natsretry.New(setupCtx, e.js, natsretry.Config{History: e.kv, DeadLetter: "dead.jobs", Park: "park", ParkAfter: 100 * ms,
		Logger:  slog.New(slog.DiscardHandler),
		Default: retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 300 * ms}}})
	require.NoError(t, err)
	started, look := make(chan struct{}), make(chan struct{})
	handlerErr := make(chan error, 1)
	var runs atomic.Int64
	cc, err := p.Consume(setupCtx, e.consumer, func(ctx context.Context, _ jetstream.Msg) error {
		if runs.Add(1) > 1 {
			return nil
		}
		close(started)
		<-look
		handlerErr <- ctx.Err()
		return errors.New("down") // parked: its wait is past ParkAfter
	})
	require.NoError(t, err)
	defer cc.Stop()
	e.publish(t, "jobs.a", "x", nil)
	<-started
	cancel() // returns once every context made from setupCtx is cancelled
	close(look)
	assert.NoError(t, <-handlerErr, "the handler's context lives on")
	eventually(t, "the parked message run again and acked", func() bool {
		u, pending := e.pending(t)
		info, err := e.park.Info(context.Background())
		require.NoError(t, err)
		return runs.Load() == 2 && u == 0 && pending == 0 && info.State.Msgs == 0
	})
}

// TestNoAdminRequestPerMessage counts the requests on $JS.API.STREAM.>
// (info, purge, delete and the like) while 1,000 messages fail once and
// are acked, and 100 are dead-lettered: none. Until the bucket's key was
// deleted rather than its subject purged, each acked message with a
// history cost a purge, and each dead letter a stream info.
func TestNoAdminRequestPerMessage(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	calls := map[string]int{}
	var acked, dead atomic.Int64
	failed := sync.Map{}
	counted := natsretry.Hooks{DeadLettered: func(context.Context, string, retry.Reason) { dead.Add(1) }}
	e.consume(t, natsretry.Config{Hooks: counted, Default: retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: ms}}},
		func(_ context.Context, m jetstream.Msg) error {
			if strings.HasPrefix(m.Subject(), "jobs.dead.") {
				return retry.Permanent(errors.New("malformed"))
			}
			if _, again := failed.LoadOrStore(m.Subject(), true); !again {
				return errors.New("down")
			}
			acked.Add(1)
			return nil
		})
	monitor, _ := connect(t, e.url)
	sub, err := monitor.Subscribe("$JS.API.>", func(m *nats.Msg) {
		if strings.HasPrefix(m.Subject, "$JS.API.STREAM.") {
			mu.Lock()
			calls[m.Subject]++
			mu.Unlock()
		}
	})
	require.NoError(t, err)
	require.NoError(t, monitor.Flush())
	for i := range 1000 {
		e.publish(t, fmt.Sprintf("jobs.ok.%d", i), "x", nil)
	}
	for i := range 100 {
		e.publish(t, fmt.Sprintf("jobs.dead.%d", i), "x", nil)
	}
	// Waited on by the hooks and the consumer's info alone: the test's
	// own reads of the streams would be admin requests too.
	eventually(t, "every message acked or dead-lettered", func() bool {
		u, p := e.pending(t)
		return acked.Load() == 1000 && dead.Load() == 100 && u == 0 && p == 0
	})
	require.NoError(t, monitor.Flush())
	mu.Lock()
	assert.Empty(t, calls, "admin requests on the data path")
	mu.Unlock()
	require.NoError(t, sub.Unsubscribe())
	eventually(t, "no history left", func() bool { return e.histories(t) == 0 })
	assert.Len(t, e.deadMessages(t, 100), 100)
}

// TestAForgedCopyOfAParkedMessageClaimsNothing: a copy published by anyone
// with a parked message's own subject and id (both read from the parking
// stream) and a payload of its own runs as a message of its own: not as
// the parked message, not under its history, its record and its copy
// untouched. Until a copy was bound to its record by the copy's stream
// sequence, the forged copy ran as the victim.
func TestAForgedCopyOfAParkedMessageClaimsNothing(t *testing.T) {
	e := newEnv(t)
	got := newDecisions()
	var mu sync.Mutex
	ran := map[string]string{} // payload → the subject it ran as
	hour := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Hour}}
	e.consume(t, natsretry.Config{Default: hour, Hooks: got.hooks()}, func(_ context.Context, m jetstream.Msg) error {
		mu.Lock()
		ran[string(m.Data())] = m.Subject()
		mu.Unlock()
		if string(m.Data()) == "victim" {
			return errors.New("down")
		}
		return nil
	})
	e.publish(t, "jobs.victim", "victim", nil)
	got.wait(t, 1)
	ctx := context.Background()
	eventually(t, "the victim parked", func() bool {
		info, err := e.park.Info(ctx)
		require.NoError(t, err)
		return info.State.Msgs == 1
	})
	genuine, err := e.park.GetMsg(ctx, 1)
	require.NoError(t, err)
	records := e.histories(t)
	forged := nats.NewMsg(genuine.Subject)
	forged.Header.Set(natsretry.HeaderParked, genuine.Header.Get(natsretry.HeaderParked))
	forged.Header.Set(natsretry.HeaderStrategy, `{"strategy": "none"}`)
	forged.Data = []byte("forged")
	_, err = e.js.PublishMsg(ctx, forged)
	require.NoError(t, err)
	eventually(t, "the forged copy run and acked", func() bool {
		mu.Lock()
		_, done := ran["forged"]
		mu.Unlock()
		info, err := e.park.Info(ctx)
		require.NoError(t, err)
		return done && info.State.Msgs == 1
	})
	mu.Lock()
	assert.Equal(t, genuine.Subject, ran["forged"], "it ran as what it is, not as jobs.victim")
	mu.Unlock()
	still, err := e.park.GetMsg(ctx, 1)
	require.NoError(t, err, "the genuine copy still parked")
	assert.Equal(t, "victim", string(still.Data))
	assert.Equal(t, records, e.histories(t), "no record added or removed")
	got.mu.Lock()
	defer got.mu.Unlock()
	assert.Len(t, got.all, 1, "the victim's one failure, nothing claimed")
}

// TestParkRefusesStreamsWithLimits: Wrap refuses a parking stream with
// any limit that can drop a copy before it runs, naming it.
func TestParkRefusesStreamsWithLimits(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for i, c := range []struct {
		cfg  jetstream.StreamConfig
		want string
	}{
		{jetstream.StreamConfig{MaxAge: 3 * time.Second}, "has MaxAge 3s"},
		{jetstream.StreamConfig{MaxMsgs: 2}, "has MaxMsgs 2"},
		{jetstream.StreamConfig{MaxBytes: 300}, "has MaxBytes 300"},
		{jetstream.StreamConfig{MaxMsgsPerSubject: 1}, "has MaxMsgsPerSubject 1"},
		{jetstream.StreamConfig{Discard: jetstream.DiscardNew}, "has DiscardNew"},
	} {
		prefix := fmt.Sprintf("limited%d", i)
		c.cfg.Name, c.cfg.Subjects, c.cfg.Retention = strings.ToUpper(prefix), []string{prefix + ".>"}, jetstream.WorkQueuePolicy
		_, err := e.js.CreateStream(ctx, c.cfg)
		require.NoError(t, err)
		p, err := natsretry.New(ctx, e.js, natsretry.Config{History: e.kv, DeadLetter: "dead.jobs", Park: prefix})
		require.NoError(t, err)
		_, _, err = p.Wrap(ctx, e.consumer, func(context.Context, jetstream.Msg) error { return nil })
		assert.ErrorContains(t, err, "Config.Park: its stream "+fmt.Sprintf("%q", c.cfg.Name)+" "+c.want)
	}
}

// TestAPurgedCopyIsReported: a parked copy purged from the parking stream
// is reported within three of the parking's periods (its AckWait, 1 s
// here) after it was due: logged with its message's subject, the Lost hook
// told, its records removed. Until it was, the message was lost with
// nothing said and its record kept for ever.
func TestAPurgedCopyIsReported(t *testing.T) {
	s := startServer(t, t.TempDir(), -1)
	e := setup(t, s.ClientURL(), 1, time.Second, 0)
	lost := make(chan string, 1)
	var logs logBuffer
	wait := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 2 * time.Second}}
	e.consume(t, natsretry.Config{Default: wait, ParkAfter: 100 * ms, Logger: logs.logger(),
		Hooks: natsretry.Hooks{Lost: func(_ context.Context, subject string) { lost <- subject }}},
		func(context.Context, jetstream.Msg) error { return errors.New("down") })
	e.publish(t, "jobs.a", "x", nil)
	ctx := context.Background()
	eventually(t, "the message parked", func() bool {
		info, err := e.park.Info(ctx)
		require.NoError(t, err)
		u, p := e.pending(t)
		return info.State.Msgs == 1 && u == 0 && p == 0
	})
	require.NoError(t, e.park.Purge(ctx))
	purged := time.Now()
	select {
	case subject := <-lost:
		assert.Equal(t, "jobs.a", subject)
		assert.Less(t, time.Since(purged), 2*time.Second+3*time.Second, "within three periods after due")
	case <-time.After(within):
		t.Fatalf("the lost copy was not reported within %v", within)
	}
	eventually(t, "its records removed", func() bool { return e.histories(t) == 0 })
	assert.Contains(t, logs.String(), "the message is lost")
	assert.Contains(t, logs.String(), "subject=jobs.a")
}

// TestAParkingConsumerGoneIsMadeAgain: with the parking consumer deleted,
// the policy makes it again, says so, and a message parked after runs.
func TestAParkingConsumerGoneIsMadeAgain(t *testing.T) {
	s := startServer(t, t.TempDir(), -1)
	e := setup(t, s.ClientURL(), 1, time.Second, 0)
	var logs logBuffer
	var runs atomic.Int64
	e.consume(t, natsretry.Config{ParkAfter: 100 * ms, Logger: logs.logger(),
		Default: retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 500 * ms}}},
		func(context.Context, jetstream.Msg) error {
			if runs.Add(1) == 1 {
				return errors.New("down")
			}
			return nil
		})
	ctx := context.Background()
	require.NoError(t, e.js.DeleteConsumer(ctx, "PARK", "JOBS_worker_parked"))
	e.publish(t, "jobs.a", "x", nil)
	eventually(t, "the parked message run again and acked", func() bool {
		u, p := e.pending(t)
		info, err := e.park.Info(ctx)
		require.NoError(t, err)
		return runs.Load() == 2 && u == 0 && p == 0 && info.State.Msgs == 0
	})
	assert.Contains(t, logs.String(), "the parking consumer was gone; made it again")
}

// TestParkingIsTheDefault: New refuses a configuration with neither a
// parking prefix nor WaitInPlace, naming Config.Park, and one with both.
func TestParkingIsTheDefault(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, err := natsretry.New(ctx, e.js, natsretry.Config{History: e.kv, DeadLetter: "dead.jobs"})
	assert.ErrorContains(t, err, "natsretry: Config.Park: a parking stream's subject prefix is required")
	_, err = natsretry.New(ctx, e.js, natsretry.Config{History: e.kv, DeadLetter: "dead.jobs", Park: "park", WaitInPlace: true})
	assert.ErrorContains(t, err, "Config.Park and Config.WaitInPlace: choose one")
	_, err = natsretry.New(ctx, e.js, natsretry.Config{History: e.kv, DeadLetter: "dead.jobs", WaitInPlace: true})
	assert.NoError(t, err)
}
