package natsretry_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
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
	"github.com/retrypolicy/retrypolicy/queuekit"
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
		p, err := natsretry.New(cctx, e.js, natsretry.Config{History: e.kv, DeadLetter: "dead.jobs", Park: "park", Logger: slog.New(slog.DiscardHandler)})
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

// nilErr is a handler's error type whose Error dereferences its receiver:
// a typed nil pointer of it, returned as an error, panics when read.
type nilErr struct{ text string }

func (e *nilErr) Error() string { return e.text }

// panicky is an error whose every method panics.
type panicky struct{}

func (panicky) Error() string { panic("Error") }
func (panicky) Unwrap() error { panic("Unwrap") }
func (panicky) Is(error) bool { panic("Is") }
func (panicky) As(any) bool   { panic("As") }

// itself is an error that unwraps to itself.
type itself struct{}

func (e *itself) Error() string { return "I am my own cause" }
func (e *itself) Unwrap() error { return e }

// TestNothingAHandlerDoesStopsTheConsumer: a handler that returns a
// Permanent typed nil whose Error panics, one that calls runtime.Goexit,
// one whose error panics in every method, one whose error unwraps to
// itself, under a Decided hook that panics each time: each is a failure of
// its run, dead-lettered (the strategy is none), and the message after
// them is handled. Until runs were guarded, the first killed the process,
// and Goexit silently ended the consumer's dispatch.
func TestNothingAHandlerDoesStopsTheConsumer(t *testing.T) {
	e := newEnv(t)
	var logs logBuffer
	var typedNil *nilErr
	var ok atomic.Bool
	e.consume(t, natsretry.Config{Default: retrypolicy.Strategy{Kind: retrypolicy.None}, Logger: logs.logger(),
		Hooks: natsretry.Hooks{Decided: func(context.Context, string, retrypolicy.Decision, retry.Reason) { panic("a hook") }}},
		func(_ context.Context, m jetstream.Msg) error {
			switch string(m.Data()) {
			case "typed nil":
				return retry.Permanent(typedNil)
			case "goexit":
				runtime.Goexit()
			case "panicky":
				return panicky{}
			case "itself":
				return &itself{}
			}
			ok.Store(true)
			return nil
		})
	for _, data := range []string{"typed nil", "goexit", "panicky", "itself", "fine"} {
		e.publish(t, "jobs.a", data, nil)
	}
	dead := e.deadMessages(t, 4)
	got := map[string][2]string{}
	for _, d := range dead {
		got[string(d.Data)] = [2]string{d.Header.Get(natsretry.HeaderReason), d.Header.Get(natsretry.HeaderError)}
	}
	assert.Equal(t, map[string][2]string{
		"typed nil": {"not_retryable", "an error whose Error method panicked"},
		"goexit":    {"strategy_none", "natsretry: the handler called runtime.Goexit"},
		"panicky":   {"strategy_none", "an error whose Error method panicked"},
		"itself":    {"strategy_none", "I am my own cause"},
	}, got)
	eventually(t, "the message after them handled", func() bool { u, p := e.pending(t); return ok.Load() && u == 0 && p == 0 })
	assert.Contains(t, logs.String(), "the Decided hook panicked")
	assert.Contains(t, logs.String(), "runtime.Goexit")
	assert.Contains(t, logs.String(), "goroutine ", "logged with the stack")
}

