package natsretry_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
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
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

const ms = time.Millisecond

// TestDecisionAtEachDelivery runs one message failing under each backoff
// and pins the strategy's decision at each delivery, as JetStream
// redelivers it when due.
func TestDecisionAtEachDelivery(t *testing.T) {
	type step struct {
		action  retrypolicy.Action
		owed    time.Duration
		reason  retry.Reason
		jitters bool
	}
	cases := map[string]struct {
		strategy retrypolicy.Strategy
		want     []step
	}{
		"fixed, bounded": {
			strategy: retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3, Window: time.Hour,
				Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 20 * ms}},
			want: []step{{action: retrypolicy.Wait, owed: 20 * ms}, {action: retrypolicy.Wait, owed: 20 * ms},
				{action: retrypolicy.Fatal, reason: retry.Reason(retrypolicy.AttemptsExhausted)}},
		},
		// The exponential delays are long beside a run's own length (a
		// handler that returns at once), which a loaded machine may
		// stretch: a run as long as a step would earn credit.
		"exponential": {
			strategy: retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped,
				Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: 100 * ms, Multiplier: 2}},
			want: []step{{action: retrypolicy.Wait, owed: 100 * ms}, {action: retrypolicy.Wait, owed: 200 * ms},
				{action: retrypolicy.Wait, owed: 400 * ms}, {action: retrypolicy.Wait, owed: 800 * ms}},
		},
		"exponential with jitter": {
			strategy: retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped,
				Backoff: retrypolicy.Backoff{Kind: retrypolicy.ExponentialWithJitter, BaseDelay: 100 * ms, Multiplier: 3}},
			want: []step{{action: retrypolicy.Wait, owed: 100 * ms, jitters: true}, {action: retrypolicy.Wait, owed: 300 * ms, jitters: true}},
		},
		"none": {
			strategy: retrypolicy.Strategy{Kind: retrypolicy.None},
			want:     []step{{action: retrypolicy.Fatal, reason: retry.Reason(retrypolicy.StrategyNone)}},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			got := newDecisions()
			e.consume(t, natsretry.Config{Default: c.strategy, Hooks: got.hooks()}, failing(len(c.want)))
			e.publish(t, "jobs.a", "payload", nil)
			ds := got.wait(t, len(c.want))
			for i, w := range c.want {
				d := ds[i]
				assert.Equal(t, w.action, d.Action, "delivery %d: %v", i+1, d)
				assert.Equal(t, i+1, d.InWindow, "delivery %d", i+1)
				assert.Equal(t, w.owed, d.Owed, "delivery %d", i+1)
				assert.Equal(t, w.owed, d.Delay, "delivery %d: no uptime credit for a run of no length", i+1)
				assert.Equal(t, w.reason, got.gave[i], "delivery %d", i+1)
				if w.jitters {
					assert.True(t, d.Jitter >= 0 && d.Jitter < d.Delay/4, "delivery %d: jitter %v of %v", i+1, d.Jitter, d.Delay)
				} else {
					assert.Zero(t, d.Jitter)
				}
			}
			if last := c.want[len(c.want)-1]; last.action == retrypolicy.Fatal {
				dead := e.deadMessages(t, 1)
				assert.Equal(t, "payload", string(dead[0].Data))
				assert.Equal(t, last.reason.String(), dead[0].Header.Get(natsretry.HeaderReason))
				eventually(t, "the history removed", func() bool { return e.histories(t) == 0 })
			} else {
				eventually(t, "the message acked and its history removed", func() bool {
					unacked, pending := e.pending(t)
					return unacked == 0 && pending == 0 && e.histories(t) == 0
				})
			}
		})
	}
}

// TestJitterIsTheMessages pins that two messages failing alike draw
// their own jitter (seeded by their sequence), and a redelivery of one
// the same jitter as the engine gives its seed.
func TestJitterIsTheMessages(t *testing.T) {
	e := newEnv(t)
	got := newDecisions()
	strategy := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 1, Window: time.Hour,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.ExponentialWithJitter, BaseDelay: time.Hour}}
	// MaxAttempts 1 gives each message up at once: the jitter is that of
	// a wait no message makes. Decide with two allowed to see it.
	strategy.MaxAttempts = 2
	e.consume(t, natsretry.Config{Default: strategy, Hooks: got.hooks()},
		func(context.Context, jetstream.Msg) error { return errors.New("down") })
	e.publish(t, "jobs.a", "1", nil)
	e.publish(t, "jobs.a", "2", nil)
	ds := got.wait(t, 2)
	assert.NotEqual(t, ds[0].Jitter, ds[1].Jitter, "two messages' jitter: %v and %v", ds[0].Jitter, ds[1].Jitter)
	for _, d := range ds {
		assert.True(t, d.Jitter > 0 && d.Jitter < 15*time.Minute, "jitter %v", d.Jitter)
	}
}

