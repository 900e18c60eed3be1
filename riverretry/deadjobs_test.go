package riverretry

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy/queuekit"
	"github.com/retrypolicy/retrypolicy/queuekit/deadlettertest"
	"github.com/retrypolicy/retrypolicy/retry"
)

// deadOutcomes are the first runs of dead job i: given up for three
// reasons in turn, then it succeeds.
func deadOutcomes(i int) []outcome {
	return [...][]outcome{{permanent, succeed}, {retryAfter, succeed}, {fail, succeed}}[i%3]
}

// giveUp inserts n jobs, "dead-<i>", each failing as deadOutcomes(i) says
// (under the default strategy, or one of one attempt of its own), and waits until the policy gave every
// one up; from then on every run succeeds. It returns their ids, by i.
func giveUp[TTx any](t *testing.T, h *harness[TTx], n int) []int64 {
	t.Helper()
	ctx := context.Background()
	ids := make([]int64, n)
	var params []river.InsertManyParams
	for i := range n {
		p := river.InsertManyParams{Args: testArgs{Case: fmt.Sprintf("dead-%d", i), Outcomes: deadOutcomes(i), After: 2 * time.Hour}}
		if i%3 == 2 {
			p.InsertOpts = &river.InsertOpts{Metadata: oneAttempt}
		}
		params = append(params, p)
	}
	for start := 0; start < n; start += 500 {
		res, err := h.client.InsertMany(ctx, params[start:min(start+500, n)])
		require.NoError(t, err)
		for j, r := range res {
			ids[start+j] = r.Job.ID
		}
	}
	waitInState(t, h, ids, rivertype.JobStateCancelled)
	h.seen.over.Store(true)
	return ids
}

// waitInState waits until every job of ids is in state, polling the
// database with one query a pass.
func waitInState[TTx any](t *testing.T, h *harness[TTx], ids []int64, state rivertype.JobState) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		res, err := h.client.JobList(context.Background(), river.NewJobListParams().IDs(ids...).States(state).First(len(ids)))
		require.NoError(t, err)
		if len(res.Jobs) == len(ids) {
			return
		}
		require.True(t, time.Now().Before(deadline), "%d of %d jobs %s", len(res.Jobs), len(ids), state)
		time.Sleep(20 * time.Millisecond)
	}
}

// oneAttempt is the metadata of a job whose own strategy gives it up at
// its first failure.
var oneAttempt = []byte(`{"retry_strategy": {"strategy": "bounded", "max_attempts": 1}}`)

// ranOnceMore checks that each job of ids ran exactly once after its
// replay, and succeeded: its runs are the first, failed, and one more.
func ranOnceMore[TTx any](t *testing.T, h *harness[TTx], ids []int64, reset bool) {
	t.Helper()
	waitInState(t, h, ids, rivertype.JobStateCompleted)
	for _, id := range ids {
		want := 2 // the failed run and the one after the replay
		if reset {
			want = 1 // a job of its own
		}
		assert.Len(t, h.seen.of(id), want, "runs of job %d", id)
	}
}

// deadFixture is the dead-letter kit's fixture on a River database of
// its own: dead jobs inserted cancelled with the policy's record, as the
// policy leaves them; a client that runs no job.
type deadFixture[TTx any] struct {
	client *river.Client[TTx]
	d      *DeadJobs[TTx]
	reset  bool
}

func newDeadFixture[TTx any](t *testing.T, driver riverdriver.Driver[TTx], reset bool) *deadFixture[TTx] {
	f := newDeadFixtureOn(t, driver)
	f.reset = reset
	return f
}

// newDeadFixtureOn is a fixture on driver's database, migrated.
func newDeadFixtureOn[TTx any](t testing.TB, driver riverdriver.Driver[TTx]) *deadFixture[TTx] {
	ctx := context.Background()
	migrator, err := rivermigrate.New(driver, nil)
	require.NoError(t, err)
	_, err = migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	require.NoError(t, err)
	client, err := river.NewClient(driver, &river.Config{})
	require.NoError(t, err)
	d, err := NewDeadJobs(client)
	require.NoError(t, err)
	return &deadFixture[TTx]{client: client, d: d}
}

func (f *deadFixture[TTx]) Driver() queuekit.Driver { return f.d }
func (f *deadFixture[TTx]) Route() queuekit.Route {
	return queuekit.Route{ResetAttempts: f.reset}
}

// insert inserts a cancelled job keyed key, with metadata.
func (f *deadFixture[TTx]) insert(t *testing.T, key string, metadata string) {
	now := time.Now()
	_, err := f.client.Driver().GetExecutor().JobInsertFull(context.Background(), &riverdriver.JobInsertFullParams{
		Attempt: 3, AttemptedAt: &now, EncodedArgs: []byte(`{"key":"` + key + `"}`), FinalizedAt: &now, Kind: "dead",
		MaxAttempts: 3, Metadata: []byte(metadata), Priority: 1, Queue: river.QueueDefault, ScheduledAt: &now,
		State: rivertype.JobStateCancelled, Errors: [][]byte{[]byte(`{"at":"2026-12-06T00:00:00Z","attempt":3,"error":"down"}`)}})
	require.NoError(t, err)
}

func (f *deadFixture[TTx]) Make(t *testing.T, key string, r retry.Reason) {
	f.insert(t, key, `{"retrypolicy":{"gave_up":"`+r.String()+`"},"retry_strategy":{"strategy":"none"}}`)
}