// TestStoppingAConsumerStopsKeepingItsRuns: a handler that ignores its
// context holds its message while its consumer runs; once the consumer is
// stopped, the run is no longer kept in progress, and another consumer of
// the same durable gets the message after AckWait. Until then, the run
// was kept in progress for ever: the other consumer got nothing in 6
// AckWaits.
func TestStoppingAConsumerStopsKeepingItsRuns(t *testing.T) {
	s := startServer(t, t.TempDir(), -1)
	e := setup(t, s.ClientURL(), 1, time.Second, 0)
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	p, err := natsretry.New(ctx, e.js, natsretry.Config{History: e.kv, DeadLetter: "dead.jobs", Park: "park", Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	cc, err := p.Consume(ctx, e.consumer, func(context.Context, jetstream.Msg) error {
		started <- struct{}{}
		<-release // ignores its context
		return nil
	}, jetstream.PullExpiry(time.Second))
	require.NoError(t, err)
	e.publish(t, "jobs.a", "x", nil)
	<-started
	cancel()
	cc.Stop()
	var second atomic.Int64
	e.consume(t, natsretry.Config{}, func(context.Context, jetstream.Msg) error { second.Add(1); return nil })
	eventually(t, "the other consumer gets the message", func() bool { return second.Load() == 1 })
}

// TestARunPastMaxRunIsAbandoned: a run that ignores its context past
// Config.MaxRun has its context cancelled and is abandoned: JetStream
// redelivers the message after AckWait, that run counts (one failure: the
// delivery that ended unseen) and acks it; what the abandoned run returns
// later is discarded, no decision made of it.
func TestARunPastMaxRunIsAbandoned(t *testing.T) {
	s := startServer(t, t.TempDir(), -1)
	e := setup(t, s.ClientURL(), 1, time.Second, 0)
	got := newDecisions()
	release, read := make(chan struct{}), make(chan struct{})
	var cancelled atomic.Bool
	var runs atomic.Int64
	var logs logBuffer
	e.consume(t, natsretry.Config{MaxRun: 500 * ms, Hooks: got.hooks(), Logger: logs.logger(),
		Default: retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: ms}}},
		func(ctx context.Context, _ jetstream.Msg) error {
			if runs.Add(1) > 1 {
				return nil
			}
			select {
			case <-ctx.Done():
				cancelled.Store(true)
			case <-time.After(within):
			}
			<-release
			return signalling{read: read}
		})
	e.publish(t, "jobs.a", "x", nil)
	eventually(t, "the message redelivered and acked", func() bool { u, p := e.pending(t); return runs.Load() == 2 && u == 0 && p == 0 })
	assert.True(t, cancelled.Load(), "the abandoned run's context was cancelled")
	decided := got.wait(t, 1)
	assert.Len(t, decided, 1, "the delivery that ended unseen, once")
	close(release)
	<-read // the abandoned run's error read: its last step; what it returned has nowhere to go
	got.mu.Lock()
	assert.Len(t, got.all, 1, "no decision on what the abandoned run returned")
	got.mu.Unlock()
	assert.Contains(t, logs.String(), "passed Config.MaxRun")
}

// TestALargeMessageIsDeadLettered: a message of 1,047,976 bytes (the
// server takes 1,048,576) fails for good with a long error: its copy sheds
// the error text, and whatever else of the added headers does not fit,
// and is dead-lettered. Until copies shed headers, the copy was refused
// as too big and the message naked and redelivered every second, for
// ever.
func TestALargeMessageIsDeadLettered(t *testing.T) {
	e := newEnv(t)
	e.consume(t, natsretry.Config{}, func(context.Context, jetstream.Msg) error {
		return retry.Permanent(errors.New(strings.Repeat("x", 1000)))
	})
	e.publish(t, "jobs.a", strings.Repeat("p", 1_047_976), nil)
	dead := e.deadMessages(t, 1)[0]
	assert.Len(t, dead.Data, 1_047_976)
	assert.Empty(t, dead.Header.Get(natsretry.HeaderError), "the error text is shed first")
	assert.Equal(t, "jobs.a", dead.Header.Get(natsretry.HeaderSubject), "where it came from, kept while it fits")
	eventually(t, "the message terminated", func() bool { u, p := e.pending(t); return u == 0 && p == 0 })
}

