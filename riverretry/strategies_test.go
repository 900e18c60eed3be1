package riverretry

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// strategyCase is a job, the strategy it runs under and how its runs end,
// with the end the rules give it, worked out by hand.
type strategyCase struct {
	name      string
	strategy  string // a descriptor carried in the job's metadata; "" for none
	kinded    bool   // the job is of the kind with a strategy in Config.Kinds
	run       time.Duration
	outcomes  []outcome
	wantState rivertype.JobState
	wantRuns  int
}

var strategyCases = []strategyCase{
	{name: "none gives up at once", strategy: `{"strategy":"none"}`,
		outcomes: []outcome{fail}, wantState: rivertype.JobStateCancelled, wantRuns: 1},
	{name: "bounded gives up at max_attempts", strategy: `{"strategy":"bounded","max_attempts":3,"window_secs":3600,"backoff":{"kind":"fixed","base_delay_secs":5}}`,
		outcomes: []outcome{fail}, wantState: rivertype.JobStateCancelled, wantRuns: 3},
	{name: "bounded recovers", strategy: `{"strategy":"bounded","max_attempts":5,"backoff":{"kind":"exponential","base_delay_secs":2,"max_delay_secs":10}}`,
		outcomes: []outcome{fail, fail, fail, fail, succeed}, wantState: rivertype.JobStateCompleted, wantRuns: 5},
	// Failures 11 s apart never share a 10 s window: never two in it.
	{name: "failures leave the window", strategy: `{"strategy":"bounded","max_attempts":2,"window_secs":10,"backoff":{"kind":"fixed","base_delay_secs":11}}`,
		outcomes: []outcome{fail, fail, fail, fail, succeed}, wantState: rivertype.JobStateCompleted, wantRuns: 5},
	{name: "unless_stopped with jitter", strategy: `{"strategy":"unless_stopped","backoff":{"kind":"exponential_with_jitter","base_delay_secs":1,"multiplier":2}}`,
		outcomes: []outcome{fail, fail, fail, fail, fail, succeed}, wantState: rivertype.JobStateCompleted, wantRuns: 6},
	{name: "long runs earn uptime credit", strategy: `{"strategy":"unless_stopped","backoff":{"kind":"exponential","base_delay_secs":2}}`, run: 5 * time.Second,
		outcomes: []outcome{fail, fail, fail, succeed}, wantState: rivertype.JobStateCompleted, wantRuns: 4},
	{name: "the default strategy, through a panic",
		outcomes: []outcome{crash, fail, succeed}, wantState: rivertype.JobStateCompleted, wantRuns: 3},
	{name: "a panic that exhausts the attempts", strategy: `{"strategy":"bounded","max_attempts":2,"backoff":{"kind":"fixed","base_delay_secs":1}}`,
		outcomes: []outcome{crash, crash}, wantState: rivertype.JobStateCancelled, wantRuns: 2},
	{name: "a snooze is not a failure", strategy: `{"strategy":"bounded","max_attempts":2,"backoff":{"kind":"fixed","base_delay_secs":1}}`,
		outcomes: []outcome{snooze, fail, snooze, succeed}, wantState: rivertype.JobStateCompleted, wantRuns: 4},
	{name: "the worker cancels", strategy: `{"strategy":"unless_stopped","backoff":{"kind":"fixed","base_delay_secs":1}}`,
		outcomes: []outcome{fail, cancel}, wantState: rivertype.JobStateCancelled, wantRuns: 2},
	{name: "its kind's strategy", kinded: true,
		outcomes: []outcome{fail}, wantState: rivertype.JobStateCancelled, wantRuns: 3},
}

// TestStrategiesOnSQLite runs a job of every case on River over SQLite in
// memory, in a synctest bubble (its waits cost no time), and checks each
// against the library: every decision, every scheduled time, no run before
// it is due, and the end.
func TestStrategiesOnSQLite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, sqliteDriver(t), time.Millisecond, func(cfg *river.Config) { cfg.Test.Time = stubClock{} })
		ids := insertCases(t, h.client, strategyCases)
		rows := h.waitEnded(ids, 10*time.Minute)
		for i, c := range strategyCases {
			checkCase(t, h, c, rows[ids[i]], 0)
		}
	})
}

// insertCases inserts one job per case and returns their ids.
func insertCases[TTx any](t testing.TB, client *river.Client[TTx], cases []strategyCase) []int64 {
	t.Helper()
	ids := make([]int64, len(cases))
	for i, c := range cases {
		args := testArgs{Case: c.name, Run: c.run, Outcomes: c.outcomes}
		opts := &river.InsertOpts{}
		if c.strategy != "" {
			opts.Metadata = []byte(`{"` + MetadataStrategy + `":` + c.strategy + `}`)
		}
		var res *rivertype.JobInsertResult
		var err error
		if c.kinded {
			res, err = client.Insert(context.Background(), kindArgs{args}, opts)
		} else {
			res, err = client.Insert(context.Background(), args, opts)
		}
		require.NoError(t, err, c.name)
		ids[i] = res.Job.ID
	}
	return ids
}