// Forge inserts a job cancelled by someone else than the policy.
func (f *deadFixture[TTx]) Forge(t *testing.T, key string) { f.insert(t, key, `{"x":1}`) }

func (f *deadFixture[TTx]) Key(l queuekit.Letter) string {
	var a struct{ Key string }
	_ = json.Unmarshal(l.Payload, &a)
	return a.Key
}

// Arrived counts the jobs, by key, that are not cancelled: made available
// again, or inserted anew.
func (f *deadFixture[TTx]) Arrived(t *testing.T) map[string]int {
	res, err := f.client.JobList(context.Background(), river.NewJobListParams().First(10_000).
		States(rivertype.JobStateAvailable, rivertype.JobStateScheduled, rivertype.JobStateRunning, rivertype.JobStateCompleted))
	require.NoError(t, err)
	out := map[string]int{}
	for _, job := range res.Jobs {
		out[f.Key(queuekit.Letter{Payload: job.EncodedArgs})]++
	}
	return out
}

// TestDeadJobsKeepTheKitsContract runs the dead-letter kit's suite on
// SQLite: each job made available (or, attempts reset, inserted anew) only
// while it is still the same cancelled job, read under the database's
// write lock: two replays at once make each job available once.
func TestDeadJobsKeepTheKitsContract(t *testing.T) {
	for _, reset := range []bool{false, true} {
		t.Run("reset="+strconv.FormatBool(reset), func(t *testing.T) {
			deadlettertest.Run(t, func(t *testing.T) deadlettertest.Fixture { return newDeadFixture(t, sqliteDriver(t), reset) })
		})
	}
}

// TestAListingIsBoundedByItsStart: a job given up after a listing began
// (one replayed and given up again, here one given up later) is left to
// the next listing, whatever its id.
func TestAListingIsBoundedByItsStart(t *testing.T) {
	f := newDeadFixture(t, sqliteDriver(t), false)
	f.Make(t, "before", retry.AttemptsExhausted)
	began := time.Now()
	for time.Since(began) < 2*time.Millisecond {
		runtime.Gosched() // a job given up after, beyond the precision of a stored time
	}
	f.Make(t, "after", retry.AttemptsExhausted)
	var keys []string
	for l, err := range (queuekit.DeadLetters{Driver: f.d, Now: func() time.Time { return began }}).List(context.Background(), Filter{}) {
		require.NoError(t, err)
		keys = append(keys, f.Key(l))
	}
	assert.Equal(t, []string{"before"}, keys)
}

// TestAReplayedJobRunsOnceMore: jobs the policy gave up, replayed, run
// once more and succeed: made available again with their attempts kept,
// or (attempts reset) as jobs of their own.
func TestAReplayedJobRunsOnceMore(t *testing.T) {
	for _, reset := range []bool{false, true} {
		h := newSQLiteHarness(t, nil)
		giveUp(t, h, 6)
		d, err := NewDeadJobs(h.client)
		require.NoError(t, err)
		var again []int64
		rep, err := queuekit.DeadLetters{Driver: d}.Replay(context.Background(), Filter{}, queuekit.ReplayOptions{Rate: 1000,
			Route: queuekit.Route{ResetAttempts: reset}, Each: func(r queuekit.ReplayResult) { again = append(again, int64(r.Sent.ID)) }})
		require.NoError(t, err)
		assert.Equal(t, 6, rep.Replayed)
		ranOnceMore(t, h, again, reset)
	}
}

// TestBadDeadJobFiltersAreRefused: each names its field and rule.
func TestBadDeadJobFiltersAreRefused(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		f    Filter
		want string
	}{
		{Filter{Filter: queuekit.Filter{Reasons: []retry.Reason{42}}}, "riverretry: Filter.Reasons: retry: no reason 42"},
		{Filter{Kinds: []string{""}}, "riverretry: Filter.Kinds: a kind is not empty"},
		{Filter{Filter: queuekit.Filter{Since: now, Until: now.Add(-time.Second)}}, "riverretry: Filter.Since and Filter.Until: the range ends before it starts"},
		{Filter{Filter: queuekit.Filter{All: true}, Kinds: []string{"x"}}, "riverretry: Filter.All: selects every dead letter, so it takes no other criterion"},
	} {
		assert.EqualError(t, c.f.Check(), c.want)
	}
	_, err := NewDeadJobs[riverdriver.ExecutorTx](nil)
	assert.EqualError(t, err, "riverretry: NewDeadJobs: no client")
}

// TestADeadJobsErrorIsItsRuns: the text River records for a job the
// policy cancels, its prefixes cut; any other text as it is.
func TestADeadJobsErrorIsItsRuns(t *testing.T) {
	for recorded, want := range map[string]string{
		"JobCancelError: riverretry: giving up (not_retryable, 1 failure(s) in the window): smtp: 550 (a): b": "smtp: 550 (a): b",
		"riverretry: giving up (attempts_exhausted, 3 failure(s) in the window): down":                        "down",
		"JobCancelError: the worker cancels":                                                                  "JobCancelError: the worker cancels",
		"riverretry: giving up (no end":                                                                       "riverretry: giving up (no end",
	} {
		assert.Equal(t, want, runError(recorded), recorded)
	}
}