// TestWrapRefusesDeadLetterStreamsThatLoseOrLoop: Wrap refuses a
// dead-letter stream whose MaxMsgSize is below the work stream's, and a
// consumer whose stream captures the dead-letter subject (wildcards
// included), naming the setting. Until it did, a dead-letter subject
// inside the work stream turned one poison message into thousands of dead
// letters in seconds.
func TestWrapRefusesDeadLetterStreamsThatLoseOrLoop(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: "SMALL", Subjects: []string{"small.>"}, MaxMsgSize: 1000})
	require.NoError(t, err)
	for _, c := range []struct{ deadLetter, want string }{
		{"small.jobs", `the dead-letter stream "SMALL"'s MaxMsgSize is 1000, below its stream "JOBS"'s (unlimited)`},
		{"jobs.dead", `its stream "JOBS" captures Config.DeadLetter "jobs.dead" (by "jobs.>")`},
	} {
		p, err := natsretry.New(ctx, e.js, natsretry.Config{History: e.kv, DeadLetter: c.deadLetter, Park: "park"})
		require.NoError(t, err, "New checks only that some stream captures it")
		_, _, err = p.Wrap(ctx, e.consumer, func(context.Context, jetstream.Msg) error { return nil })
		assert.ErrorContains(t, err, c.want)
		_, err = p.Consume(ctx, e.consumer, func(context.Context, jetstream.Msg) error { return nil })
		assert.ErrorContains(t, err, c.want)
	}
}

// TestAClockSteppedBackIsNotObeyed: under a fixed 1 s strategy the
// consumer's clock steps back an hour after the first failure: the
// redelivery finds its due time an hour away, farther than the wait
// decided (1 s) plus AckWait, and runs the message rather than park it for
// the hour; and the wait decided on its next failure is 1 s, not the hour
// back to the first failure's instant. Until it was bounded by what was
// decided, that wait was stored as 59m59s.
func TestAClockSteppedBackIsNotObeyed(t *testing.T) {
	s := startServer(t, t.TempDir(), -1)
	e := setup(t, s.ClientURL(), 1, 2*time.Second, 0)
	var c clock
	var runs atomic.Int64
	var once sync.Once
	var mu sync.Mutex
	var waits []time.Duration
	stepBack := natsretry.Hooks{Decided: func(_ context.Context, _ string, d retrypolicy.Decision, _ retry.Reason) {
		mu.Lock()
		waits = append(waits, d.Due.Sub(c.now()))
		mu.Unlock()
		once.Do(func() { c.advance(-time.Hour) }) // once the first wait is decided, the clock steps back
	}}
	e.consume(t, natsretry.Config{Now: c.now, Hooks: stepBack, Default: retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Second}}},
		func(context.Context, jetstream.Msg) error {
			if runs.Add(1) <= 2 {
				return errors.New("down")
			}
			return nil
		})
	e.publish(t, "jobs.a", "x", nil)
	eventually(t, "the message run twice more and acked, never parked for an hour", func() bool {
		u, p := e.pending(t)
		return runs.Load() == 3 && u == 0 && p == 0
	})
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, waits, 2)
	assert.LessOrEqual(t, waits[1], time.Second, "the second wait is what the strategy decided")
}

// TestAForgedLastSeenIsRepaired: a history whose last delivery seen is
// 2^62 (written by a stranger) is repaired, not obeyed: the Repaired hook
// is told, and the delivery runs. Until it was, every delivery of the
// message was skipped as an old copy, for ever, with nothing logged. The
// history is forged before any policy runs: the message's first delivery
// is fetched and left unacked, so that the policy meets the forgery at the
// redelivery, whatever the machine's speed.
func TestAForgedLastSeenIsRepaired(t *testing.T) {
	s := startServer(t, t.TempDir(), -1)
	e := setup(t, s.ClientURL(), 1, time.Second, 0)
	ctx := context.Background()
	seq := e.publish(t, "jobs.a", "x", nil)
	batch, err := e.consumer.Fetch(1)
	require.NoError(t, err)
	for range batch.Messages() { // delivery 1, never acked
	}
	stored, err := e.jobs.GetMsg(ctx, seq)
	require.NoError(t, err)
	// Version 2, no flags, last seen 2^62, due 0, wait 0, no failures.
	forged := binary.AppendUvarint([]byte{2, 0}, 1<<62)
	forged = queuekit.Record{}.AppendBinary(append(forged, 0, 0))
	_, err = e.kv.Put(ctx, fmt.Sprintf("JOBS.worker.%d.%d", seq, stored.Time.UnixNano()), forged)
	require.NoError(t, err)
	var repaired, runs atomic.Int64
	var logs logBuffer
	e.consume(t, natsretry.Config{Logger: logs.logger(), Hooks: natsretry.Hooks{Repaired: func(context.Context, string) { repaired.Add(1) }}},
		func(context.Context, jetstream.Msg) error { runs.Add(1); return nil })
	eventually(t, "the message run and acked", func() bool { u, p := e.pending(t); return runs.Load() == 1 && u == 0 && p == 0 })
	assert.EqualValues(t, 1, repaired.Load())
	assert.Contains(t, logs.String(), "claims a delivery far beyond this one", "read, then repaired: not merely unreadable")
}

