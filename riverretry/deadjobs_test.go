package riverretry

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// deadJobs opens h's dead jobs, its replays paced by a clock that sleeps
// by moving forward; it returns the clock's time since it was opened.
func deadJobs[TTx any](t *testing.T, h *harness[TTx]) (*DeadJobs[TTx], func() time.Duration) {
	d, err := NewDeadJobs(h.client, 100)
	require.NoError(t, err)
	start := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := start
	d.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	d.sleep = func(_ context.Context, by time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(by)
		return nil
	}
	return d, func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return now.Sub(start)
	}
}

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

// TestDeadJobsAreCountedAndListedByReasonAndError: jobs given up by the
// policy for three reasons are counted by reason, and a listing by
// reason, by kind, or by a substring of the last error gives exactly the
// ones the test gave up so.
func TestDeadJobsAreCountedAndListedByReasonAndError(t *testing.T) {
	const n = 150
	h := newSQLiteHarness(t, nil)
	ids := giveUp(t, h, n)
	d, _ := deadJobs(t, h)
	ctx := context.Background()
	counts, err := d.Count(ctx, Filter{})
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"not_retryable": n / 3, "retry_after_too_long": n / 3, "attempts_exhausted": n / 3}, counts)

	var got []int64
	for dj, err := range d.List(ctx, Filter{Reasons: []retry.Reason{retry.RetryAfterTooLong}}) {
		require.NoError(t, err)
		assert.Equal(t, 2*time.Hour, dj.WaitAsked)
		got = append(got, dj.Job.ID)
	}
	var want []int64
	for i, id := range ids {
		if i%3 == 1 {
			want = append(want, id)
		}
	}
	assert.Equal(t, want, got)

	got = got[:0]
	for dj, err := range d.List(ctx, Filter{Error: "404 not found"}) {
		require.NoError(t, err)
		assert.Equal(t, "not_retryable", dj.Reason)
		got = append(got, dj.Job.ID)
	}
	assert.Len(t, got, n/3)

	counts, err = d.Count(ctx, Filter{Kinds: []string{"kinded"}})
	require.NoError(t, err)
	assert.Empty(t, counts, "no job of that kind")
	dj, err := d.Get(ctx, ids[2])
	require.NoError(t, err)
	assert.Equal(t, "attempts_exhausted", dj.Reason)
	assert.Equal(t, "dead-2: attempt 1 failed", dj.Error)
}

// TestAPacedReplayOfJobs: 40 dead jobs replayed at 20 a second take
// 1.95 s of the replay's clock (within 10%), and each runs once more and
// succeeds; with ResetAttempts each is a job of its own, started anew.
func TestAPacedReplayOfJobs(t *testing.T) {
	for _, reset := range []bool{false, true} {
		t.Run(fmt.Sprintf("reset=%v", reset), func(t *testing.T) {
			const n = 40
			h := newSQLiteHarness(t, nil)
			giveUp(t, h, n)
			d, elapsed := deadJobs(t, h)
			var again []int64
			report, err := d.Replay(context.Background(), Filter{}, ReplayOptions{Rate: 20, ResetAttempts: reset,
				Each: func(r ReplayResult) {
					again = append(again, r.ID)
					if reset {
						assert.NotEqual(t, r.DeadJob.Job.ID, r.ID)
					} else {
						assert.Equal(t, r.DeadJob.Job.ID, r.ID)
					}
				}})
			require.NoError(t, err)
			assert.Equal(t, n, report.Replayed)
			assert.InDelta(t, 1.95, elapsed().Seconds(), 0.195, "within 10%% of 1.95 s on the replay's clock")
			ranOnceMore(t, h, again, reset)
			counts, err := d.Count(context.Background(), Filter{})
			require.NoError(t, err)
			assert.Empty(t, counts, "no dead job left")
			if reset {
				job, err := h.client.JobGet(context.Background(), again[0])
				require.NoError(t, err)
				assert.Equal(t, 1, job.Attempt, "started anew")
				var meta map[string]json.RawMessage
				require.NoError(t, json.Unmarshal(job.Metadata, &meta))
				_, failedBefore := meta[MetadataKey]
				assert.False(t, failedBefore, "no record of its earlier failures")
			}
		})
	}
}

