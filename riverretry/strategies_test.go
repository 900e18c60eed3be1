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
	after := func(i int) (int, []time.Time, bool) {
		meta := final.Metadata
		if i+1 < len(runs) {
			meta = runs[i+1].metadata
		}
		return recordOf(t, meta)
	}
	decisions := h.decisions(final.ID)
	var failures []time.Time
	errorsSeen := 0
	for i, run := range runs {
		seen, recorded, ok := after(i)
		if run.outcome != fail && run.outcome != crash {
			// A run that is no failure leaves the record as it was.
			if i == 0 {
				assert.False(t, ok, "%s: run %d is no failure", c.name, i+1)
			} else {
				prevSeen, prevRecorded, _ := recordOf(t, run.metadata)
				assert.Equal(t, prevSeen, seen, "%s: run %d is no failure", c.name, i+1)
				assert.Equal(t, prevRecorded, recorded, "%s: run %d is no failure", c.name, i+1)
			}
			continue
		}
		if run.outcome == fail {
			errorsSeen++
		}
		require.True(t, ok, "%s: run %d left no record", c.name, i+1)
		require.Less(t, len(failures), len(decisions), "%s: run %d was not decided on", c.name, i+1)
		got := decisions[len(failures)]
		assert.Equal(t, run.attempt, seen, "%s: run %d", c.name, i+1)
		assert.Equal(t, run.attempt, got.Attempt, "%s: run %d", c.name, i+1)
		require.NotEmpty(t, recorded, "%s: run %d", c.name, i+1)
		newest := recorded[0]
		assert.True(t, newest.Equal(got.FailedAt), "%s: run %d: the record's newest failure %v is the one decided, %v", c.name, i+1, newest, got.FailedAt)
		if slack == 0 { // synctest's clock: the policy reads the worker's instants
			assert.True(t, newest.Equal(run.ended.Truncate(time.Millisecond)), "%s: run %d failed at %v, when it ended, %v", c.name, i+1, newest, run.ended)
			assert.Equal(t, run.ended.Sub(run.started), got.Uptime, "%s: run %d's uptime", c.name, i+1)
		} else {
			// In real time the policy reads its clock before the run starts
			// and after it returns, a loaded machine taking any while: the
			// bounds are one-sided.
			assert.False(t, newest.Before(run.ended.Truncate(time.Millisecond)), "%s: run %d failed at %v, before it ended, %v", c.name, i+1, newest, run.ended)
			assert.GreaterOrEqual(t, got.Uptime, run.ended.Sub(run.started), "%s: run %d's uptime", c.name, i+1)
		}
		failures = append(failures, newest)

		want, err := retrypolicy.Decide(s, failures, got.Uptime, seed, newest)
		require.NoError(t, err)
		sameDecision(t, want, got, "%s: run %d: the decision is the library's", c.name, i+1)
		keep := want.InWindow
		if s.Kind == retrypolicy.Bounded {
			keep = min(keep, s.MaxAttempts)
		}
		assert.Len(t, recorded, keep, "%s: run %d: the record keeps the failures in the window", c.name, i+1)

		if want.Action == retrypolicy.Fatal {
			assert.Equal(t, len(runs)-1, i, "%s: no run after a fatal decision", c.name)
			assert.Equal(t, rivertype.JobStateCancelled, final.State, c.name)
			if run.outcome == fail {
				assert.Contains(t, final.Errors[len(final.Errors)-1].Error, "riverretry: giving up ("+want.Reason.String()+", ", c.name)
			}
			continue
		}
		require.Less(t, i+1, len(runs), "%s: a run after run %d's %s", c.name, i+1, want.Action)
		next := runs[i+1]
		due := want.Due
		if want.Action == retrypolicy.RetryNow {
			assert.False(t, next.scheduled.Before(due.Add(-h.precision/2)), "%s: run %d retried at once", c.name, i+2)
			if slack == 0 { // in real time, "at once" is as soon as a loaded machine gets to it
				assert.LessOrEqual(t, next.scheduled.Sub(due), h.precision/2+50*time.Millisecond, "%s: run %d retried at once", c.name, i+2)
			}
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
	assert.Len(t, decisions, len(failures), "%s: one decision per failure", c.name)
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
		decisions := h.decisions(job.ID)
		require.Len(t, decisions, 1)
		assert.NotEqual(t, retrypolicy.Fatal.String(), decisions[0].Decision.Action, "the strategy would have retried")
	})
}
