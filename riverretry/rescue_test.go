package riverretry

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sqliteTime writes t as River's SQLite driver stores times.
func sqliteTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000") }

// strandJob inserts a job as a client that died while running it would
// have left it: running its attempt, fetched an hour ago, with the given
// metadata. It returns the job's id.
func strandJob(t *testing.T, h *harness[*sqlTx], args testArgs, attempt int, metadata string, errs ...rivertype.AttemptError) int64 {
	t.Helper()
	ctx := context.Background()
	res, err := h.client.Insert(ctx, args, &river.InsertOpts{
		Metadata:    []byte(metadata),
		ScheduledAt: time.Now().Add(24 * time.Hour), // not fetched before it is stranded
	})
	require.NoError(t, err)
	_, err = h.db.ExecContext(ctx, `UPDATE river_job SET state = 'running', attempt = ?, attempted_at = ?, scheduled_at = ? WHERE id = ?`,
		attempt, sqliteTime(time.Now().Add(-time.Hour)), sqliteTime(time.Now().Add(-time.Hour)), res.Job.ID)
	require.NoError(t, err)
	if len(errs) > 0 {
		text, err := json.Marshal(errs)
		require.NoError(t, err)
		_, err = h.db.ExecContext(ctx, `UPDATE river_job SET errors = jsonb(?) WHERE id = ?`, string(text), res.Job.ID)
		require.NoError(t, err)
	}
	return res.Job.ID
}

// TestRescuedRunCountsAsAFailure: River's rescuer gives up on a run whose
// client died; the policy decides on it as a failure at the rescue, with
// no uptime credit, and the job goes on under its strategy.
func TestRescuedRunCountsAsAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSQLiteHarness(t, func(cfg *river.Config) { cfg.RescueStuckJobsAfter = 5 * time.Minute })
		const strategy = `{"strategy":"bounded","max_attempts":3,"backoff":{"kind":"fixed","base_delay_secs":10}}`
		id := strandJob(t, h, testArgs{Case: "rescued", Outcomes: []outcome{fail}}, 1, `{"retry_strategy":`+strategy+`}`)
		job := h.waitEnded([]int64{id}, 10*time.Minute)[id]

		assert.Equal(t, rivertype.JobStateCancelled, job.State, "the third failure in the window gives up")
		runs := h.seen.of(id)
		require.Len(t, runs, 2, "attempts 2 and 3 run; attempt 1 was rescued")
		require.NotEmpty(t, job.Errors)
		rescue := job.Errors[0]
		assert.Equal(t, 1, rescue.Attempt)
		assert.Contains(t, rescue.Error, "Stuck job rescued")
		near(t, h.precision, rescue.At.Add(10*time.Second), runs[0].scheduled, "the retry after the rescue is due 10 s after it")

		_, recorded, ok := recordOf(t, job.Metadata)
		require.True(t, ok)
		require.Len(t, recorded, 3, "the rescue is on record with the two failed runs")
		assert.True(t, recorded[2].Equal(rescue.At.Truncate(time.Millisecond)), "at the time River gives it")
		decisions := h.decisions(id)
		require.Len(t, decisions, 3, "each failure decided and reported once: the rescue by NextRetry, not again by the run after it")
		last := decisions[len(decisions)-1]
		assert.Equal(t, retrypolicy.Fatal.String(), last.Decision.Action)
		assert.Equal(t, retrypolicy.AttemptsExhausted.String(), last.Decision.Reason)
	})
}

// TestRescueThatGivesUpCancelsBeforeTheNextRun: when the rescued run is
// the failure on which the strategy gives up, River (whose rescuer cannot
// cancel) makes the job available, and the middleware cancels it before
// its work runs.
func TestRescueThatGivesUpCancelsBeforeTheNextRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSQLiteHarness(t, func(cfg *river.Config) { cfg.RescueStuckJobsAfter = 5 * time.Minute })
		earlier := time.Now().Add(-2 * time.Hour)
		meta := `{"retry_strategy":{"strategy":"bounded","max_attempts":2,"window_secs":86400,"backoff":{"kind":"fixed","base_delay_secs":1}},` +
			`"retrypolicy":{"seen_attempt":1,"history":"` + historyText(earlier.UnixMilli()) + `"}}`
		id := strandJob(t, h, testArgs{Case: "rescued, fatal", Outcomes: []outcome{succeed}}, 2, meta,
			rivertype.AttemptError{At: earlier.Add(-time.Second), Attempt: 1, Error: "upstream down"})
		job := h.waitEnded([]int64{id}, 10*time.Minute)[id]

		assert.Equal(t, rivertype.JobStateCancelled, job.State)
		assert.Empty(t, h.seen.of(id), "the work never runs again")
		last := job.Errors[len(job.Errors)-1]
		assert.Contains(t, last.Error, "riverretry: giving up (attempts_exhausted, 2 failure(s) in the window): Stuck job rescued")
		assert.Contains(t, h.policyLog.String(), "the job is cancelled when next fetched")
	})
}

// TestFailureBeforeTheMiddlewareIsDecided: a failure that ends before the
// middleware runs (a job of a kind no worker handles) is decided on by the
// error handler, and the job still gives up under its strategy.
func TestFailureBeforeTheMiddlewareIsDecided(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSQLiteHarness(t, nil)
		ctx := context.Background()
		res, err := h.client.Insert(ctx, testArgs{Case: "unknown kind", Outcomes: []outcome{succeed}},
			&river.InsertOpts{
				Metadata:    []byte(`{"retry_strategy":{"strategy":"bounded","max_attempts":2,"backoff":{"kind":"fixed","base_delay_secs":3}}}`),
				ScheduledAt: time.Now().Add(time.Minute),
			})
		require.NoError(t, err)
		_, err = h.db.ExecContext(ctx, `UPDATE river_job SET kind = 'no-such-kind' WHERE id = ?`, res.Job.ID)
		require.NoError(t, err)
		job := h.waitEnded([]int64{res.Job.ID}, 10*time.Minute)[res.Job.ID]
		assert.Equal(t, rivertype.JobStateCancelled, job.State, "the second failure in the window gives up")
		require.Len(t, job.Errors, 2)
		assert.Empty(t, h.seen.of(job.ID))
		for _, e := range job.Errors {
			assert.Contains(t, e.Error, "no-such-kind")
		}
		// The second attempt started when the first's decision was due, 3 s
		// after it failed (River's At is when an attempt started).
		wait := job.Errors[1].At.Sub(job.Errors[0].At)
		assert.GreaterOrEqual(t, wait, 3*time.Second-h.precision)
		assert.Less(t, wait, 3*time.Second+time.Second)
		_, _, recorded := recordOf(t, job.Metadata)
		assert.False(t, recorded, "no run of the middleware: nothing recorded")
	})
}
