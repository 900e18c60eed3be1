package natsretry_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/natsretry"
	"github.com/retrypolicy/retrypolicy/retry"
)

// TestEarlyRedeliveryCountsNothing pins that a delivery before the
// message's due time is sent back to it, neither running nor counting.
func TestEarlyRedeliveryCountsNothing(t *testing.T) {
	e := newEnv(t)
	got := newDecisions()
	var c clock
	hooks := got.hooks()
	decided := hooks.Decided
	hooks.Decided = func(ctx context.Context, subject string, d retrypolicy.Decision, gaveUp retry.Reason) {
		decided(ctx, subject, d, gaveUp)
		c.advance(-time.Second) // the policy's clock steps back: the redelivery, 20ms later, is early
	}
	var calls atomic.Int64
	e.consume(t, natsretry.Config{Hooks: hooks, Now: c.now, Default: retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 20 * ms}}},
		func(context.Context, jetstream.Msg) error {
			if calls.Add(1) <= 2 {
				return errors.New("down")
			}
			return nil
		})
	e.publish(t, "jobs.a", "x", nil)
	ds := got.wait(t, 2)
	eventually(t, "the message acked", func() bool { u, p := e.pending(t); return u == 0 && p == 0 })
	assert.Equal(t, 1, ds[0].InWindow)
	assert.Equal(t, 2, ds[1].InWindow, "the early deliveries between count nothing")
	assert.EqualValues(t, 3, calls.Load(), "early deliveries do not run")
	info, err := e.consumer.Info(context.Background())
	require.NoError(t, err)
	assert.Greater(t, info.Delivered.Consumer, uint64(3), "JetStream delivered it early at least once")
}

// TestConsumerDiesMidRun pins that a delivery whose consumer died while
// it ran (no ack, no nak: JetStream redelivers it after AckWait) counts as
// one failure, with no uptime credit.
func TestConsumerDiesMidRun(t *testing.T) {
	s := startServer(t, t.TempDir(), -1)
	e := setup(t, s.ClientURL(), 1, 500*ms, 0)
	strategy := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5, Window: time.Hour,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: ms}}

	// The first consumer, on a connection of its own, dies mid-run.
	nc1, js1 := connect(t, s.ClientURL())
	started, release := make(chan struct{}), make(chan struct{})
	first := newDecisions()
	p1, err := natsretry.New(context.Background(), js1, natsretry.Config{Default: strategy, History: mustKV(t, js1),
		DeadLetter: "dead.jobs", Park: "park", Hooks: first.hooks(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	c1, err := js1.Consumer(context.Background(), "JOBS", "worker")
	require.NoError(t, err)
	var once sync.Once
	cc, err := p1.Consume(context.Background(), c1, func(context.Context, jetstream.Msg) error {
		once.Do(func() { close(started) })
		<-release
		return errors.New("the process is gone")
	})
	require.NoError(t, err)
	e.publish(t, "jobs.a", "x", nil)
	<-started
	nc1.Close() // the process dies: nothing it does after reaches the server
	close(release)
	cc.Stop()

	second, ds := failOnceThenAck(t, e, strategy, 2)
	assert.Equal(t, 1, ds[0].InWindow, "the run that died counts once")
	assert.Zero(t, ds[0].Owed-ds[0].Delay, "with no uptime credit")
	assert.Equal(t, 2, ds[1].InWindow, "then the next run's failure")
	assert.Len(t, second.wait(t, 2), 2, "nothing more is counted")
	assert.Len(t, first.wait(t, 1), 1, "the dead consumer decided, but nothing it stored reached the server")
	// The history is removed after the ack is confirmed, so it may still
	// be there a moment after the consumer's pending count reads zero.
	eventually(t, "no history left", func() bool { return e.histories(t) == 0 })
}

func mustKV(t testing.TB, js jetstream.JetStream) jetstream.KeyValue {
	kv, err := js.KeyValue(context.Background(), "retrypolicy")
	require.NoError(t, err)
	return kv
}

// workload is ok messages that fail twice then succeed, and dead ones
// that always fail, each on a subject of its own (jobs.ok-1, jobs.dead-1),
// with each message's runs and the runs it had made when it was first
// done or dead-lettered.
type workload struct {
	mu      sync.Mutex
	runs    map[string]int
	settled map[string]int
	dead    map[string]int // dead-letter copies, duplicates dropped
}

func (w *workload) handle(_ context.Context, m jetstream.Msg) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	id := strings.TrimPrefix(m.Subject(), "jobs.")
	w.runs[id]++
	if strings.HasPrefix(id, "dead") || w.runs[id] <= 2 {
		return fmt.Errorf("%s fails, run %d", id, w.runs[id])
	}
	w.settle(id)
	return nil
}

// settle records that id is done or dead-lettered, the first time.
func (w *workload) settle(id string) {
	if _, ok := w.settled[id]; !ok {
		w.settled[id] = w.runs[id]
	}
}

func (w *workload) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.settled)
}