// checkCase checks the runs of a case's job against the library's
// decisions. slack is how far the policy's clock may be from the worker's
// (none in a synctest bubble).
func checkCase[TTx any](t *testing.T, h *harness[TTx], c strategyCase, final *rivertype.JobRow, slack time.Duration) {
	t.Helper()
	s := retrypolicy.Default()
	switch {
	case c.kinded:
		s = kindStrategy
	case c.strategy != "":
		var err error
		s, err = retrypolicy.Parse([]byte(c.strategy))
		require.NoError(t, err)
	}
	runs := h.seen.of(final.ID)
	require.Len(t, runs, c.wantRuns, c.name)
	assert.Equal(t, c.wantState, final.State, c.name)
	seed := retrypolicy.SeedFromString(strconv.FormatInt(final.ID, 10))

	// The record written after each run: in the next run's metadata, or
	// in the job's final metadata.
	after := func(i int) recordJSON {
		meta := final.Metadata
		if i+1 < len(runs) {
			meta = runs[i+1].metadata
		}
		r, ok := recordOf(t, meta)
		require.True(t, ok, "%s: run %d left no record", c.name, i+1)
		return r
	}
	var failures []time.Time
	errorsSeen := 0
	for i, run := range runs {
		rec := after(i)
		if run.outcome != succeed { // a success leaves the record as it was
			assert.Equal(t, run.attempt, rec.Seen, "%s: run %d", c.name, i+1)
		}
		if run.outcome != fail && run.outcome != crash {
			if n := len(failures); n > 0 {
				assert.True(t, rec.Failures[len(rec.Failures)-1].At.Equal(failures[n-1]), "%s: run %d is no failure", c.name, i+1)
			} else {
				assert.Empty(t, rec.Failures, "%s: run %d is no failure", c.name, i+1)
			}
			continue
		}
		if run.outcome == fail {
			errorsSeen++
		}
		newest := rec.Failures[len(rec.Failures)-1]
		assert.Equal(t, run.attempt, newest.Attempt, "%s: run %d", c.name, i+1)
		assert.InDelta(t, 0, float64(newest.At.Sub(run.ended)), float64(slack), "%s: run %d failed when it ended", c.name, i+1)
		uptime := secondsOf(t, rec.Uptime)
		assert.InDelta(t, float64(run.ended.Sub(run.started)), float64(uptime), float64(slack), "%s: run %d's uptime", c.name, i+1)
		failures = append(failures, newest.At)

		want, err := retrypolicy.Decide(s, failures, uptime, seed, newest.At)
		require.NoError(t, err)
		require.NotNil(t, rec.Decision, "%s: run %d", c.name, i+1)
		got := *rec.Decision
		assert.True(t, got.Due.Equal(want.Due), "%s: run %d: due %v, the library says %v", c.name, i+1, got.Due, want.Due)
		got.Due, want.Due = time.Time{}, time.Time{}
		assert.Equal(t, want, got, "%s: run %d: the decision is the library's", c.name, i+1)

		if rec.Decision.Action == retrypolicy.Fatal {
			assert.Equal(t, len(runs)-1, i, "%s: no run after a fatal decision", c.name)
			assert.Equal(t, rivertype.JobStateCancelled, final.State, c.name)
			if run.outcome == fail {
				assert.Contains(t, final.Errors[len(final.Errors)-1].Error, "riverretry: giving up ("+rec.Decision.Reason.String()+", ", c.name)
			}
			continue
		}
		require.Less(t, i+1, len(runs), "%s: a run after run %d's %s", c.name, i+1, rec.Decision.Action)
		next := runs[i+1]
		due := rec.Decision.Due
		if rec.Decision.Action == retrypolicy.RetryNow {
			assert.False(t, next.scheduled.Before(due.Add(-h.precision/2)), "%s: run %d retried at once", c.name, i+2)
			assert.LessOrEqual(t, next.scheduled.Sub(due), h.precision/2+slack+50*time.Millisecond, "%s: run %d retried at once", c.name, i+2)
		} else if slack > 0 && next.scheduled.Sub(due) >= h.precision {
			// In real time, a due time that passed before River asked
			// NextRetry (a loaded machine) is answered with now.
			assert.False(t, next.started.Before(next.scheduled), "%s: run %d", c.name, i+2)
		} else {
			near(t, h.precision, due, next.scheduled, "%s: run %d scheduled when due", c.name, i+2)
		}
		// The database rounds both the due time and its clock to its
		// precision when it compares them.
		assert.False(t, next.started.Before(due.Add(-h.precision)), "%s: run %d started %v before it was due", c.name, i+2, due.Sub(next.started))
	}
	// The chained error handler saw every error, the fatal one included.
	assert.Len(t, h.errs.seenErrors(final.ID), errorsSeen, c.name)
}

