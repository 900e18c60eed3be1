package natsretry_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/natsretry"
	"github.com/retrypolicy/retrypolicy/retry"
)

// within bounds every wait of a test for what a real server does: long
// enough for a loaded machine, and only reached when the test fails.
const within = 30 * time.Second

// freePort returns a loopback port nothing listens on.
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startServer starts a JetStream server on loopback at port, storing in
// dir, waits until it takes connections, and stops it when the test ends.
func startServer(t testing.TB, dir string, port int, configure ...func(*server.Options)) *server.Server {
	t.Helper()
	s := launchServer(t, dir, port, configure...)
	require.True(t, s.ReadyForConnections(within), "the server did not start")
	return s
}

// launchServer is startServer without the wait: a server of a cluster is
// ready only once the others are up.
func launchServer(t testing.TB, dir string, port int, configure ...func(*server.Options)) *server.Server {
	t.Helper()
	opts := &server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true}
	for _, c := range configure {
		c(opts)
	}
	s, err := server.NewServer(opts)
	require.NoError(t, err)
	go s.Start()
	t.Cleanup(s.Shutdown)
	return s
}

// connect connects to url, reconnecting for ever, and closes the
// connection when the test ends.
func connect(t testing.TB, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return nc, js
}

// env is a server with a work stream (jobs.>), a dead-letter stream
// (dead.>), a parking stream (park.>), a history bucket and a consumer of
// the work stream.
type env struct {
	url      string
	js       jetstream.JetStream
	kv       jetstream.KeyValue
	jobs     jetstream.Stream
	dead     jetstream.Stream
	park     jetstream.Stream // the parking stream, park.>, work-queue retention
	consumer jetstream.Consumer
}

// setup makes env's streams, bucket and consumer on the server at url,
// with replicas copies of each; ttl is the bucket's, 0 for none.
func setup(t testing.TB, url string, replicas int, ackWait, ttl time.Duration) *env {
	t.Helper()
	ctx := context.Background()
	_, js := connect(t, url)
	e := &env{url: url, js: js}
	var err error
	e.jobs, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"},
		Storage: jetstream.FileStorage, Replicas: replicas})
	require.NoError(t, err)
	e.dead, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "DEAD", Subjects: []string{"dead.>"},
		Storage: jetstream.FileStorage, Replicas: replicas})
	require.NoError(t, err)
	e.park, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "PARK", Subjects: []string{"park.>"},
		Storage: jetstream.FileStorage, Replicas: replicas, Retention: jetstream.WorkQueuePolicy})
	require.NoError(t, err)
	e.kv, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "retrypolicy",
		Storage: jetstream.FileStorage, Replicas: replicas, TTL: ttl, LimitMarkerTTL: time.Minute})
	require.NoError(t, err)
	e.consumer, err = js.CreateOrUpdateConsumer(ctx, "JOBS", jetstream.ConsumerConfig{Durable: "worker",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxDeliver: -1})
	require.NoError(t, err)
	return e
}

// newEnv starts a server of its own and sets env up on it.
func newEnv(t testing.TB) *env {
	s := startServer(t, t.TempDir(), -1)
	return setup(t, s.ClientURL(), 1, 30*time.Second, 0)
}

// decisions collects what a policy's hooks are told, safe for
// concurrent use.
type decisions struct {
	mu    sync.Mutex
	all   []retrypolicy.Decision
	gave  []retry.Reason
	dead  []retry.Reason
	added chan struct{}
}

func newDecisions() *decisions { return &decisions{added: make(chan struct{}, 1<<16)} }

func (d *decisions) hooks() natsretry.Hooks {
	return natsretry.Hooks{
		Decided: func(_ context.Context, _ string, dec retrypolicy.Decision, gaveUp retry.Reason) {
			d.mu.Lock()
			d.all, d.gave = append(d.all, dec), append(d.gave, gaveUp)
			d.mu.Unlock()
			d.added <- struct{}{}
		},
		DeadLettered: func(_ context.Context, _ string, reason retry.Reason) {
			d.mu.Lock()
			d.dead = append(d.dead, reason)
			d.mu.Unlock()
		},
	}
}

// wait waits for n decisions in all and returns them.
func (d *decisions) wait(t testing.TB, n int) []retrypolicy.Decision {
	t.Helper()
	deadline := time.After(within)
	for {
		d.mu.Lock()
		got := len(d.all)
		d.mu.Unlock()
		if got >= n {
			d.mu.Lock()
			defer d.mu.Unlock()
			return append([]retrypolicy.Decision(nil), d.all...)
		}
		select {
		case <-d.added:
		case <-deadline:
			t.Fatalf("%d decisions of %d after %v", got, n, within)
		}
	}
}