// TestAHeaderStrategyIsBoundedByTheConfiguration: a message whose own
// strategy waits 100 years after a failure waits no longer than
// Config.MaxHeaderDelay (2 s here; by default its subject's strategy's
// cap, an hour for the default): it is due at its failure plus 2 s, and
// runs again then. Until it was bounded, 1,000 such messages held every
// slot of the consumer for ever.
func TestAHeaderStrategyIsBoundedByTheConfiguration(t *testing.T) {
	e := newEnv(t)
	got := newDecisions()
	var runs atomic.Int64
	e.consume(t, natsretry.Config{MaxHeaderDelay: 2 * time.Second, Hooks: got.hooks()}, func(context.Context, jetstream.Msg) error {
		if runs.Add(1) == 1 {
			return errors.New("down")
		}
		return nil
	})
	century := `{"strategy":"unless_stopped","backoff":{"kind":"fixed","base_delay_secs":3153600000}}`
	e.publish(t, "jobs.a", "x", nats.Header{natsretry.HeaderStrategy: []string{century}})
	d := got.wait(t, 1)[0]
	assert.Equal(t, retrypolicy.Wait, d.Action)
	assert.Equal(t, 3153600000*time.Second, d.Delay, "the strategy owes a century")
	eventually(t, "the message run again after 2 s", func() bool { u, p := e.pending(t); return runs.Load() == 2 && u == 0 && p == 0 })
}

// TestMaxHeaderDelayDefaultsToTheSubjectsCap: without MaxHeaderDelay, a
// header's century is cut to the subject's strategy's cap (the default
// strategy's hour).
func TestMaxHeaderDelayDefaultsToTheSubjectsCap(t *testing.T) {
	e := newEnv(t)
	got := newDecisions()
	var returned atomic.Int64 // the run's return, Unix nanoseconds
	e.consume(t, natsretry.Config{Hooks: got.hooks()}, func(context.Context, jetstream.Msg) error {
		defer returned.Store(time.Now().UnixNano())
		return errors.New("down")
	})
	century := `{"strategy":"unless_stopped","backoff":{"kind":"fixed","base_delay_secs":3153600000}}`
	e.publish(t, "jobs.a", "x", nats.Header{natsretry.HeaderStrategy: []string{century}})
	d := got.wait(t, 1)[0]
	seen := time.Now()
	// Due the failure (to the millisecond, read after the run returned and
	// before the decision was seen) plus the hour: bounds that hold
	// however loaded the machine is.
	assert.False(t, d.Due.After(seen.Add(time.Hour)), "due %v: within an hour", d.Due)
	assert.False(t, d.Due.Before(time.Unix(0, returned.Load()).Truncate(ms).Add(time.Hour)), "due %v: the hour's cap, not sooner", d.Due)
}