// TestAnInterruptedReplayOfJobsReplaysEachOnce: a replay whose context
// ends inside the 30th job's transaction, before it commits, run again,
// replays each of 90 jobs once: the 30th's transaction rolled back.
func TestAnInterruptedReplayOfJobsReplaysEachOnce(t *testing.T) {
	const n = 90
	h := newSQLiteHarness(t, nil)
	giveUp(t, h, n)
	d, _ := deadJobs(t, h)
	ctx, cancel := context.WithCancel(context.Background())
	committed := 0
	d.beforeCommit = func() {
		if committed++; committed == 30 {
			cancel()
		}
	}
	var again []int64
	each := func(r ReplayResult) { again = append(again, r.ID) }
	first, err := d.Replay(ctx, Filter{}, ReplayOptions{Rate: 1000, ResetAttempts: true, Each: each})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 29, first.Replayed)
	d.beforeCommit = nil
	second, err := d.Replay(context.Background(), Filter{}, ReplayOptions{Rate: 1000, ResetAttempts: true, Each: each})
	require.NoError(t, err)
	assert.Equal(t, n-29, second.Replayed)
	ranOnceMore(t, h, again, true)
	counts, err := d.Count(context.Background(), Filter{})
	require.NoError(t, err)
	assert.Empty(t, counts)
}

// TestPurgeDeletesExactlyTheJobsItSelects: a purge by reason deletes those
// dead jobs and no other; a purge with no filter is refused.
func TestPurgeDeletesExactlyTheJobsItSelects(t *testing.T) {
	const n = 60
	h := newSQLiteHarness(t, nil)
	ids := giveUp(t, h, n)
	d, _ := deadJobs(t, h)
	ctx := context.Background()
	_, err := d.Purge(ctx, Filter{})
	require.ErrorContains(t, err, "riverretry: Purge: no filter")
	purged, err := d.Purge(ctx, Filter{Reasons: []retry.Reason{retry.NotRetryable}})
	require.NoError(t, err)
	assert.Equal(t, n/3, purged)
	for i, id := range ids {
		_, err := h.client.JobGet(ctx, id)
		if i%3 == 0 {
			assert.ErrorIs(t, err, river.ErrNotFound, "dead-%d purged", i)
		} else {
			assert.NoError(t, err, "dead-%d kept", i)
		}
	}
}

// TestADryRunOfJobsChangesNothing: a dry run reports what it would
// replay, within its limit, and leaves every job as it was.
func TestADryRunOfJobsChangesNothing(t *testing.T) {
	h := newSQLiteHarness(t, nil)
	giveUp(t, h, 9)
	d, elapsed := deadJobs(t, h)
	report, err := d.Replay(context.Background(), Filter{Reasons: []retry.Reason{retry.AttemptsExhausted}}, ReplayOptions{Rate: 1, Limit: 2, DryRun: true})
	require.NoError(t, err)
	assert.Equal(t, ReplayReport{Matched: 2, Would: 2}, report)
	assert.Zero(t, elapsed())
	counts, err := d.Count(context.Background(), Filter{})
	require.NoError(t, err)
	assert.Equal(t, 9, counts["not_retryable"]+counts["retry_after_too_long"]+counts["attempts_exhausted"])
}

// TestBadDeadJobFiltersAreRefused: each names its field and rule.
func TestBadDeadJobFiltersAreRefused(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		f    Filter
		want string
	}{
		{Filter{Reasons: []retry.Reason{42}}, "riverretry: Filter.Reasons: retry: no reason 42"},
		{Filter{Kinds: []string{""}}, "riverretry: Filter.Kinds: a kind is not empty"},
		{Filter{Since: now, Until: now.Add(-time.Second)}, "riverretry: Filter.Since and Filter.Until: the range ends before it starts"},
		{Filter{All: true, Kinds: []string{"x"}}, "riverretry: Filter.All: selects every dead job, so it takes no other criterion"},
	} {
		assert.EqualError(t, c.f.Check(), c.want)
	}
	var d DeadJobs[riverdriver.ExecutorTx]
	for _, c := range []struct {
		o    ReplayOptions
		want string
	}{
		{ReplayOptions{}, "riverretry: ReplayOptions.Rate: must be above 0 and at most 100000 a second, got 0"},
		{ReplayOptions{Rate: 1, Limit: -1}, "riverretry: ReplayOptions.Limit: must not be negative, got -1"},
		{ReplayOptions{Rate: 1, Jitter: 2 * time.Hour}, "riverretry: ReplayOptions.Jitter: must be between 0 and an hour, got 2h0m0s"},
	} {
		_, err := d.Replay(context.Background(), Filter{}, c.o)
		assert.EqualError(t, err, c.want)
	}
	_, err := NewDeadJobs[riverdriver.ExecutorTx](nil, 0)
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
