package natsretry_test

import (
	"context"
	"errors"
	"fmt"
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

	"github.com/retrypolicy/retrypolicy/natsretry"
	"github.com/retrypolicy/retrypolicy/retry"
)

// errorOf is the error of dead letter i of a deadEnv: three reasons in
// turn, and two texts of the first.
func errorOf(i int) error {
	switch i % 3 {
	case 0:
		if i%2 == 0 {
			return retry.Permanent(errors.New("bad input"))
		}
		return retry.Permanent(errors.New("schema mismatch"))
	case 1:
		return retry.After(errors.New("rate limited: quota"), 2*time.Hour) // beyond the job's limit (an hour)
	}
	return errors.New("down") // under the strategy none of its header: strategy_none
}

// reasonOf is the reason the policy gives up dead letter i for.
func reasonOf(i int) string {
	return [...]string{"not_retryable", "retry_after_too_long", "strategy_none"}[i%3]
}

// deadEnv is an env whose policy gives up n messages, jobs.<i%4>.<i> with
// the payload "m-<i>", each for errorOf(i), then handles every message
// once more published, counting each payload.
type deadEnv struct {
	*env
	replaying atomic.Bool
	mu        sync.Mutex
	handled   map[string]int
}

func newDeadEnv(t *testing.T, n int) *deadEnv {
	t.Helper()
	e := &deadEnv{env: newEnv(t), handled: map[string]int{}}
	e.consume(t, natsretry.Config{}, func(_ context.Context, m jetstream.Msg) error {
		if e.replaying.Load() {
			e.mu.Lock()
			e.handled[string(m.Data())]++
			e.mu.Unlock()
			return nil
		}
		i, _ := strconv.Atoi(strings.TrimPrefix(string(m.Data()), "m-"))
		return errorOf(i)
	})
	none := nats.Header{natsretry.HeaderStrategy: []string{`{"strategy":"none"}`}}
	ctx := context.Background()
	var acks []jetstream.PubAckFuture
	for i := range n {
		m := nats.NewMsg(fmt.Sprintf("jobs.%d.%d", i%4, i))
		m.Data = []byte("m-" + strconv.Itoa(i))
		if i%3 == 2 {
			m.Header = none
		}
		ack, err := e.js.PublishMsgAsync(m)
		require.NoError(t, err)
		acks = append(acks, ack)
	}
	for _, a := range acks {
		select {
		case <-a.Ok():
		case err := <-a.Err():
			t.Fatal(err)
		case <-time.After(within):
			t.Fatal("a publish was not acknowledged")
		}
	}
	eventually(t, "every message given up", func() bool {
		info, err := e.dead.Info(ctx)
		require.NoError(t, err)
		u, p := e.pending(t)
		return info.State.Msgs == uint64(n) && u == 0 && p == 0
	})
	e.replaying.Store(true)
	return e
}

// handledOnce waits until every one of want payloads was handled, and
// checks that each was handled once.
func (e *deadEnv) handledOnce(t *testing.T, want []int) {
	t.Helper()
	eventually(t, "every replayed message handled", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return len(e.handled) >= len(want)
	})
	eventually(t, "the work consumer idle", func() bool {
		u, p := e.pending(t)
		return u == 0 && p == 0
	})
	e.mu.Lock()
	defer e.mu.Unlock()
	assert.Len(t, e.handled, len(want))
	for _, i := range want {
		assert.Equal(t, 1, e.handled["m-"+strconv.Itoa(i)], "m-%d handled", i)
	}
}

// open opens env's dead-letter stream for an operator, its replays paced
// by a clock that sleeps by moving forward; it returns the clock's time
// since it was opened.
func (e *deadEnv) open(t *testing.T) (*natsretry.DeadLetters, func() time.Duration) {
	t.Helper()
	d, err := natsretry.OpenDeadLetters(context.Background(), e.js, "DEAD", 100)
	require.NoError(t, err)
	start := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := start
	natsretry.SetPacingClock(d, func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}, func(_ context.Context, by time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(by)
		return nil
	})
	return d, func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return now.Sub(start)
	}
}