// TestAWaitingMessageHoldsNoSlot: 1,000 messages published with a
// year-long strategy of their own (a publisher's choice) fail and are
// parked, as the README builds parking: the work consumer (MaxAckPending
// 1,000) holds none of them, and a new message is handled within 5 s.
// Until waits were parked by default, each held a slot for its whole
// wait, and the new message waited behind them.
func TestAWaitingMessageHoldsNoSlot(t *testing.T) {
	e := newEnv(t)
	got := newDecisions()
	handled := make(chan time.Time, 1)
	e.consume(t, natsretry.Config{Hooks: got.hooks()}, func(_ context.Context, m jetstream.Msg) error {
		if m.Subject() == "jobs.new" {
			handled <- time.Now()
			return nil
		}
		return errors.New("down")
	})
	year := nats.Header{natsretry.HeaderStrategy: []string{`{"strategy":"unless_stopped","backoff":{"kind":"fixed","base_delay_secs":31536000}}`}}
	const n = 1000
	for i := range n {
		e.publish(t, fmt.Sprintf("jobs.wait.%d", i), "x", year)
	}
	got.wait(t, n)
	eventually(t, "every waiting message parked, none holding a slot", func() bool {
		u, p := e.pending(t)
		info, err := e.park.Info(context.Background())
		require.NoError(t, err)
		return u == 0 && p == 0 && info.State.Msgs == n
	})
	published := time.Now()
	e.publish(t, "jobs.new", "x", nil)
	select {
	case at := <-handled:
		t.Logf("the new message was handled %v after it was published, beside %d parked ones", at.Sub(published), n)
	case <-time.After(5 * time.Second):
		t.Fatalf("the new message was not handled within 5 s")
	}
}

// TestParkedMessagesRunWhenDue: a message whose waits (2 s) are longer
// than the parking threshold (500 ms) is parked after each failure and
// runs again no sooner than due, as it was published (its subject and
// headers), once at a time; it ends acked with no history left, or
// dead-lettered with where it came from.
func TestParkedMessagesRunWhenDue(t *testing.T) {
	e := newEnv(t)
	type run struct {
		subject, tenant string
		start, end      time.Time
	}
	var mu sync.Mutex
	runs := map[string][]run{}
	var running atomic.Int64
	twice := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 2 * time.Second}}
	e.consume(t, natsretry.Config{Park: "park", ParkAfter: 500 * ms, Default: twice}, func(_ context.Context, m jetstream.Msg) error {
		if running.Add(1) > 1 {
			t.Errorf("two runs at once")
		}
		defer running.Add(-1)
		r := run{subject: m.Subject(), tenant: m.Headers().Get("Tenant"), start: time.Now()}
		mu.Lock()
		defer mu.Unlock()
		r.end = time.Now()
		runs[string(m.Data())] = append(runs[string(m.Data())], r)
		if string(m.Data()) == "recovers" && len(runs["recovers"]) == 3 {
			return nil
		}
		return errors.New("down")
	})
	e.publish(t, "jobs.a", "recovers", nats.Header{"Tenant": []string{"acme"}})
	eventually(t, "the message acked after two parked waits", func() bool {
		u, p := e.pending(t)
		mu.Lock()
		defer mu.Unlock()
		return len(runs["recovers"]) == 3 && u == 0 && p == 0
	})
	e.publish(t, "jobs.b", "dies", nil)
	dead := e.deadMessages(t, 1)[0]
	assert.Equal(t, "jobs.b", dead.Header.Get(natsretry.HeaderSubject))
	assert.Equal(t, "JOBS", dead.Header.Get(natsretry.HeaderStream))
	assert.Equal(t, "2", dead.Header.Get(natsretry.HeaderSequence))
	assert.Equal(t, "3", dead.Header.Get(natsretry.HeaderFailures))
	mu.Lock()
	defer mu.Unlock()
	rs := runs["recovers"]
	for i, r := range rs {
		assert.Equal(t, "jobs.a", r.subject, "run %d sees the subject it was published to", i+1)
		assert.Equal(t, "acme", r.tenant, "and its headers")
		if i > 0 {
			// Due at the failure, to the millisecond, plus 2 s.
			assert.False(t, r.start.Before(rs[i-1].end.Truncate(ms).Add(2*time.Second)), "run %d at %v, %v after run %d ended", i+1, r.start, r.start.Sub(rs[i-1].end), i)
		}
	}
	eventually(t, "no history left, no parked copy left", func() bool {
		info, err := e.park.Info(context.Background())
		require.NoError(t, err)
		return e.histories(t) == 0 && info.State.Msgs == 0
	})
}