// TestUptimeCredit pins that a long run earns credit: the wait after a
// failure that ends a run of 11 s is less than what the failure owes. The
// steps (100 ms, 1 s, 10 s) are far apart, so that a run slowed by a
// loaded machine earns no credit it should not.
func TestUptimeCredit(t *testing.T) {
	e := newEnv(t)
	got := newDecisions()
	var c clock
	strategy := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: 100 * ms, Multiplier: 10}}
	var calls atomic.Int64
	e.consume(t, natsretry.Config{Default: strategy, Hooks: got.hooks(), Now: c.now},
		func(context.Context, jetstream.Msg) error {
			switch calls.Add(1) {
			case 1, 2:
				return errors.New("down at once")
			case 3:
				c.advance(11 * time.Second) // a run of 11 s, then a failure
				return errors.New("down after 11 s")
			}
			return nil
		})
	e.publish(t, "jobs.a", "x", nil)
	ds := got.wait(t, 3)
	assert.Equal(t, time.Second, ds[1].Delay, "the second failure, after a run of (nearly) no length, owes and waits 1 s")
	// Three failures owe 10 s; the run of 11 s pays back the steps of 10
	// and 1 s, leaving the first step's 100ms.
	assert.Equal(t, 3, ds[2].InWindow, "credit takes no failure out of the window")
	assert.Equal(t, 10*time.Second, ds[2].Owed)
	assert.Equal(t, 100*ms, ds[2].Delay, "the run of 11 s earns credit: %v", ds[2])
}

// TestWindow pins that failures leave the window as they age: a bounded
// strategy of two failures in a minute does not give up on failures two
// minutes apart.
func TestWindow(t *testing.T) {
	e := newEnv(t)
	got := newDecisions()
	var c clock
	strategy := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 2, Window: time.Minute,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: ms}}
	var calls atomic.Int64
	e.consume(t, natsretry.Config{Default: strategy, Hooks: got.hooks(), Now: c.now},
		func(context.Context, jetstream.Msg) error {
			if calls.Add(1) > 3 {
				return nil
			}
			c.advance(2 * time.Minute)
			return errors.New("down")
		})
	e.publish(t, "jobs.a", "x", nil)
	ds := got.wait(t, 3)
	for i, d := range ds {
		assert.Equal(t, retrypolicy.Wait, d.Action, "failure %d: %v", i+1, d)
		assert.Equal(t, 1, d.InWindow, "failure %d: the one before has left the window", i+1)
	}
	eventually(t, "the message acked", func() bool { u, p := e.pending(t); return u == 0 && p == 0 })
}

// TestDeadLetterCopy pins what a dead message carries: its payload, its
// headers, and why it died, with the error's text bounded.
func TestDeadLetterCopy(t *testing.T) {
	e := newEnv(t)
	got := newDecisions()
	long := strings.Repeat("é", 2000)
	e.consume(t, natsretry.Config{Default: retrypolicy.Strategy{Kind: retrypolicy.None}, Hooks: got.hooks()},
		func(context.Context, jetstream.Msg) error { return errors.New(long) })
	seq := e.publish(t, "jobs.email", "hello", nats.Header{"Tenant": []string{"acme"}, "Nats-Msg-Id": []string{"original-1"}})
	dead := e.deadMessages(t, 1)[0]
	assert.Equal(t, "hello", string(dead.Data))
	assert.Equal(t, "dead.jobs", dead.Subject)
	assert.Equal(t, "acme", dead.Header.Get("Tenant"))
	assert.Equal(t, "strategy_none", dead.Header.Get(natsretry.HeaderReason))
	assert.Equal(t, "1", dead.Header.Get(natsretry.HeaderFailures))
	assert.Equal(t, "jobs.email", dead.Header.Get(natsretry.HeaderSubject))
	assert.Equal(t, "JOBS", dead.Header.Get(natsretry.HeaderStream))
	assert.Equal(t, strconv.FormatUint(seq, 10), dead.Header.Get(natsretry.HeaderSequence))
	text := dead.Header.Get(natsretry.HeaderError)
	assert.LessOrEqual(t, len(text), natsretry.MaxErrorText)
	assert.True(t, strings.HasPrefix(long, strings.TrimSuffix(text, "…")) && strings.HasSuffix(text, "…"), "a cut error text: %q", text[len(text)-10:])
	assert.NotEqual(t, "original-1", dead.Header.Get("Nats-Msg-Id"), "JetStream's own headers are the copy's")
	eventually(t, "the message terminated and its history removed", func() bool {
		u, p := e.pending(t)
		return u == 0 && p == 0 && e.histories(t) == 0
	})
	got.mu.Lock()
	assert.Equal(t, []retry.Reason{retry.Reason(retrypolicy.StrategyNone)}, got.dead)
	got.mu.Unlock()
}