// TestDeadLettersAreCountedAndListedByReasonAndError: 10,000 messages
// given up by the policy for three reasons are counted by reason, and a
// listing by reason, or by a substring of the last error, gives exactly
// the ones the test gave up so.
func TestDeadLettersAreCountedAndListedByReasonAndError(t *testing.T) {
	const n = 10_000
	e := newDeadEnv(t, n)
	d, _ := e.open(t)
	ctx := context.Background()
	want := map[string]int{}
	schema := map[string]bool{}
	for i := range n {
		want[reasonOf(i)]++
		if i%3 == 0 && i%2 == 1 {
			schema["m-"+strconv.Itoa(i)] = true
		}
	}
	counts, err := d.Count(ctx, natsretry.Filter{})
	require.NoError(t, err)
	assert.Equal(t, want, counts)

	listed := 0
	for dl, err := range d.List(ctx, natsretry.Filter{Reasons: []retry.Reason{retry.RetryAfterTooLong}}) {
		require.NoError(t, err)
		i, _ := strconv.Atoi(strings.TrimPrefix(string(dl.Data), "m-"))
		assert.Equal(t, 1, i%3, "m-%d listed as retry_after_too_long", i)
		assert.Equal(t, 2*time.Hour, dl.WaitAsked)
		assert.Equal(t, "JOBS", dl.Stream)
		assert.Equal(t, fmt.Sprintf("jobs.%d.%d", i%4, i), dl.Subject)
		listed++
	}
	assert.Equal(t, want["retry_after_too_long"], listed)

	got := map[string]bool{}
	for dl, err := range d.List(ctx, natsretry.Filter{Error: "schema"}) {
		require.NoError(t, err)
		got[string(dl.Data)] = true
	}
	assert.Equal(t, schema, got)

	counts, err = d.Count(ctx, natsretry.Filter{Subject: "jobs.1.*", Reasons: []retry.Reason{retry.NotRetryable}})
	require.NoError(t, err)
	wantOne := 0
	for i := range n {
		if i%4 == 1 && i%3 == 0 {
			wantOne++
		}
	}
	assert.Equal(t, map[string]int{"not_retryable": wantOne}, counts)
}

// TestAPacedReplay: 1,000 dead letters replayed at 200 a second take 5 s
// of the replay's clock (the last sent 4.995 s after the first, plus at
// most its jitter of 20 ms), each is handled once by the work stream's
// consumer, and none is left.
func TestAPacedReplay(t *testing.T) {
	const n = 1000
	e := newDeadEnv(t, n)
	d, elapsed := e.open(t)
	var last natsretry.ReplayProgress
	report, err := d.Replay(context.Background(), natsretry.Filter{}, natsretry.ReplayOptions{Stream: "JOBS", Rate: 200, Jitter: 20 * time.Millisecond,
		Progress: func(p natsretry.ReplayProgress) { last = p }})
	require.NoError(t, err)
	assert.Equal(t, n, report.Replayed)
	assert.Zero(t, report.Duplicates+report.Refused+report.Failed)
	assert.InDelta(t, 5.0, elapsed().Seconds(), 0.5, "within 10%% of 5 s on the replay's clock")
	assert.Equal(t, n, last.Replayed)
	assert.InDelta(t, 200, last.Rate, 20)
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	e.handledOnce(t, all)
	info, err := e.dead.Info(context.Background())
	require.NoError(t, err)
	assert.Zero(t, info.State.Msgs, "no dead letter left")
}

// TestAnInterruptedReplaySendsNothingTwice: a replay whose context ends
// between the 50th publish and its removal, run again, leaves every one
// of 150 messages handled exactly once and no dead letter: the 50th is a
// duplicate the stream drops.
func TestAnInterruptedReplaySendsNothingTwice(t *testing.T) {
	const n = 150
	e := newDeadEnv(t, n)
	d, _ := e.open(t)
	ctx, cancel := context.WithCancel(context.Background())
	published := 0
	natsretry.SetAfterPublish(d, func() {
		if published++; published == 50 {
			cancel()
		}
	})
	first, err := d.Replay(ctx, natsretry.Filter{}, natsretry.ReplayOptions{Stream: "JOBS", Rate: 1000})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 49, first.Replayed, "removed before the interruption")
	var outcomes []natsretry.ReplayOutcome
	again, err := d.Replay(context.Background(), natsretry.Filter{}, natsretry.ReplayOptions{Stream: "JOBS", Rate: 1000,
		Each: func(r natsretry.ReplayResult) { outcomes = append(outcomes, r.Outcome) }})
	require.NoError(t, err)
	assert.Equal(t, 1, again.Duplicates, "the one sent before the interruption")
	assert.Equal(t, n-50, again.Replayed)
	require.NotEmpty(t, outcomes)
	assert.Equal(t, natsretry.ReplayDuplicate, outcomes[0])
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	e.handledOnce(t, all)
	info, err := e.dead.Info(context.Background())
	require.NoError(t, err)
	assert.Zero(t, info.State.Msgs, "no dead letter left")
}