// TestAForgedParkedCopyClaimsNothing: a copy published straight to the
// parking subject with an id that has no record runs as a message of its
// own, with no failures, under the default strategy.
func TestAForgedParkedCopyClaimsNothing(t *testing.T) {
	e := newEnv(t)
	got := newDecisions()
	var runs atomic.Int64
	e.consume(t, natsretry.Config{Park: "park", Hooks: got.hooks()}, func(context.Context, jetstream.Msg) error {
		runs.Add(1)
		return nil
	})
	h := nats.Header{}
	h.Set(natsretry.HeaderParked, "0123456789abcdef0123456789abcdef")
	_, err := e.js.PublishMsg(context.Background(), &nats.Msg{Subject: "park.JOBS.worker.0123456789abcdef0123456789abcdef", Data: []byte("x"), Header: h})
	require.NoError(t, err)
	eventually(t, "the forged copy run and acked", func() bool {
		info, err := e.park.Info(context.Background())
		require.NoError(t, err)
		return runs.Load() == 1 && info.State.Msgs == 0
	})
	got.mu.Lock()
	defer got.mu.Unlock()
	assert.Empty(t, got.all, "no failure claimed")
}

// TestParkRefusesStreamsThatWouldLoseOrShare: Wrap refuses a Park prefix
// no stream captures, the work stream itself, and a parking stream without
// work-queue retention, naming Config.Park.
func TestParkRefusesStreamsThatWouldLoseOrShare(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: "KEEP", Subjects: []string{"keep.>"}})
	require.NoError(t, err)
	for _, c := range []struct{ park, want string }{
		{"nowhere", `Config.Park: no stream captures "nowhere.JOBS.worker.>"`},
		{"jobs", `Config.Park: its stream "JOBS" is the work stream`},
		{"keep", `Config.Park: its stream "KEEP" has Limits retention: make it WorkQueuePolicy`},
	} {
		p, err := natsretry.New(ctx, e.js, natsretry.Config{History: e.kv, DeadLetter: "dead.jobs", Park: c.park})
		require.NoError(t, err)
		_, _, err = p.Wrap(ctx, e.consumer, func(context.Context, jetstream.Msg) error { return nil })
		assert.ErrorContains(t, err, c.want)
	}
	_, err = natsretry.New(ctx, e.js, natsretry.Config{History: e.kv, DeadLetter: "dead.jobs", Park: "park.>"})
	assert.ErrorContains(t, err, `Config.Park: "park.>" is not a subject prefix`)
}

// TestAPanicWithAHostileValueIsLogged: a handler and a hook that panic
// with an error whose Error method panics too, under a logger that reads
// an error attribute's Error as a handler of the user's may (slog's own
// recover such a panic; a user's need not): each is logged and the
// consumer goes on. The recover must not hand the value on as it is.
func TestAPanicWithAHostileValueIsLogged(t *testing.T) {
	e := newEnv(t)
	var logs logBuffer
	var ok atomic.Bool
	e.consume(t, natsretry.Config{Default: retrypolicy.Strategy{Kind: retrypolicy.None},
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if err, isErr := a.Value.Any().(error); isErr {
				return slog.String(a.Key, err.Error())
			}
			return a
		}})),
		Hooks: natsretry.Hooks{DeadLettered: func(context.Context, string, retry.Reason) { panic(panicky{}) }}},
		func(_ context.Context, m jetstream.Msg) error {
			if string(m.Data()) == "panics" {
				panic(panicky{})
			}
			ok.Store(true)
			return nil
		})
	e.publish(t, "jobs.a", "panics", nil)
	e.publish(t, "jobs.a", "fine", nil)
	dead := e.deadMessages(t, 1)
	assert.Equal(t, "panics", string(dead[0].Data))
	eventually(t, "the message after it handled", func() bool { u, p := e.pending(t); return ok.Load() && u == 0 && p == 0 })
	assert.Contains(t, logs.String(), "the handler panicked")
	assert.Contains(t, logs.String(), "the DeadLettered hook panicked")
}