// TestPermanentError pins that an error marked retry.Permanent gives the
// message up at its first failure, whatever its strategy allows.
func TestPermanentError(t *testing.T) {
	e := newEnv(t)
	got := newDecisions()
	e.consume(t, natsretry.Config{Default: retrypolicy.Default(), Hooks: got.hooks()},
		func(context.Context, jetstream.Msg) error { return retry.Permanent(errors.New("malformed")) })
	e.publish(t, "jobs.a", "x", nil)
	dead := e.deadMessages(t, 1)[0]
	assert.Equal(t, "not_retryable", dead.Header.Get(natsretry.HeaderReason))
	assert.Equal(t, "malformed", dead.Header.Get(natsretry.HeaderError))
	ds := got.wait(t, 1)
	assert.Equal(t, retrypolicy.Fatal, ds[0].Action)
	assert.Equal(t, retry.NotRetryable, got.gave[0])
}

// TestOwnStrategy pins that a message's own strategy (its header) applies
// before its subject's, and that an invalid one is logged once, at its
// first delivery, while its subject's applies.
func TestOwnStrategy(t *testing.T) {
	e := newEnv(t)
	got := newDecisions()
	var logs logBuffer
	subject := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3, Window: time.Hour,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: ms}}
	e.consume(t, natsretry.Config{Subjects: map[string]retrypolicy.Strategy{"jobs.a": subject},
		Hooks: got.hooks(), Logger: logs.logger()},
		func(context.Context, jetstream.Msg) error { return errors.New("down") })
	e.publish(t, "jobs.a", "own", nats.Header{natsretry.HeaderStrategy: []string{`{"strategy": "none"}`}})
	assert.Equal(t, "strategy_none", e.deadMessages(t, 1)[0].Header.Get(natsretry.HeaderReason))
	e.publish(t, "jobs.a", "bad", nats.Header{natsretry.HeaderStrategy: []string{`{"strategy": "bounded"}`}})
	dead := e.deadMessages(t, 2)
	assert.Equal(t, "attempts_exhausted", dead[1].Header.Get(natsretry.HeaderReason))
	assert.Equal(t, "3", dead[1].Header.Get(natsretry.HeaderFailures), "the subject's strategy: three attempts")
	assert.Equal(t, 1, strings.Count(logs.String(), "the message's strategy is invalid"), "logged once: %s", logs.String())
	assert.Contains(t, logs.String(), "max_attempts")
}

// TestRefusesConsumersThatDecideThemselves pins Wrap's checks: a
// consumer with MaxDeliver, a BackOff or no explicit acks is refused with
// the setting named.
func TestRefusesConsumersThatDecideThemselves(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p, err := natsretry.New(ctx, e.js, natsretry.Config{History: e.kv, DeadLetter: "dead.jobs", Park: "park"})
	require.NoError(t, err)
	for want, cfg := range map[string]jetstream.ConsumerConfig{
		"MaxDeliver is 5":      {Durable: "a", AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 5},
		"BackOff is [1s]":      {Durable: "b", AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: -1, BackOff: []time.Duration{time.Second}, AckWait: time.Second},
		"AckPolicy is AckNone": {Durable: "c", AckPolicy: jetstream.AckNonePolicy},
	} {
		c, err := e.js.CreateOrUpdateConsumer(ctx, "JOBS", cfg)
		require.NoError(t, err)
		_, err = p.Consume(ctx, c, func(context.Context, jetstream.Msg) error { return nil })
		require.Error(t, err)
		assert.Contains(t, err.Error(), want)
	}
	_, err = natsretry.New(ctx, e.js, natsretry.Config{History: e.kv, DeadLetter: "nowhere", Park: "park"})
	assert.ErrorContains(t, err, "Config.DeadLetter: no stream captures")
	_, err = natsretry.New(ctx, e.js, natsretry.Config{DeadLetter: "dead.jobs", Park: "park"})
	assert.ErrorContains(t, err, "Config.History")
	_, err = natsretry.New(ctx, e.js, natsretry.Config{History: e.kv, DeadLetter: "dead.jobs", Park: "park",
		Subjects: map[string]retrypolicy.Strategy{"jobs.a": {Kind: retrypolicy.Bounded}}})
	assert.ErrorContains(t, err, `Config.Subjects["jobs.a"]: retrypolicy: MaxAttempts: required`)
}

