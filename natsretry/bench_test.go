package natsretry

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/retrypolicy/retrypolicy/queuekit"
)

// benchMsg is a delivery as the handler sees it: only what the policy
// reads of it before storing.
type benchMsg struct {
	jetstream.Msg
	header nats.Header
}

func (m benchMsg) Headers() nats.Header { return m.header }
func (m benchMsg) Subject() string      { return "jobs.a" }

// BenchmarkFailedDelivery measures, for a message with 10 or 1,000
// failures in its window, the policy's own work on a failed delivery
// (part=adapter: reading its history, its own strategy from its header,
// the decision, the history written back) beside one Put of that history
// to a bucket of a JetStream server in the process (part=kvput), the
// cheapest storage round trip a failed delivery makes.
func BenchmarkFailedDelivery(b *testing.B) {
	for _, n := range []int{10, 1000} {
		const descriptor = `{"strategy": "bounded", "max_attempts": 2000, "window_secs": 604800}`
		policies, err := queuekit.NewPolicies(queuekit.Config{})
		if err != nil {
			b.Fatal(err)
		}
		p := &Policy{policies: policies, logger: slog.New(slog.DiscardHandler), now: time.Now}
		now := time.Now()
		h := history{seen: uint64(n)}
		for i := range n {
			h.failures = append(h.failures, now.Add(time.Duration(i-n)*time.Minute).Truncate(time.Millisecond).UnixNano())
		}
		stored := appendHistory(nil, h)
		m := delivery{p: p, msg: benchMsg{header: nats.Header{HeaderStrategy: []string{descriptor}}},
			md: &jetstream.MsgMetadata{NumDelivered: uint64(n + 1)}, seed: queuekit.Seed(7)}
		b.Run(fmt.Sprintf("failures=%d/part=adapter", n), func(b *testing.B) {
			ctx, fail := context.Background(), &failure{text: "down"}
			room := make([]int64, 0, 2*n+1)
			out := make([]byte, 0, 2*len(stored))
			b.ReportAllocs()
			for b.Loop() {
				hist, err := readHistory(stored, room)
				if err != nil {
					b.Fatal(err)
				}
				d := m // a delivery of its own, on the stack as handle makes it
				d.hist = hist
				d.pol, d.own = d.policyOf(ctx)
				d.judge(ctx, fail, span{now, now})
				out = appendHistory(out[:0], d.hist)
			}
			b.ReportMetric(float64(len(out)), "history-bytes")
		})
		b.Run(fmt.Sprintf("failures=%d/part=kvput", n), func(b *testing.B) {
			kv := benchBucket(b)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := kv.Put(ctx, "JOBS.worker.1", stored); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(stored)), "history-bytes")
		})
	}
}

// benchBucket starts a JetStream server storing to files and returns a
// bucket of it, as a deployment keeps its histories.
func benchBucket(b *testing.B) jetstream.KeyValue {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: b.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		b.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		b.Fatal("the server did not start")
	}
	b.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown() // no flush of the server's runs into the next benchmark
	})
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	kv, err := js.CreateOrUpdateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: "retrypolicy", Storage: jetstream.FileStorage})
	if err != nil {
		b.Fatal(err)
	}
	return kv
}