// logBuffer is a logger's output, safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// clock is a policy clock that runs as the machine's, plus a shift a test
// moves forward (a long run, failures aging out of a window).
type clock struct{ shift atomic.Int64 }

func (c *clock) now() time.Time           { return time.Now().Add(time.Duration(c.shift.Load())) }
func (c *clock) advance(by time.Duration) { c.shift.Add(int64(by)) }
func (e *env) publish(t testing.TB, subject string, data string, header nats.Header) uint64 {
	t.Helper()
	m := nats.NewMsg(subject)
	m.Data = []byte(data)
	for k, v := range header {
		m.Header[k] = v
	}
	ack, err := e.js.PublishMsg(context.Background(), m)
	require.NoError(t, err)
	return ack.Sequence
}

// consume runs h under a policy of cfg (History and DeadLetter filled in)
// on env's consumer until the test ends.
func (e *env) consume(t testing.TB, cfg natsretry.Config, h natsretry.Handler) *natsretry.Policy {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if cfg.History == nil {
		cfg.History = e.kv
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.DeadLetter == "" {
		cfg.DeadLetter = "dead.jobs"
	}
	if cfg.Park == "" && !cfg.WaitInPlace {
		cfg.Park = "park" // as the README builds it
	}
	p, err := natsretry.New(ctx, e.js, cfg)
	require.NoError(t, err)
	// A pull request lost while a cluster elects the consumer's leader is
	// made again after its expiry: a short one keeps a test from waiting
	// out the default 30 s.
	cc, err := p.Consume(ctx, e.consumer, h, jetstream.PullExpiry(time.Second))
	require.NoError(t, err)
	t.Cleanup(cc.Stop)
	return p
}

// deadMessages reads every message of the dead-letter stream.
func (e *env) deadMessages(t testing.TB, want int) []*jetstream.RawStreamMsg {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(within)
	for {
		info, err := e.dead.Info(ctx)
		require.NoError(t, err)
		if int(info.State.Msgs) >= want {
			var out []*jetstream.RawStreamMsg
			for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
				m, err := e.dead.GetMsg(ctx, seq)
				require.NoError(t, err)
				out = append(out, m)
			}
			return out
		}
		require.True(t, time.Now().Before(deadline), "%d dead-letter messages of %d", info.State.Msgs, want)
		time.Sleep(5 * time.Millisecond)
	}
}

// history returns the history entry of the message at stream sequence
// seq: its key is the stream, the consumer, the sequence and the message's
// timestamp.
func (e *env) history(t testing.TB, seq uint64) jetstream.KeyValueEntry {
	t.Helper()
	prefix := fmt.Sprintf("JOBS.worker.%d.", seq)
	for _, k := range e.keys(t) {
		if strings.HasPrefix(k, prefix) {
			entry, err := e.kv.Get(context.Background(), k)
			require.NoError(t, err)
			return entry
		}
	}
	t.Fatalf("no history under %s…", prefix)
	return nil
}

// histories is how many records the history bucket holds: its live keys
// (a removed record's marker is none).
func (e *env) histories(t testing.TB) uint64 { return uint64(len(e.keys(t))) }

// keys lists the history bucket's live keys. A listing is bounded by a
// few seconds and made again when it does not end: over a bucket whose
// delete markers expire while it reads, the client's listing can wait for
// ever for the end of its first pass.
func (e *env) keys(t testing.TB) []string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		lister, err := e.kv.ListKeys(ctx)
		require.NoError(t, err)
		var keys []string
		for k := range lister.Keys() {
			keys = append(keys, k)
		}
		ended := ctx.Err() == nil
		cancel()
		if ended {
			return keys
		}
		require.True(t, time.Now().Before(deadline), "the bucket's keys not listed within %v", within)
	}
}

// pending is how many messages the consumer has not had acked or
// terminated.
func (e *env) pending(t testing.TB) (unacked int, pending uint64) {
	t.Helper()
	info, err := e.consumer.Info(context.Background())
	require.NoError(t, err)
	return info.NumAckPending, info.NumPending
}

// eventually waits until cond holds.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		require.True(t, time.Now().Before(deadline), "after %v: %s", within, what)
		time.Sleep(5 * time.Millisecond)
	}
}

func failing(n int) natsretry.Handler {
	var calls atomic.Int64
	return func(context.Context, jetstream.Msg) error {
		if calls.Add(1) <= int64(n) {
			return fmt.Errorf("failure %d", calls.Load())
		}
		return nil
	}
}