// TestAForgedDeadLetterIsRefused: dead letters published by hand to the
// dead-letter subject, naming JetStream's API or a subject the work stream
// does not capture, or another stream, are refused by a replay, reported
// and left in place; the genuine ones around them are replayed.
func TestAForgedDeadLetterIsRefused(t *testing.T) {
	e := newDeadEnv(t, 3)
	d, _ := e.open(t)
	ctx := context.Background()
	forged := map[uint64]string{}
	for _, f := range []struct{ subject, stream string }{
		{"$JS.API.STREAM.DELETE.JOBS", "JOBS"}, {"other.x", "JOBS"}, {"jobs.0.99", "ELSEWHERE"},
	} {
		forged[e.publish(t, "dead.jobs", "forged", nats.Header{natsretry.HeaderSubject: []string{f.subject}, natsretry.HeaderStream: []string{f.stream},
			natsretry.HeaderReason: []string{"not_retryable"}})] = f.subject
	}
	refused := map[uint64]string{}
	report, err := d.Replay(ctx, natsretry.Filter{}, natsretry.ReplayOptions{Stream: "JOBS", Rate: 1000, Each: func(r natsretry.ReplayResult) {
		if r.Outcome == natsretry.ReplayRefused {
			refused[r.DeadLetter.Sequence] = r.DeadLetter.Subject
			assert.Error(t, r.Err)
		}
	}})
	require.NoError(t, err)
	assert.Equal(t, 3, report.Replayed)
	assert.Equal(t, 3, report.Refused)
	assert.Equal(t, forged, refused)
	for seq := range forged {
		dl, err := d.Get(ctx, seq)
		require.NoError(t, err, "left in place")
		assert.Equal(t, "forged", string(dl.Data))
	}
	e.handledOnce(t, []int{0, 1, 2})
}

// TestPurgeRemovesExactlyWhatItSelects: a purge by reason removes those
// dead letters and no other; a purge with no filter is refused; All
// removes the rest.
func TestPurgeRemovesExactlyWhatItSelects(t *testing.T) {
	const n = 300
	e := newDeadEnv(t, n)
	d, _ := e.open(t)
	ctx := context.Background()
	_, err := d.Purge(ctx, natsretry.Filter{})
	require.ErrorContains(t, err, "natsretry: Purge: no filter")
	purged, err := d.Purge(ctx, natsretry.Filter{Reasons: []retry.Reason{retry.StrategyNone}})
	require.NoError(t, err)
	assert.Equal(t, n/3, purged)
	counts, err := d.Count(ctx, natsretry.Filter{})
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"not_retryable": n / 3, "retry_after_too_long": n / 3}, counts)
	purged, err = d.Purge(ctx, natsretry.Filter{All: true})
	require.NoError(t, err)
	assert.Equal(t, 2*n/3, purged)
	counts, err = d.Count(ctx, natsretry.Filter{})
	require.NoError(t, err)
	assert.Empty(t, counts)
}

// TestADryRunSendsNothing: a dry run reports what it would send, within
// its limit, and leaves every dead letter where it was.
func TestADryRunSendsNothing(t *testing.T) {
	e := newDeadEnv(t, 30)
	d, elapsed := e.open(t)
	var would []uint64
	report, err := d.Replay(context.Background(), natsretry.Filter{Reasons: []retry.Reason{retry.NotRetryable}},
		natsretry.ReplayOptions{Stream: "JOBS", Rate: 1, Limit: 4, DryRun: true, Each: func(r natsretry.ReplayResult) { would = append(would, r.DeadLetter.Sequence) }})
	require.NoError(t, err)
	assert.Equal(t, 4, report.Would)
	assert.Len(t, would, 4)
	assert.Zero(t, report.Replayed)
	assert.Zero(t, elapsed(), "a dry run is not paced")
	info, err := e.dead.Info(context.Background())
	require.NoError(t, err)
	assert.Equal(t, uint64(30), info.State.Msgs)
}

