// Command first is natsretry's first program: orders consumed from
// JetStream while the payment service they need is down.
//
// It starts a JetStream server in the process (storing in a temporary
// directory), or uses the one -url names; makes an ORDERS stream, a
// dead-letter stream DEAD, a parking stream PARK (where an order waits
// for its retry without holding a slot of the consumer) and a history
// bucket; publishes five orders;
// and consumes them under a bounded strategy while payments are down for
// the first seconds. It prints what was acked, retried and dead-lettered,
// and exits 0 once every order is settled, within a minute.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/natsretry"
	"github.com/retrypolicy/retrypolicy/retry"
)

func main() {
	url := flag.String("url", "", "a NATS server with JetStream to use, in place of one started in the process")
	down := flag.Duration("down", 2*time.Second, "how long the payment service is down after the consumer starts")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout, *url, *down); err != nil {
		fmt.Fprintln(os.Stderr, "first:", err)
		os.Exit(1)
	}
}

// embedded starts a JetStream server on a free loopback port, storing in
// dir.
func embedded(dir string) (*server.Server, error) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		return nil, err
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, errors.New("the embedded server did not start in 10 s")
	}
	return s, nil
}

func run(ctx context.Context, out io.Writer, url string, down time.Duration) error {
	if url == "" {
		dir, err := os.MkdirTemp("", "natsretry-first-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		s, err := embedded(dir)
		if err != nil {
			return err
		}
		defer s.Shutdown()
		url = s.ClientURL()
	}
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	o, err := declare(ctx, js)
	if err != nil {
		return err
	}
	return o.consume(ctx, out, down)
}

// orders is what the example declares in JetStream: the consumer of the
// orders and the bucket of their histories.
type orders struct {
	js       jetstream.JetStream
	consumer jetstream.Consumer
	kv       jetstream.KeyValue
}

// declare makes the streams, the consumer and the history bucket.
func declare(ctx context.Context, js jetstream.JetStream) (orders, error) {
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Storage: jetstream.FileStorage}); err != nil {
		return orders{}, err
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "DEAD", Subjects: []string{"dead.>"}, Storage: jetstream.FileStorage}); err != nil {
		return orders{}, err
	}
	// A parked order waits in PARK; work-queue retention drops it once
	// acked. The stream has no age, count or size limit: a waiting order
	// must not be dropped.
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "PARK", Subjects: []string{"park.>"},
		Storage: jetstream.FileStorage, Retention: jetstream.WorkQueuePolicy}); err != nil {
		return orders{}, err
	}
	// The TTL removes a history that a delivery after an ack left behind.
	// It must be above the longest wait the policy can make, plus AckWait
	// and a second (New and Consume refuse a shorter one): here an hour, the
	// job's limit on a wait a server asks. LimitMarkerTTL lets the marker a
	// removed history leaves expire.
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "retrypolicy", Storage: jetstream.FileStorage,
		TTL: 2 * time.Hour, LimitMarkerTTL: time.Minute})
	if err != nil {
		return orders{}, err
	}
	consumer, err := js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{
		Durable:    "payments",
		AckPolicy:  jetstream.AckExplicitPolicy,
		MaxDeliver: -1, // the strategy decides when an order gives up
	})
	return orders{js: js, consumer: consumer, kv: kv}, err
}

// consume publishes five orders and consumes them until each is acked or
// dead-lettered.
func (o orders) consume(ctx context.Context, out io.Writer, down time.Duration) error {
	var mu sync.Mutex
	settled := make(chan struct{}, 5)
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
	}
	policy, err := o.policy(ctx, say, settled)
	if err != nil {
		return err
	}
	start := time.Now()
	cc, err := policy.Consume(ctx, o.consumer, func(_ context.Context, m jetstream.Msg) error {
		if string(m.Data()) == "malformed" {
			return retry.Permanent(errors.New("the order cannot be read"))
		}
		if time.Since(start) < down {
			return errors.New("payment service unavailable")
		}
		say("%s: acked", m.Subject())
		settled <- struct{}{}
		return nil
	})
	if err != nil {
		return err
	}
	defer cc.Stop()
	for i, body := range []string{"42.00", "17.50", "malformed", "8.25", "99.99"} {
		if _, err := o.js.Publish(ctx, fmt.Sprintf("orders.%d", i+1), []byte(body)); err != nil {
			return err
		}
	}
	for range 5 {
		select {
		case <-settled:
		case <-ctx.Done():
			return fmt.Errorf("orders still unsettled: %w", ctx.Err())
		}
	}
	return report(ctx, out, o.js)
}

// policy returns the orders' policy, which says what it decides and
// tells settled of each order it dead-letters.
func (o orders) policy(ctx context.Context, say func(string, ...any), settled chan<- struct{}) (*natsretry.Policy, error) {
	return natsretry.New(ctx, o.js, natsretry.Config{
		// Five failures within a minute give an order up; waits of 0.5 s,
		// 1 s, 2 s … at most 5 s between: 7.5 s into an outage, brisk for
		// an example (retrypolicy-vet would report it; here it is meant).
		//retrypolicy-vet:ignore gives-up-fast
		Default: retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5, Window: time.Minute,
			Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: 500 * time.Millisecond, Multiplier: 2, MaxDelay: 5 * time.Second}},
		History:    o.kv,
		DeadLetter: "dead.orders",
		Park:       "park",
		Logger:     slog.New(slog.DiscardHandler),
		Hooks: natsretry.Hooks{
			Decided: func(_ context.Context, subject string, d retrypolicy.Decision, _ retry.Reason) {
				if d.Action != retrypolicy.Fatal {
					say("%s: failure %d, retried after %v", subject, d.InWindow, d.Delay+d.Jitter)
				}
			},
			DeadLettered: func(_ context.Context, subject string, reason retry.Reason) {
				say("%s: dead-lettered (%s)", subject, reason)
				settled <- struct{}{}
			},
		},
	})
}

// report prints the dead-letter stream's messages, as an operator reads
// them to replay one.
func report(ctx context.Context, out io.Writer, js jetstream.JetStream) error {
	dead, err := js.Stream(ctx, "DEAD")
	if err != nil {
		return err
	}
	info, err := dead.Info(ctx)
	if err != nil {
		return err
	}
	for seq := info.State.FirstSeq; seq > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := dead.GetMsg(ctx, seq)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "dead letter %d: %q from %s, %s after %s failure(s): %s\n", seq, m.Data,
			m.Header.Get(natsretry.HeaderSubject), m.Header.Get(natsretry.HeaderReason),
			m.Header.Get(natsretry.HeaderFailures), m.Header.Get(natsretry.HeaderError))
	}
	return nil
}