// TestLayersDeferToJetStream pins that a retry.Do inside a handler whose
// next wait is longer than Config.DeferAfter gives up at once, and the
// message waits that long in JetStream instead of holding the handler.
func TestLayersDeferToJetStream(t *testing.T) {
	e := newEnv(t)
	got := newDecisions()
	inner := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 300 * ms}}
	var calls atomic.Int64
	var started, decided atomic.Int64 // the first run's start and its decision, Unix nanoseconds
	hooks := got.hooks()
	record := hooks.Decided
	hooks.Decided = func(ctx context.Context, subject string, d retrypolicy.Decision, gaveUp retry.Reason) {
		decided.CompareAndSwap(0, time.Now().UnixNano())
		record(ctx, subject, d, gaveUp)
	}
	e.consume(t, natsretry.Config{Hooks: hooks, DeferAfter: 10 * ms, Default: retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: ms}}},
		func(ctx context.Context, _ jetstream.Msg) error {
			started.CompareAndSwap(0, time.Now().UnixNano())
			_, err := retry.Do(ctx, inner, func(ctx context.Context) (struct{}, error) {
				if calls.Add(1) == 1 || ctx.Err() != nil {
					return struct{}{}, errors.New("the dependency is down")
				}
				return struct{}{}, nil
			})
			return err
		})
	e.publish(t, "jobs.a", "x", nil)
	d := got.wait(t, 1)[0]
	eventually(t, "the message acked", func() bool { u, p := e.pending(t); return calls.Load() == 2 && u == 0 && p == 0 })
	assert.Equal(t, retrypolicy.Wait, d.Action)
	assert.Equal(t, ms, d.Delay, "the message's own strategy owes a millisecond")
	// Due is the failure (to the millisecond) plus the loop's 300ms.
	failedAt := d.Due.Add(-300 * ms)
	assert.False(t, failedAt.Before(time.Unix(0, started.Load()).Truncate(ms)), "due %v, the run from %v", d.Due, time.Unix(0, started.Load()))
	assert.False(t, failedAt.After(time.Unix(0, decided.Load())), "due %v, decided at %v", d.Due, time.Unix(0, decided.Load()))
	assert.EqualValues(t, 2, calls.Load(), "the loop made one call a run: it did not sleep its 300ms")
}

// TestA429BeyondTheTransportsCapWaitsInJetStream: a handler calls an API
// through a retryhttp transport whose strategy waits at most a second, and
// the API answers 429 with Retry-After. The API is called once a run, and
// the message is due its failure plus the wait asked, not the transport's
// cap: 600 s (the decision is asserted) and 2 s under a transport's limit
// of 1 s (waited out: the next run starts no earlier).
func TestA429BeyondTheTransportsCapWaitsInJetStream(t *testing.T) {
	brisk := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: ms, Multiplier: 2, MaxDelay: time.Second}}
	for _, c := range []struct {
		asked int // seconds
		opts  []retry.Option
	}{{600, nil}, {2, []retry.Option{retry.WithWaitLimit(time.Second)}}} {
		t.Run(strconv.Itoa(c.asked)+"s", func(t *testing.T) {
			e := newEnv(t)
			got := newDecisions()
			var calls atomic.Int64
			api := roundTripper(func(req *http.Request) (*http.Response, error) {
				if calls.Add(1) > 1 {
					return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
				}
				h := http.Header{"Retry-After": {strconv.Itoa(c.asked)}}
				return &http.Response{StatusCode: http.StatusTooManyRequests, Header: h, Body: http.NoBody, Request: req}, nil
			})
			tr, err := retryhttp.NewTransport(api, brisk, c.opts...)
			require.NoError(t, err)
			var runs [2]atomic.Int64 // each run's start, Unix nanoseconds
			var run atomic.Int64
			var returned, decided atomic.Int64 // the first run's return and its decision, Unix nanoseconds
			hooks := got.hooks()
			record := hooks.Decided
			hooks.Decided = func(ctx context.Context, subject string, d retrypolicy.Decision, gaveUp retry.Reason) {
				decided.CompareAndSwap(0, time.Now().UnixNano())
				record(ctx, subject, d, gaveUp)
			}
			e.consume(t, natsretry.Config{Hooks: hooks}, func(ctx context.Context, _ jetstream.Msg) error {
				if n := run.Add(1); n <= 2 {
					runs[n-1].Store(time.Now().UnixNano())
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
				resp, err := (&http.Client{Transport: tr}).Do(req)
				defer returned.CompareAndSwap(0, time.Now().UnixNano())
				if err != nil {
					return err
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					return errors.New(resp.Status)
				}
				return nil
			})
			e.publish(t, "jobs.a", "x", nil)
			d := got.wait(t, 1)[0]
			assert.EqualValues(t, 1, calls.Load(), "the API was called once in the run")
			assert.Equal(t, retrypolicy.Wait, d.Action)
			asked := time.Duration(c.asked) * time.Second
			// The failure, to the millisecond: read by the policy after the
			// run returned and before it decided, so neither bound moves
			// with the machine's load.
			failedAt := d.Due.Add(-asked)
			assert.False(t, failedAt.Before(time.Unix(0, returned.Load()).Truncate(ms)), "due %v, the run returned at %v", d.Due, time.Unix(0, returned.Load()))
			assert.False(t, failedAt.After(time.Unix(0, decided.Load())), "due %v, decided at %v", d.Due, time.Unix(0, decided.Load()))
			if c.asked > 10 {
				return
			}
			eventually(t, "the message acked", func() bool { u, p := e.pending(t); return calls.Load() == 2 && u == 0 && p == 0 })
			second := time.Unix(0, runs[1].Load())
			assert.False(t, second.Before(time.Unix(0, returned.Load()).Add(asked-ms)), "the second run at %v, %v after the first returned", second, second.Sub(time.Unix(0, returned.Load())))
		})
	}
}