// runWorkload publishes n ok and n dead messages, calls disrupt once n
// failures are decided, and checks, when every message is done or
// dead-lettered, that no message and no history was lost and none was
// dead-lettered twice. JetStream delivers at least once: a message whose
// ack or term was lost with a server runs again, and that run is not
// checked.
func runWorkload(t *testing.T, e *env, n int, disrupt func()) {
	runWorkloadWith(t, e, n, disrupt, natsretry.Config{})
}

// runWorkloadWith is runWorkload under a policy of cfg (its strategy and
// hooks the workload's).
func runWorkloadWith(t *testing.T, e *env, n int, disrupt func(), cfg natsretry.Config) {
	strategy := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3, Window: time.Hour,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 50 * ms}}
	w := &workload{runs: map[string]int{}, settled: map[string]int{}, dead: map[string]int{}}
	got := newDecisions()
	hooks := got.hooks()
	hooks.DeadLettered = func(_ context.Context, subject string, _ retry.Reason) {
		w.mu.Lock()
		defer w.mu.Unlock()
		id := strings.TrimPrefix(subject, "jobs.")
		w.dead[id]++
		w.settle(id)
	}
	// Limits of a few seconds, so that the bucket's TTL (faultTTL) is
	// above the longest wait the policy can make.
	cfg.Default, cfg.Hooks, cfg.WaitLimit, cfg.MaxHeaderDelay = strategy, hooks, 5*time.Second, 5*time.Second
	e.consume(t, cfg, w.handle)
	for i := range n {
		e.publish(t, fmt.Sprintf("jobs.ok-%d", i), "", nil)
		e.publish(t, fmt.Sprintf("jobs.dead-%d", i), "", nil)
	}
	got.wait(t, n)
	disrupt()
	eventually(t, "every message done or dead-lettered", func() bool { return w.count() == 2*n })
	dead := e.deadMessages(t, 0)
	w.mu.Lock()
	defer w.mu.Unlock()
	copies := map[string]int{}
	for _, m := range dead {
		id := strings.TrimPrefix(m.Header.Get(natsretry.HeaderSubject), "jobs.")
		copies[id]++
		assert.Equal(t, "3", m.Header.Get(natsretry.HeaderFailures), id)
	}
	for id, c := range copies {
		assert.Equal(t, 1, c, "%s dead-lettered %d times", id, c)
	}
	for i := range n {
		ok, gone := fmt.Sprintf("ok-%d", i), fmt.Sprintf("dead-%d", i)
		assert.Equal(t, 1, copies[gone], "%s dead-lettered once", gone)
		assert.LessOrEqual(t, w.settled[gone], 3, "%s ran more than its three attempts before it died: a history was lost (%v)", gone, w.settled)
		// An ok message whose ack was lost with the server is redelivered,
		// and that delivery counts as a failure: it may end dead.
		assert.LessOrEqual(t, w.settled[ok], 3, "%s ran more than it failed, plus one", ok)
	}
	// A delivery JetStream made again after the message's ack (it waited
	// in the client's buffer past AckWait while the server was away) may
	// leave a history behind, at most one a message: the bucket's TTL
	// removes it (the README's advice), which the test does not wait for.
	left := e.histories(t)
	assert.LessOrEqual(t, left, uint64(2*n), "at most a history a message is left")
	t.Logf("%d histories left by deliveries after an ack, for the bucket's TTL", left)
}

// faultTTL is the history bucket's TTL in the tests of faults: above the
// longest wait their policy can make (its limits of 5 s) plus AckWait, and
// longer than the outage (a client's request waits 5 s for a server that
// is away).
const faultTTL = 20 * time.Second

// TestServerRestartsMidRun stops the server (file storage) while messages
// fail and are retried, and starts it again on the same directory.
func TestServerRestartsMidRun(t *testing.T) {
	restartMidRun(t, natsretry.Config{})
}

// TestServerRestartsWithParkedMessages: the same, every wait parked (the
// parking threshold 10 ms below the strategy's 50 ms): no parked message
// is lost or run more than its attempts across the restart.
func TestServerRestartsWithParkedMessages(t *testing.T) {
	restartMidRun(t, natsretry.Config{Park: "park", ParkAfter: 10 * ms})
}

// restartMidRun runs the workload under cfg on a server that is stopped
// and started again on its directory midway.
func restartMidRun(t *testing.T, cfg natsretry.Config) {
	dir, port := t.TempDir(), freePort(t)
	s := startServer(t, dir, port)
	e := setup(t, s.ClientURL(), 1, 2*time.Second, faultTTL)
	runWorkloadWith(t, e, 20, func() {
		s.Shutdown()
		s.WaitForShutdown()
		startServer(t, dir, port)
	}, cfg)
}