// TestBadFiltersAndOptionsAreRefused: each names its field and rule.
func TestBadFiltersAndOptionsAreRefused(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		f    natsretry.Filter
		want string
	}{
		{natsretry.Filter{Reasons: []retry.Reason{42}}, "natsretry: Filter.Reasons: retry: no reason 42"},
		{natsretry.Filter{Subject: "jobs..x"}, `natsretry: Filter.Subject: "jobs..x" is not a subject pattern`},
		{natsretry.Filter{Subject: "jobs.>.x"}, `natsretry: Filter.Subject: "jobs.>.x" is not a subject pattern`},
		{natsretry.Filter{Since: now, Until: now}, "natsretry: Filter.Since and Filter.Until: the range ends before it starts"},
		{natsretry.Filter{All: true, Error: "x"}, "natsretry: Filter.All: selects every dead letter, so it takes no other criterion"},
	} {
		assert.EqualError(t, c.f.Check(), c.want)
	}
	e := newEnv(t)
	d, err := natsretry.OpenDeadLetters(context.Background(), e.js, "DEAD", 0)
	require.NoError(t, err)
	for _, c := range []struct {
		o    natsretry.ReplayOptions
		want string
	}{
		{natsretry.ReplayOptions{Rate: 1}, "natsretry: ReplayOptions.Stream: the stream the dead letters came from is required"},
		{natsretry.ReplayOptions{Stream: "JOBS"}, "natsretry: ReplayOptions.Rate: must be above 0 and at most 100000 a second, got 0"},
		{natsretry.ReplayOptions{Stream: "JOBS", Rate: 1, Jitter: -1}, "natsretry: ReplayOptions.Jitter: must be between 0 and an hour, got -1ns"},
		{natsretry.ReplayOptions{Stream: "JOBS", Rate: 1, Limit: -1}, "natsretry: ReplayOptions.Limit: must not be negative, got -1"},
		{natsretry.ReplayOptions{Stream: "NOPE", Rate: 1}, `natsretry: Replay: stream "NOPE": nats: API error: code=404 err_code=10059 description=stream not found`},
	} {
		_, err := d.Replay(context.Background(), natsretry.Filter{}, c.o)
		assert.EqualError(t, err, c.want)
	}
	_, err = natsretry.OpenDeadLetters(context.Background(), e.js, "NOPE", 0)
	assert.ErrorContains(t, err, `natsretry: OpenDeadLetters: stream "NOPE"`)
	_, err = natsretry.OpenDeadLetters(context.Background(), e.js, "DEAD", -1)
	assert.EqualError(t, err, "natsretry: OpenDeadLetters: page must be between 0 and 65536, got -1")
}

// TestAListingEndsWhenTheServerGoesAway: a listing whose server shuts
// down part way through ends with an error, rather than waiting for the
// rest for ever.
func TestAListingEndsWhenTheServerGoesAway(t *testing.T) {
	s := startServer(t, t.TempDir(), -1)
	e := setup(t, s.ClientURL(), 1, time.Second, 0)
	for i := range 100 {
		e.publish(t, "dead.jobs", "x", nats.Header{natsretry.HeaderReason: []string{"not_retryable"}, natsretry.HeaderSubject: []string{fmt.Sprintf("jobs.%d", i)}})
	}
	d, err := natsretry.OpenDeadLetters(context.Background(), e.js, "DEAD", 10)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		n := 0
		for _, err := range d.List(context.Background(), natsretry.Filter{}) {
			if err != nil {
				done <- err
				return
			}
			if n++; n == 5 {
				s.Shutdown()
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		require.Error(t, err, "the listing ended without the rest and without an error")
		assert.Contains(t, err.Error(), "natsretry: reading dead letters")
	case <-time.After(within):
		t.Fatalf("the listing did not end within %v of its server going away", within)
	}
}
