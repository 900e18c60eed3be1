package otelnats_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/natsretry"
	"github.com/retrypolicy/retrypolicy/otelretry"
	"github.com/retrypolicy/retrypolicy/otelretry/otelnats"
	"github.com/retrypolicy/retrypolicy/retry"
)

// TestJetStreamMessages: messages on a JetStream server in the process
// under the policy with otelnats' hooks. One retried once then acked, one
// dead-lettered at once by the none strategy, one whose history is
// unreadable (started anew, then acked): every instrument counts them
// exactly, by the name given to their subject.
func TestJetStreamMessages(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	in, err := otelretry.New(otelretry.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	require.NoError(t, err)
	ctx := context.Background()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	require.NoError(t, err)
	go s.Start()
	require.True(t, s.ReadyForConnections(30*time.Second))
	defer s.Shutdown()
	nc, err := nats.Connect(s.ClientURL())
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	jobs, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"}})
	require.NoError(t, err)
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "DEAD", Subjects: []string{"dead.>"}})
	require.NoError(t, err)
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "PARK", Subjects: []string{"park.>"}, Retention: jetstream.WorkQueuePolicy})
	require.NoError(t, err)
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "retrypolicy", LimitMarkerTTL: time.Minute})
	require.NoError(t, err)
	consumer, err := js.CreateConsumer(ctx, "JOBS", jetstream.ConsumerConfig{Durable: "worker",
		AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: -1, AckWait: 300 * time.Millisecond})
	require.NoError(t, err)

	// The third message's first delivery is fetched and left unacked, its
	// history unreadable: the policy meets it at the redelivery.
	_, err = js.Publish(ctx, "jobs.c.3", []byte("unreadable history"))
	require.NoError(t, err)
	batch, err := consumer.Fetch(1)
	require.NoError(t, err)
	for range batch.Messages() {
	}
	first, err := jobs.GetMsg(ctx, 1)
	require.NoError(t, err)
	// A history's key: the stream, the consumer, the sequence and the
	// message's own timestamp.
	_, err = kv.Put(ctx, fmt.Sprintf("JOBS.worker.1.%d", first.Time.UnixNano()), []byte("not a history"))
	require.NoError(t, err)

	hooks, err := otelnats.Hooks(in, func(subject string) string { return strings.Split(subject, ".")[0] })
	require.NoError(t, err)
	settled := make(chan string, 8)
	hooks.DeadLettered = chain(hooks.DeadLettered, settled)
	policy, err := natsretry.New(ctx, js, natsretry.Config{History: kv, DeadLetter: "dead.jobs", Park: "park", Hooks: hooks,
		Default: retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}})
	require.NoError(t, err)
	var mu sync.Mutex // a parked message runs on the parking consumer's goroutine
	runs := map[string]int{}
	cc, err := policy.Consume(ctx, consumer, func(_ context.Context, m jetstream.Msg) error {
		mu.Lock()
		runs[m.Subject()]++
		n := runs[m.Subject()]
		mu.Unlock()
		if m.Subject() == "jobs.a.1" && n == 1 {
			return errors.New("down")
		}
		if m.Subject() == "jobs.b.2" {
			return errors.New("never retried")
		}
		settled <- m.Subject()
		return nil
	})
	require.NoError(t, err)
	defer cc.Stop()
	_, err = js.Publish(ctx, "jobs.a.1", []byte("retried once"))
	require.NoError(t, err)
	msg := nats.NewMsg("jobs.b.2")
	msg.Header.Set(natsretry.HeaderStrategy, `{"strategy": "none"}`)
	_, err = js.PublishMsg(ctx, msg)
	require.NoError(t, err)
	for range 3 {
		select {
		case <-settled:
		case <-time.After(30 * time.Second):
			t.Fatal("the messages did not settle within 30 s")
		}
	}

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	byName := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			byName[m.Name] = m
		}
	}
	src, subject := otelretry.Source.String("nats"), otelnats.Subject.String("jobs")
	// Decisions: the first message's wait; the third's delivery left
	// unacked, counted at its redelivery (a wait of a millisecond too);
	// the second's fatal first failure.
	assert.Equal(t, map[attribute.Distinct]int64{
		set(src, subject, otelretry.Action.String("wait")):                                            2,
		set(src, subject, otelretry.Action.String("fatal"), otelretry.Reason.String("strategy_none")): 1,
	}, sums(t, byName["retrypolicy.decisions"], "{decision}"))
	assert.Equal(t, map[attribute.Distinct]int64{set(subject, otelretry.Reason.String("strategy_none")): 1},
		sums(t, byName["retrypolicy.nats.dead_letters"], "{message}"))
	assert.Equal(t, map[attribute.Distinct]int64{set(subject): 1},
		sums(t, byName["retrypolicy.nats.histories.repaired"], "{history}"))
}

// chain returns hook, then a send of the subject to settled.
func chain(hook func(context.Context, string, retry.Reason), settled chan<- string) func(context.Context, string, retry.Reason) {
	return func(ctx context.Context, subject string, r retry.Reason) {
		hook(ctx, subject, r)
		settled <- subject
	}
}

func set(kv ...attribute.KeyValue) attribute.Distinct {
	s := attribute.NewSet(kv...)
	return s.Equivalent()
}

// sums returns a counter's values by attribute set, checking its kind and
// unit.
func sums(t *testing.T, m metricdata.Metrics, unit string) map[attribute.Distinct]int64 {
	t.Helper()
	assert.Equal(t, unit, m.Unit, m.Name)
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is a counter, not %T", m.Name, m.Data)
	out := map[attribute.Distinct]int64{}
	for _, dp := range sum.DataPoints {
		out[dp.Attributes.Equivalent()] = dp.Value
	}
	return out
}