// TestClusterLosesAServer runs the workload on three servers on loopback,
// every stream and the bucket with three replicas, and stops one midway.
func TestClusterLosesAServer(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-server cluster takes seconds to form; -short leaves it out")
	}
	ports := []int{freePort(t), freePort(t), freePort(t)}
	routes := fmt.Sprintf("nats://127.0.0.1:%d,nats://127.0.0.1:%d,nats://127.0.0.1:%d", ports[0], ports[1], ports[2])
	var servers []*server.Server
	var urls []string
	for i, cport := range ports {
		servers = append(servers, launchServer(t, t.TempDir(), -1, func(o *server.Options) {
			o.ServerName = fmt.Sprintf("s%d", i)
			o.Cluster = server.ClusterOpts{Name: "retrypolicy", Host: "127.0.0.1", Port: cport}
			o.Routes = server.RoutesFromStr(routes)
		}))
	}
	for _, s := range servers {
		require.True(t, s.ReadyForConnections(within), "a server of the cluster did not start")
		urls = append(urls, s.ClientURL())
	}
	url := strings.Join(urls, ",")
	eventually(t, "the cluster elects a meta leader", func() bool {
		for _, s := range servers {
			if s.JetStreamIsLeader() {
				return true
			}
		}
		return false
	})
	var e *env
	eventually(t, "the streams made on three replicas", func() bool {
		ok := true
		func() {
			defer func() { ok = recover() == nil && ok }()
			e = setupCluster(t, url)
			ok = e != nil
		}()
		return ok
	})
	runWorkload(t, e, 10, func() {
		servers[0].Shutdown()
	})
}

// setupCluster is setup with three replicas, or nil while the cluster
// cannot make them yet.
func setupCluster(t *testing.T, url string) *env {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, js := connect(t, url)
	for _, name := range []string{"JOBS", "DEAD"} {
		if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name) + ".>"},
			Storage: jetstream.FileStorage, Replicas: 3}); err != nil {
			return nil
		}
	}
	if _, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "retrypolicy", Storage: jetstream.FileStorage, Replicas: 3, TTL: faultTTL}); err != nil {
		return nil
	}
	e := setup(t, url, 3, 2*time.Second, faultTTL)
	eventually(t, "the consumer has a leader", func() bool {
		info, err := e.consumer.Info(context.Background())
		return err == nil && info.Cluster != nil && info.Cluster.Leader != ""
	})
	return e
}

// TestHistoryBounded pins that a message failing for ever under
// unless_stopped keeps a history no larger than its window's failures,
// and that messages each failing once leave no history once acked.
func TestHistoryBounded(t *testing.T) {
	e := newEnv(t)
	got := newDecisions()
	var c clock
	strategy := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: ms}}
	e.consume(t, natsretry.Config{Default: strategy, Hooks: got.hooks(), Now: c.now},
		func(context.Context, jetstream.Msg) error {
			c.advance(10 * time.Minute)
			return errors.New("down for ever")
		})
	e.publish(t, "jobs.a", "x", nil)
	ds := got.wait(t, 40)
	most := 0
	for _, d := range ds {
		most = max(most, d.InWindow)
	}
	assert.Less(t, most, 40, "failures leave the window as they age")
	entry := e.history(t, 1)
	assert.Less(t, len(entry.Value()), 8+most*5, "the history holds at most the window's failures: %d bytes", len(entry.Value()))
}

// TestManyMessagesLeaveNoHistory pins that 100,000 messages, each failing
// once, leave no history behind once acked. They take 20 s on two cores:
// CI runs them all (RETRYPOLICY_TEST_FULL=1, set by .ci/run); the README's
// test command runs 10,000, so that it stays within its five minutes
// from a cold cache, and -short 2,000.
func TestManyMessagesLeaveNoHistory(t *testing.T) {
	n := 100_000
	switch {
	case testing.Short():
		n = 2_000
	case os.Getenv("RETRYPOLICY_TEST_FULL") == "":
		n = 10_000
		t.Log("10,000 messages; RETRYPOLICY_TEST_FULL=1 runs all 100,000, as CI does")
	}
	e := newEnv(t)
	strategy := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: ms}}
	var failed sync.Map
	var done atomic.Int64
	handler := func(_ context.Context, m jetstream.Msg) error {
		md, _ := m.Metadata()
		if _, again := failed.LoadOrStore(md.Sequence.Stream, true); !again {
			return errors.New("the first run fails")
		}
		done.Add(1)
		return nil
	}
	for range 4 {
		e.consume(t, natsretry.Config{Default: strategy}, handler)
	}
	ctx := context.Background()
	for i := range n {
		_, err := e.js.PublishAsync("jobs.a", []byte(strconv.Itoa(i)))
		require.NoError(t, err)
		if i%1000 == 999 || i == n-1 { // within the client's 4,000 outstanding publications
			select {
			case <-e.js.PublishAsyncComplete():
			case <-time.After(within):
				t.Fatal("publishing did not complete")
			}
		}
	}
	deadline := time.Now().Add(5 * time.Minute)
	for done.Load() < int64(n) {
		require.True(t, time.Now().Before(deadline), "%d of %d done", done.Load(), n)
		time.Sleep(20 * ms)
	}
	eventually(t, "every message acked and its history removed", func() bool {
		info, err := e.consumer.Info(ctx)
		require.NoError(t, err)
		return info.NumAckPending == 0 && info.NumPending == 0 && e.histories(t) == 0
	})
}