// roundTripper is an http.RoundTripper made of a function.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestAServersWaitIsNeverCutInAJob: a message whose subject's strategy caps
// at a second, its handler calling an API that answers 429 with
// Retry-After through a retryhttp transport, is due its failure plus the
// wait asked: 600 s, never cut to the strategy's second; 7,200 s is past
// the job's limit (an hour for that strategy), so the message is
// dead-lettered retry_after_too_long with the wait in its dead letter;
// with Config.WaitLimit at 3 h, it is due in 7,200 s. The policy's clock
// is fixed, so the decision is exact. Until the job's limit, each wait was
// cut to the strategy's cap: due a second after the failure.
func TestAServersWaitIsNeverCutInAJob(t *testing.T) {
	capped := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: time.Second, MaxDelay: time.Second}}
	brisk := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: ms, MaxDelay: time.Second}}
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name  string
		asked time.Duration
		limit time.Duration
		fatal bool
	}{
		{"600 s", 600 * time.Second, 0, false},
		{"7200 s beyond the default limit", 7200 * time.Second, 0, true},
		{"7200 s within a limit of 3 h", 7200 * time.Second, 3 * time.Hour, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			got := newDecisions()
			var calls atomic.Int64
			api := roundTripper(func(req *http.Request) (*http.Response, error) {
				calls.Add(1)
				h := http.Header{"Retry-After": {strconv.Itoa(int(c.asked / time.Second))}}
				return &http.Response{StatusCode: http.StatusTooManyRequests, Header: h, Body: http.NoBody, Request: req}, nil
			})
			tr, err := retryhttp.NewTransport(api, brisk)
			require.NoError(t, err)
			e.consume(t, natsretry.Config{Default: capped, Hooks: got.hooks(), WaitLimit: c.limit, Now: func() time.Time { return now }},
				func(ctx context.Context, _ jetstream.Msg) error {
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
					resp, err := (&http.Client{Transport: tr}).Do(req)
					if err != nil {
						return err
					}
					resp.Body.Close()
					return errors.New(resp.Status)
				})
			e.publish(t, "jobs.a", "x", nil)
			d := got.wait(t, 1)[0]
			assert.EqualValues(t, 1, calls.Load(), "the API was called once")
			assert.True(t, d.Due.Equal(now.Add(c.asked)), "due %v, the failure at %v", d.Due, now)
			got.mu.Lock()
			gaveUp := got.gave[0]
			got.mu.Unlock()
			if !c.fatal {
				assert.Equal(t, retrypolicy.Wait, d.Action)
				assert.Zero(t, gaveUp)
				return
			}
			assert.Equal(t, retrypolicy.Fatal, d.Action)
			assert.Equal(t, retry.RetryAfterTooLong, gaveUp)
			dead := e.deadMessages(t, 1)[0]
			assert.Equal(t, "retry_after_too_long", dead.Header.Get(natsretry.HeaderReason))
			assert.Equal(t, "7200", dead.Header.Get(natsretry.HeaderWaitAsked))
		})
	}
}
