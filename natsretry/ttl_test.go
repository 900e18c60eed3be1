package natsretry_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/natsretry"
	"github.com/retrypolicy/retrypolicy/retry"
)

// bucket makes a history bucket named name with ttl on e's server.
func (e *env) bucket(t testing.TB, name string, ttl time.Duration) jetstream.KeyValue {
	t.Helper()
	kv, err := e.js.CreateOrUpdateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: name,
		Storage: jetstream.FileStorage, TTL: ttl, LimitMarkerTTL: time.Minute})
	require.NoError(t, err)
	return kv
}

// TestNewRefusesATTLShorterThanAWait pins the bucket's TTL rule: above
// the longest wait the policy can make plus AckWait and a second. Under
// the default strategy that wait is an hour (its longest delay, and the
// job's limit): New refuses an hour and 1h0m1s, and takes 1h0m2s, which
// Consume refuses for the consumer's AckWait (30 s); two hours do. With
// jitter the longest delay is a quarter more; a strategy with no cap
// refuses any TTL, and takes none.
func TestNewRefusesATTLShorterThanAWait(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	newPolicy := func(kv jetstream.KeyValue, s retrypolicy.Strategy) (*natsretry.Policy, error) {
		return natsretry.New(ctx, e.js, natsretry.Config{History: kv, DeadLetter: "dead.jobs", Park: "park", Default: s})
	}
	for i, ttl := range []time.Duration{time.Hour, time.Hour + time.Second} {
		_, err := newPolicy(e.bucket(t, "short"+strconv.Itoa(i), ttl), retrypolicy.Strategy{})
		assert.ErrorContains(t, err, "natsretry: Config.History: the bucket's TTL, "+ttl.String()+", must be above 1h0m1s", ttl)
	}
	p, err := newPolicy(e.bucket(t, "tight", time.Hour+2*time.Second), retrypolicy.Strategy{})
	require.NoError(t, err, "New counts no AckWait")
	_, err = p.Consume(ctx, e.consumer, func(context.Context, jetstream.Msg) error { return nil })
	assert.ErrorContains(t, err, "must be above 1h0m31s", "Consume counts the consumer's 30 s")
	_, err = newPolicy(e.bucket(t, "long", 2*time.Hour), retrypolicy.Strategy{})
	assert.NoError(t, err, "two hours")

	jitter := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.ExponentialWithJitter, BaseDelay: time.Second, Multiplier: 2, MaxDelay: time.Hour}}
	_, err = newPolicy(e.bucket(t, "jitter", 75*time.Minute+time.Second), jitter)
	assert.ErrorContains(t, err, "must be above 1h15m1s", "an hour's delay and its quarter")

	uncapped := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: time.Second}}
	_, err = newPolicy(e.bucket(t, "year", 365*24*time.Hour), uncapped)
	assert.ErrorContains(t, err, "Config.Default's delays have no cap")
	_, err = newPolicy(e.kv, uncapped)
	assert.NoError(t, err, "no TTL")
}

// TestAWaitAsLongAsTheTTLAllowsLosesNothing: a bucket whose TTL is just
// above what the rule asks (a server's wait of up to 1 s, the job's limit,
// plus an AckWait of 1 s and a second), and a message whose server asks 1
// s each run, parked each time: every parked copy finds its record, so the
// message is dead-lettered after its three failures, none lost (a record
// gone would make its copy a message of its own, with no failures, and
// the Lost hook would be told). The TTL the rule asks, to the
// nanosecond, is refused.
func TestAWaitAsLongAsTheTTLAllowsLosesNothing(t *testing.T) {
	s := startServer(t, t.TempDir(), -1)
	e := setup(t, s.ClientURL(), 1, time.Second, 0)
	brisk := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3, Window: time.Hour,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 100 * ms}}
	cfg := natsretry.Config{Default: brisk, WaitLimit: time.Second, MaxHeaderDelay: 100 * ms, ParkAfter: 100 * ms}

	p, err := natsretry.New(context.Background(), e.js, natsretry.Config{Default: brisk, WaitLimit: cfg.WaitLimit,
		MaxHeaderDelay: cfg.MaxHeaderDelay, History: e.bucket(t, "exact", 3*time.Second), DeadLetter: "dead.jobs", Park: "park"})
	require.NoError(t, err, "New counts no AckWait")
	_, err = p.Consume(context.Background(), e.consumer, func(context.Context, jetstream.Msg) error { return nil })
	require.ErrorContains(t, err, "must be above 3s", "1 s, AckWait's 1 s and a second: not above")

	cfg.History = e.bucket(t, "tight", 3*time.Second+100*ms)
	var lost, runs atomic.Int64
	cfg.Hooks = natsretry.Hooks{Lost: func(context.Context, string) { lost.Add(1) }}
	e.consume(t, cfg, func(context.Context, jetstream.Msg) error {
		runs.Add(1)
		return retry.After(errors.New("busy"), time.Second)
	})
	e.publish(t, "jobs.a", "x", nil)
	dead := e.deadMessages(t, 1)[0]
	assert.Equal(t, "3", dead.Header.Get(natsretry.HeaderFailures), "every parked copy found its record")
	assert.EqualValues(t, 3, runs.Load())
	assert.Zero(t, lost.Load(), "no parked copy lost")
}