// TestStoppingIsNoFailure pins that a run interrupted by its consumer
// stopping (its context cancelled, and the run returning that) counts
// nothing: the next consumer's first failure of the message is its first.
func TestStoppingIsNoFailure(t *testing.T) {
	e := newEnv(t)
	strategy := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5, Window: time.Hour,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: ms}}
	stopping := newDecisions()
	ctx := context.Background()
	p, err := natsretry.New(ctx, e.js, natsretry.Config{Default: strategy, History: e.kv, DeadLetter: "dead.jobs", Park: "park",
		Hooks: stopping.hooks(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	started, ended := make(chan struct{}), make(chan struct{})
	var first sync.Once // the message may come back before the consumer stops
	cc, err := p.Consume(ctx, e.consumer, func(ctx context.Context, _ jetstream.Msg) error {
		first.Do(func() {
			close(started)
			<-ctx.Done()
			close(ended)
		})
		return ctx.Err()
	})
	require.NoError(t, err)
	e.publish(t, "jobs.a", "x", nil)
	<-started
	cc.Stop() // ends the handler's context
	<-ended

	_, ds := failOnceThenAck(t, e, strategy, 1)
	assert.Equal(t, 1, ds[0].InWindow, "the interrupted run counted nothing")
	assert.Empty(t, stopping.wait(t, 0), "the stopping consumer decided nothing")
}

// failOnceThenAck consumes env's message again under strategy, failing its
// next run and acking the one after, and returns the hooks' record and
// its first want decisions once the message is acked.
func failOnceThenAck(t *testing.T, e *env, strategy retrypolicy.Strategy, want int) (*decisions, []retrypolicy.Decision) {
	got := newDecisions()
	var calls atomic.Int64
	e.consume(t, natsretry.Config{Default: strategy, Hooks: got.hooks()}, func(context.Context, jetstream.Msg) error {
		if calls.Add(1) == 1 {
			return errors.New("down")
		}
		return nil
	})
	ds := got.wait(t, want)
	eventually(t, "the message acked", func() bool { u, p := e.pending(t); return calls.Load() >= 2 && u == 0 && p == 0 })
	return got, ds
}

// TestLongRunIsInProgress pins that a run longer than the consumer's
// AckWait is not taken for a dead one: the policy tells JetStream it is
// in progress every AckWait/2, so the message is not redelivered while it
// runs. JetStream's AckWait is real time: the run lasts two and a half of
// them, and each InProgress has half an AckWait (500ms) to spare.
func TestLongRunIsInProgress(t *testing.T) {
	s := startServer(t, t.TempDir(), -1)
	e := setup(t, s.ClientURL(), 1, time.Second, 0)
	var calls atomic.Int64
	done := make(chan uint64, 8)
	e.consume(t, natsretry.Config{}, func(ctx context.Context, m jetstream.Msg) error {
		calls.Add(1)
		select {
		case <-time.After(2500 * ms):
		case <-ctx.Done():
		}
		var delivered uint64 // 0 for no metadata, which fails the test
		if md, err := m.Metadata(); err == nil {
			delivered = md.NumDelivered
		}
		select {
		case done <- delivered:
		default:
		}
		return nil
	})
	e.publish(t, "jobs.a", "x", nil)
	select {
	case n := <-done:
		assert.EqualValues(t, 1, n, "the first delivery ran to its end")
	case <-time.After(within):
		t.Fatal("the run did not end")
	}
	eventually(t, "the message acked", func() bool { u, p := e.pending(t); return u == 0 && p == 0 })
	assert.EqualValues(t, 1, calls.Load(), "no redelivery while it ran")
	info, err := e.consumer.Info(context.Background())
	require.NoError(t, err)
	assert.Zero(t, info.NumRedelivered)
	assert.EqualValues(t, 1, info.Delivered.Consumer, "delivered once")
}