// TestAMessageTooLargeToParkWaitsInPlace: a message so near the server's
// maximum payload that its parked copy (its id header added) would not fit
// waits in its consumer as a nak, rather than fail to park every second
// until due: its next run is its second delivery, no sooner than due, and
// no copy is made.
func TestAMessageTooLargeToParkWaitsInPlace(t *testing.T) {
	e := newEnv(t)
	got := newDecisions()
	var logs logBuffer
	wait := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 3 * time.Second}}
	type run struct {
		at        time.Time
		delivered uint64
	}
	runs := make(chan run, 2)
	e.consume(t, natsretry.Config{ParkAfter: 100 * ms, Default: wait, Hooks: got.hooks(), Logger: logs.logger()},
		func(_ context.Context, m jetstream.Msg) error {
			md, err := m.Metadata()
			require.NoError(t, err)
			runs <- run{time.Now(), md.NumDelivered}
			if md.NumDelivered > 1 {
				return nil
			}
			return errors.New("down")
		})
	e.publish(t, "jobs.a", strings.Repeat("p", 1_048_576-20), nil)
	first := <-runs
	var second run
	select {
	case second = <-runs:
	case <-time.After(within):
		t.Fatalf("no second run within %v", within)
	}
	assert.Equal(t, uint64(2), second.delivered, "the wait was one nak, no failed move retried in between")
	assert.GreaterOrEqual(t, second.at.Sub(first.at), 3*time.Second-10*ms, "no sooner than due")
	info, err := e.park.Info(context.Background())
	require.NoError(t, err)
	assert.Zero(t, info.State.Msgs, "no copy")
	assert.NotContains(t, logs.String(), "cannot park")
	assert.Equal(t, 1, strings.Count(logs.String(), "too large to park"))
}

// signalling is an error that closes read when its text is read: the last
// thing the policy does with a run's error.
type signalling struct{ read chan struct{} }

func (s signalling) Error() string { close(s.read); return "late" }

// TestRaisedSizeLimitsAreSeen: the work and dead-letter streams take 1,000
// bytes, and a message of 700 fails for good with a 400-byte error: its
// dead letter sheds the error text. Both limits raised to 64 KiB while the
// consumer runs, the next such copy still sheds it (the limit read less
// than 30 s ago is trusted); 31 s on, the limit is read again and the copy
// keeps every header. Raised again to 128 KiB, a message of 100,000 bytes,
// which would not fit the limit read even bare, has the limit read at once
// and keeps every header and its message id. Until limits were read again,
// copies were cut to the limit read at start, the larger with none of the
// policy's headers and no message id.
func TestRaisedSizeLimitsAreSeen(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	limit := func(n int32) {
		for _, s := range []jetstream.Stream{e.jobs, e.dead} {
			cfg := s.CachedInfo().Config
			cfg.MaxMsgSize = n
			_, err := e.js.UpdateStream(ctx, cfg)
			require.NoError(t, err)
		}
	}
	limit(1000)
	var c clock
	text := strings.Repeat("e", 400)
	e.consume(t, natsretry.Config{Now: c.now}, func(context.Context, jetstream.Msg) error {
		return retry.Permanent(errors.New(text))
	})
	deadLetter := func(n int, size int) *jetstream.RawStreamMsg {
		e.publish(t, "jobs.a"+strconv.Itoa(n), strings.Repeat("p", size), nil)
		return e.deadMessages(t, n)[n-1]
	}
	assert.Empty(t, deadLetter(1, 700).Header.Get(natsretry.HeaderError), "1,000 bytes: the error text shed")
	limit(64 << 10)
	assert.Empty(t, deadLetter(2, 700).Header.Get(natsretry.HeaderError), "the limit read under 30 s ago is trusted")
	c.advance(31 * time.Second)
	whole := deadLetter(3, 700)
	assert.Equal(t, text, whole.Header.Get(natsretry.HeaderError), "read again: every header kept")
	assert.Equal(t, "jobs.a3", whole.Header.Get(natsretry.HeaderSubject))
	limit(128 << 10)
	large := deadLetter(4, 100_000)
	assert.Len(t, large.Data, 100_000)
	assert.Equal(t, text, large.Header.Get(natsretry.HeaderError), "read at once: every header kept")
	assert.Equal(t, "JOBS", large.Header.Get(natsretry.HeaderStream))
	assert.NotEmpty(t, large.Header.Get(jetstream.MsgIDHeader), "and its message id")
}