// TestInsertRefusesAnInvalidStrategy: a batch in which one job carries an
// invalid strategy is refused whole, with an error naming the kind and the
// fields.
func TestInsertRefusesAnInvalidStrategy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, sqliteDriver(t), time.Millisecond, func(cfg *river.Config) { cfg.Test.Time = stubClock{} })
		ctx := context.Background()
		_, err := h.client.InsertMany(ctx, []river.InsertManyParams{
			{Args: testArgs{Case: "fine", Outcomes: []outcome{succeed}}, InsertOpts: &river.InsertOpts{Metadata: []byte(`{"retry_strategy":{"strategy":"none"}}`)}},
			{Args: testArgs{Case: "bad", Outcomes: []outcome{succeed}}, InsertOpts: &river.InsertOpts{Metadata: []byte(`{"retry_strategy":{"strategy":"bounded","max_attempts":0,"backoff":{"kind":"fixed","base_delay_secs":1.5}}}`)}},
		})
		require.Error(t, err)
		var se *StrategyError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, "test", se.Kind)
		assert.ErrorIs(t, err, retrypolicy.ErrInvalid)
		assert.Contains(t, err.Error(), `job of kind "test"`)
		assert.Contains(t, err.Error(), "retry_strategy.max_attempts: must be at least 1, got 0")
		assert.Contains(t, err.Error(), "retry_strategy.backoff.base_delay_secs")
		assert.NotContains(t, err.Error(), "\n")

		list, err := h.client.JobList(ctx, river.NewJobListParams())
		require.NoError(t, err)
		assert.Empty(t, list.Jobs, "nothing of the batch is inserted")
	})
}

// TestAnInvalidStrategyInTheDatabaseGetsRiversDefault: a job that holds an
// invalid strategy anyway (written by other means) fails with a log line
// naming the problem and River's default schedule; nothing panics or
// sticks.
func TestAnInvalidStrategyInTheDatabaseGetsRiversDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		driver := sqliteDriver(t)
		h := newHarness(t, driver, time.Millisecond, func(cfg *river.Config) { cfg.Test.Time = stubClock{} })
		ctx := context.Background()
		// Inserted by a client without the policy's insert middleware.
		plain, err := river.NewClient(driver, &river.Config{Test: river.TestConfig{Time: stubClock{}}})
		require.NoError(t, err)
		res, err := plain.Insert(ctx, testArgs{Case: "invalid", Outcomes: []outcome{fail, succeed}},
			&river.InsertOpts{Metadata: []byte(`{"retry_strategy":{"strategy":"bounded","max_attempts":-1}}`)})
		require.NoError(t, err)
		rows := h.waitEnded([]int64{res.Job.ID}, time.Minute)
		job := rows[res.Job.ID]
		assert.Equal(t, rivertype.JobStateCompleted, job.State)
		runs := h.seen.of(job.ID)
		require.Len(t, runs, 2)
		// River's default waits attempt^4 seconds, give or take 10%.
		wait := runs[1].scheduled.Sub(runs[0].ended)
		assert.InDelta(t, float64(time.Second), float64(wait), float64(110*time.Millisecond), "River's default schedule: %v", wait)
		logs := h.logs.String()
		assert.Contains(t, logs, "River's default retry policy applies")
		assert.Contains(t, logs, "max_attempts: must be at least 1")
		_, recorded := recordOf(t, job.Metadata)
		assert.False(t, recorded, "no record for a job the policy cannot decide on")
	})
}

// TestChainedHandlerCancels: the user's error handler, chained after the
// policy, may cancel a job the strategy would retry.
func TestChainedHandlerCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, sqliteDriver(t), time.Millisecond, func(cfg *river.Config) { cfg.Test.Time = stubClock{} })
		h.errs.cancelIf = func(job *rivertype.JobRow) bool {
			var a testArgs
			return json.Unmarshal(job.EncodedArgs, &a) == nil && strings.HasPrefix(a.Case, "user cancels")
		}
		res, err := h.client.Insert(context.Background(), testArgs{Case: "user cancels", Outcomes: []outcome{fail, succeed}}, nil)
		require.NoError(t, err)
		job := h.waitEnded([]int64{res.Job.ID}, time.Hour)[res.Job.ID]
		assert.Equal(t, rivertype.JobStateCancelled, job.State)
		assert.Len(t, h.seen.of(job.ID), 1)
		rec, ok := recordOf(t, job.Metadata)
		require.True(t, ok)
		assert.NotEqual(t, retrypolicy.Fatal, rec.Decision.Action, "the strategy would have retried")
	})
}
