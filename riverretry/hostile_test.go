package riverretry

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrypolicy/retrypolicy/queuekit"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostileCase is a job whose metadata was written by hand, by another
// program, or by a client whose clock runs ahead. Every run of it fails;
// its strategy, its own or its kind's (bounded, 3 attempts in an hour),
// decides how many runs it gets.
type hostileCase struct {
	name     string
	prior    int    // failed attempts River holds, 10 s apart, the last 10 s ago
	metadata string // with {now±d} placeholders; see plantMetadata
	wantRuns int
	wantLog  string        // a line the policy logs once for the job, "" for none
	wait     time.Duration // if not 0, the wait after the first run
}

const (
	repaired = "its failures are read from River's errors instead"
	invalid  = "the job's strategy is invalid; its kind's strategy applies"
)

var hostileCases = []hostileCase{
	// Records on a job that never ran.
	{"failures as an array, not a history", 0, `{"retrypolicy":{"seen_attempt":0,"failures":[{"attempt":0,"at":"9999-12-31T23:59:59Z"}]}}`, 3, repaired, 0},
	{"a failure in year 9999", 0, `{"retrypolicy":{"seen_attempt":0,"history":"{9999}"}}`, 3, repaired, 0},
	{"seen_attempt 1.0", 0, `{"retrypolicy":{"seen_attempt":1.0,"history":"{}"}}`, 3, repaired, 0},
	{`seen_attempt "3"`, 0, `{"retrypolicy":{"seen_attempt":"3","history":"{}"}}`, 3, repaired, 0},
	{"seen_attempt -1", 0, `{"retrypolicy":{"seen_attempt":-1,"history":"{}"}}`, 3, repaired, 0},
	{"seen_attempt 2^40", 0, `{"retrypolicy":{"seen_attempt":1099511627776,"history":"{}"}}`, 3, repaired, 0},
	{`history "x"`, 0, `{"retrypolicy":{"seen_attempt":0,"history":"x"}}`, 3, repaired, 0},
	{"an escape in the history", 0, `{"retrypolicy":{"seen_attempt":0,"history":"\u0041"}}`, 3, repaired, 0},
	{`"at": 12`, 0, `{"retrypolicy":{"seen_attempt":0,"failures":[{"attempt":1,"at":12}]}}`, 3, repaired, 0},
	{"a record that is a string", 0, `{"retrypolicy":"garbage"}`, 3, repaired, 0},
	{"a record that is an array", 0, `{"retrypolicy":[1,2,3]}`, 3, repaired, 0},
	{"a null record", 0, `{"retrypolicy":null}`, 3, "", 0},
	{"a record with keys of a later version", 0, `{"retrypolicy":{"seen_attempt":0,"history":"{}","v":3,"later":{"x":[1]}}}`, 3, "", 0},
	{"100,000 failures in the window", 0, `{"retrypolicy":{"seen_attempt":100000,"history":"{many}"}}`, 3, repaired, 0},
	// Records on a job that failed twice already.
	{"a sound record", 2, `{"retrypolicy":{"seen_attempt":2,"history":"{now-9s,now-19s}"}}`, 1, "", 0},
	{"a failure 10 minutes ahead, another client's clock", 2, `{"retrypolicy":{"seen_attempt":2,"history":"{now+10m,now-19s}"}}`, 1, "", 0},
	{"the run that failed is the one decided, not one 10 minutes ahead", 1, `{"retrypolicy":{"seen_attempt":1,"history":"{now+10m}"}}`, 2, "", 1500 * time.Millisecond},
	{"a failure 30 days ahead", 2, `{"retrypolicy":{"seen_attempt":2,"history":"{now+720h,now-19s}"}}`, 1, repaired, 0},
	{"a failure in year 9999 after two real ones", 2, `{"retrypolicy":{"seen_attempt":2,"history":"{9999,now-19s}"}}`, 1, repaired, 0},
	{"a failure before the job existed", 2, `{"retrypolicy":{"seen_attempt":2,"history":"{now-9s,1971}"}}`, 1, repaired, 0},
	{"one failure five times over", 2, `{"retrypolicy":{"seen_attempt":2,"history":"{now-9s,now-9s,now-9s,now-9s,now-9s}"}}`, 1, repaired, 0},
	{"seen beyond the job's attempt", 2, `{"retrypolicy":{"seen_attempt":7,"history":"{now-9s}"}}`, 1, repaired, 0},
	{"a record missing River's last failure", 2, `{"retrypolicy":{"seen_attempt":1,"history":"{now-19s}"}}`, 1, "", 0},
	{"no record, failures River holds", 2, `{}`, 1, "", 0},
	// Metadata and strategy shapes.
	{"a user key nested 17 levels, a strategy of 3 attempts", 0, `{"user":{nest17},"retry_strategy":{"strategy":"bounded","max_attempts":3,"backoff":{"kind":"fixed","base_delay_secs":2}}}`, 3, "", 0},
	{"a user key nested 300 levels", 0, `{"user":{nest300},"retry_strategy":{"strategy":"bounded","max_attempts":2}}`, 2, "", 0},
	{"a 100 KB user value of escapes", 0, `{"user":"{escapes}","retry_strategy":{"strategy":"bounded","max_attempts":2}}`, 2, "", 0},
	{"a null strategy", 0, `{"retry_strategy":null}`, 3, "", 0},
	{"an invalid strategy", 0, `{"retry_strategy":{"strategy":"bounded","max_attempts":-1}}`, 3, invalid, 0},
	{"a strategy that is a string", 0, `{"retry_strategy":"bounded"}`, 3, invalid, 0},
	{"a strategy with an unknown field", 0, `{"retry_strategy":{"strategy":"none","retries":9}}`, 3, invalid, 0},
	{"a 1 MiB strategy", 0, `{"retry_strategy":{"strategy":"bounded",{spaces}"max_attempts":2}}`, 2, "", 0},
	{"an escaped key", 0, `{"retry_strat\u0065gy":{"strategy":"none"}}`, 1, "", 0},
	{"River's keys, the record first", 2, `{"retrypolicy":{"seen_attempt":2,"history":"{now-9s,now-19s}"},"snoozes":4,"river:log":[{"a":"b"}],"ключ":"значение","retry_strategy":{"strategy":"bounded","max_attempts":4}}`, 2, "", 0},
}

// plantMetadata fills a case's placeholders: {nestN} a value nested N
// levels, {escapes} 100 KB of escapes, {spaces} 1 MiB of white space,
// and, inside a history string, {t1,t2,…} the history of those instants
// (now±d, 9999, 1971), {many}, 100,000 failures a millisecond apart, or
// {} none.
func plantMetadata(meta string, now time.Time) string {
	meta = strings.ReplaceAll(meta, "{nest17}", strings.Repeat(`{"k":`, 16)+"1"+strings.Repeat("}", 16))
	meta = strings.ReplaceAll(meta, "{nest300}", strings.Repeat(`[{"k":`, 150)+`"]}"`+strings.Repeat("}]", 150))
	meta = strings.ReplaceAll(meta, "{escapes}", strings.Repeat(`\"\\\u00e9}`, 10000))
	meta = strings.ReplaceAll(meta, "{spaces}", strings.Repeat(" ", 1<<20))
	if i := strings.Index(meta, `"history":"{`) + len(`"history":`); i >= len(`"history":`) {
		j := strings.Index(meta[i:], `}"`) + i
		var r []int64
		for _, at := range strings.Split(meta[i+2:j], ",") {
			switch {
			case at == "": // {}: none
			case at == "9999":
				r = append(r, time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).UnixMilli())
			case at == "1971":
				r = append(r, time.Date(1971, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
			case at == "many":
				for k := range 100000 {
					r = append(r, now.Add(-time.Duration(k)*time.Millisecond).UnixMilli())
				}
			default:
				d, err := time.ParseDuration(strings.TrimPrefix(at, "now"))
				if err != nil {
					panic(err)
				}
				r = append(r, now.Add(d).UnixMilli())
			}
		}
		meta = meta[:i+1] + historyText(r...) + meta[j+1:]
	}
	return meta
}

// plantJob inserts a job as another program may have left it: attempt
// prior, River's errors for those attempts, and metadata written directly
// into the database. It returns the job's id.
func plantJob(t *testing.T, h *harness[*sqlTx], args river.JobArgs, prior int, metadata string) int64 {
	t.Helper()
	ctx := context.Background()
	res, err := h.client.Insert(ctx, args, &river.InsertOpts{ScheduledAt: time.Now().Add(24 * time.Hour)})
	require.NoError(t, err)
	var errs []rivertype.AttemptError
	for a := 1; a <= prior; a++ {
		errs = append(errs, rivertype.AttemptError{At: time.Now().Add(-time.Duration(prior-a+1) * 10 * time.Second), Attempt: a, Error: "an earlier failure"})
	}
	text, err := json.Marshal(errs)
	require.NoError(t, err)
	if errs == nil {
		text = []byte("[]")
	}
	_, err = h.db.ExecContext(ctx, `UPDATE river_job SET metadata = jsonb(?), attempt = ?, errors = jsonb(?), scheduled_at = ? WHERE id = ?`,
		metadata, prior, string(text), sqliteTime(time.Now()), res.Job.ID)
	require.NoError(t, err)
	return res.Job.ID
}

// TestHostileRecordsOnSQLite: jobs whose metadata no version of the
// policy would write, or that another client's clock makes odd, each end
// as their strategy says, with one log line when their record cannot be
// trusted; a healthy job beside them is retried on time; no River service
// logs an error, and what the policy keeps stays small.
func TestHostileRecordsOnSQLite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSQLiteHarness(t, nil)
		now := time.Now()
		ids := make([]int64, len(hostileCases))
		for i, c := range hostileCases {
			ids[i] = plantJob(t, h, kindArgs{testArgs{Case: c.name, Outcomes: []outcome{fail}}}, c.prior, plantMetadata(c.metadata, now))
		}
		healthy := strategyCases[2] // bounded, recovers after four failures
		healthyID := insertCases(t, h.client, []strategyCase{healthy})[0]
		rows := h.waitEnded(append(ids, healthyID), time.Hour)

		checkCase(t, h, healthy, rows[healthyID], 0)
		logs := h.policyLog.String()
		for i, c := range hostileCases {
			job := rows[ids[i]]
			assert.Equal(t, rivertype.JobStateCancelled, job.State, c.name)
			runs := h.seen.of(job.ID)
			assert.Len(t, runs, c.wantRuns, c.name)
			if c.wait > 0 && len(runs) > 1 {
				near(t, h.precision, runs[0].ended.Add(c.wait), runs[1].scheduled, "%s: the retry", c.name)
			}
			require.NotEmpty(t, job.Errors, c.name)
			assert.Contains(t, job.Errors[len(job.Errors)-1].Error, "riverretry: giving up (", c.name)
			lines := 0
			for line := range strings.Lines(logs) {
				if strings.Contains(line, fmt.Sprintf(`"job_id":%d,`, job.ID)) && (strings.Contains(line, repaired) || strings.Contains(line, invalid)) {
					lines++
					assert.Contains(t, line, c.wantLog, c.name)
				}
			}
			switch c.wantLog {
			case "":
				assert.Zero(t, lines, "%s: no line", c.name)
			case repaired:
				assert.Equal(t, 1, lines, "%s: one line", c.name)
			default: // an invalid strategy is named on each run
				assert.Equal(t, c.wantRuns, lines, "%s: a line a run", c.name)
			}
			seen, failures, ok := recordOf(t, job.Metadata)
			require.True(t, ok, c.name)
			assert.Equal(t, job.Attempt, seen, c.name)
			assert.LessOrEqual(t, len(failures), 4, "%s: the record keeps what deciding needs", c.name)
			for _, at := range failures {
				assert.False(t, at.After(time.Now()), "%s: no failure after now", c.name)
			}
		}
		assert.NotContains(t, h.logs.String(), "level=ERROR", "no River service logs an error")
		cached, size := h.policy.policies.Cached()
		assert.LessOrEqual(t, size, queuekit.MaxCachedBytes)
		assert.LessOrEqual(t, cached, 8, "the cache holds only valid strategies of at most 4 KiB")
	})
}

// TestSnoozeThenRescueCounts: a snooze gives the attempt back; when that
// attempt's next run is rescued after its client died, the rescue is a
// failure like any other, and the strategy ends the job at its second
// failure.
func TestSnoozeThenRescueCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSQLiteHarness(t, func(cfg *river.Config) {
			cfg.JobTimeout = time.Minute
			cfg.RescueStuckJobsAfter = 2 * time.Minute
			cfg.FetchPollInterval = time.Second
		})
		meta := []byte(`{"retry_strategy":{"strategy":"bounded","max_attempts":2,"backoff":{"kind":"fixed","base_delay_secs":1}}}`)
		res, err := h.client.Insert(context.Background(), testArgs{Case: "snooze, then rescue", Outcomes: []outcome{fail, snooze, hang, succeed}}, &river.InsertOpts{Metadata: meta})
		require.NoError(t, err)
		job := h.waitEnded([]int64{res.Job.ID}, hangFor)[res.Job.ID]
		assert.Equal(t, rivertype.JobStateCancelled, job.State)
		runs := h.seen.of(job.ID)
		require.Len(t, runs, 3, "a failure, a snooze, a run rescued: never a fourth")
		assert.Equal(t, []int{1, 2, 2}, []int{runs[0].attempt, runs[1].attempt, runs[2].attempt}, "the snooze gave attempt 2 back")
		assert.Contains(t, job.Errors[len(job.Errors)-1].Error, "riverretry: giving up (attempts_exhausted, 2 failure(s) in the window)")
		time.Sleep(hangFor) // the hung run returns, to a job no longer running
	})
}

// TestErrorVocabulary: a River worker speaks the library's own error
// vocabulary: Permanent ends the job as a fatal decision does, and
// retry.After waits at least what it asks, never cut; a wait past the
// job's limit (an hour for a strategy capped at a minute) cancels the job
// retry_after_too_long, the wait in its error and its record. Until the
// job's limit, the 2 h were cut to the strategy's minute.
func TestErrorVocabulary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSQLiteHarness(t, nil)
		ctx := context.Background()
		insert := func(args testArgs, strategy string) int64 {
			res, err := h.client.Insert(ctx, args, &river.InsertOpts{Metadata: []byte(`{"retry_strategy":` + strategy + `}`)})
			require.NoError(t, err)
			return res.Job.ID
		}
		const fixed = `{"strategy":"unless_stopped","backoff":{"kind":"fixed","base_delay_secs":1}}`
		const capped = `{"strategy":"unless_stopped","backoff":{"kind":"exponential","base_delay_secs":1,"max_delay_secs":60}}`
		perm := insert(testArgs{Case: "permanent", Outcomes: []outcome{fail, permanent}}, fixed)
		after := insert(testArgs{Case: "retry after 90 s", Outcomes: []outcome{retryAfter, succeed}, After: 90 * time.Second}, fixed)
		capAt := insert(testArgs{Case: "retry after 2 h, past the limit", Outcomes: []outcome{retryAfter, succeed}, After: 2 * time.Hour}, capped)
		short := insert(testArgs{Case: "retry after less than the delay", Outcomes: []outcome{retryAfter, succeed}, After: time.Millisecond}, fixed)
		rows := h.waitEnded([]int64{perm, after, capAt, short}, 3*time.Hour)

		job := rows[perm]
		assert.Equal(t, rivertype.JobStateCancelled, job.State)
		assert.Len(t, h.seen.of(perm), 2)
		assert.Contains(t, job.Errors[len(job.Errors)-1].Error, "riverretry: giving up (not_retryable, 2 failure(s) in the window): permanent: attempt 2: 404 not found")
		assert.Len(t, h.errs.seenErrors(perm), 2, "the chained handler saw both errors")

		job = rows[capAt]
		assert.Equal(t, rivertype.JobStateCancelled, job.State)
		assert.Len(t, h.seen.of(capAt), 1)
		assert.Contains(t, job.Errors[len(job.Errors)-1].Error, "riverretry: giving up (retry_after_too_long, asked to wait 2h0m0s, 1 failure(s) in the window)")
		reason, asked := givenUp(t, job.Metadata)
		assert.Equal(t, "retry_after_too_long", reason)
		assert.Equal(t, 7200.0, asked)

		for id, wait := range map[int64]time.Duration{after: 90 * time.Second, short: time.Second} {
			assert.Equal(t, rivertype.JobStateCompleted, rows[id].State)
			runs := h.seen.of(id)
			require.Len(t, runs, 2)
			near(t, h.precision, runs[0].ended.Add(wait), runs[1].scheduled, "job %d waits %v", id, wait)
		}
	})
}

// slowPolling makes River fetch every 5 s of the bubble's clock rather
// than every 100 ms: a test that waits out a server's 600 s then costs 120
// polls, not 6,000 (two minutes of the machine's time under -race). What
// the tests read is the job's scheduled time, which the polling does not
// change.
func slowPolling(cfg *river.Config) {
	cfg.FetchPollInterval = 5 * time.Second
	cfg.FetchCooldown = time.Second
}

// TestALongRetryAfterIsDeferredToTheJob: a job whose HTTP call gets
// Retry-After: 600 from a retryhttp transport returns from its worker at
// once, its run holding no worker for the wait, and is scheduled 600 s
// after its failure on the policy's clock (synctest's), where its strategy
// alone would have waited a second; the strategy still counts the failure.
func TestALongRetryAfterIsDeferredToTheJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSQLiteHarness(t, slowPolling)
		const fixed = `{"strategy":"unless_stopped","backoff":{"kind":"fixed","base_delay_secs":1}}`
		res, err := h.client.Insert(context.Background(), testArgs{Case: "busy service", Outcomes: []outcome{httpRetryAfter, succeed}, After: 600 * time.Second},
			&river.InsertOpts{Metadata: []byte(`{"retry_strategy":` + fixed + `}`)})
		require.NoError(t, err)
		rows := h.waitEnded([]int64{res.Job.ID}, time.Hour)
		assert.Equal(t, rivertype.JobStateCompleted, rows[res.Job.ID].State)
		runs := h.seen.of(res.Job.ID)
		require.Len(t, runs, 2)
		decided := h.decisions(res.Job.ID)
		require.NotEmpty(t, decided)
		failedAt := decided[0].FailedAt // when the run returned, as the policy saw it
		assert.Less(t, failedAt.Sub(runs[0].started), time.Second, "the run returned at once")
		near(t, h.precision, failedAt.Add(600*time.Second), runs[1].scheduled, "scheduled after the deferred wait")
		assert.Contains(t, rows[res.Job.ID].Errors[0].Error, "deferred")
		_, failures, ok := recordOf(t, runs[1].metadata)
		require.True(t, ok)
		assert.Len(t, failures, 1, "the strategy counted the failure")
	})
}

// TestA429BeyondTheTransportsCapIsDeferredInFull: a job calls an API
// through a transport whose strategy waits at most a second; the API
// answers 429 with Retry-After: 600. The API is called once, and the job
// runs again 600 s after its failure, on SQLite under synctest's clock.
// Until a server's wait was never cut short, the transport cut it to its
// cap, called the API three times in two seconds, and the job ran again
// after its strategy's own second.
func TestA429BeyondTheTransportsCapIsDeferredInFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSQLiteHarness(t, slowPolling)
		briskCalls.Store(0)
		const fixed = `{"strategy":"unless_stopped","backoff":{"kind":"fixed","base_delay_secs":1}}`
		res, err := h.client.Insert(context.Background(), testArgs{Case: "rate limited", Outcomes: []outcome{httpRetryAfterBrisk, succeed}, After: 600 * time.Second},
			&river.InsertOpts{Metadata: []byte(`{"retry_strategy":` + fixed + `}`)})
		require.NoError(t, err)
		rows := h.waitEnded([]int64{res.Job.ID}, time.Hour)
		assert.Equal(t, rivertype.JobStateCompleted, rows[res.Job.ID].State)
		assert.Equal(t, int64(1), briskCalls.Load(), "the API was called once")
		runs := h.seen.of(res.Job.ID)
		require.Len(t, runs, 2)
		decided := h.decisions(res.Job.ID)
		require.NotEmpty(t, decided)
		near(t, h.precision, decided[0].FailedAt.Add(600*time.Second), runs[1].scheduled, "run again 600 s after the failure")
		assert.Contains(t, rows[res.Job.ID].Errors[0].Error, "deferred")
	})
}

// TestAServersWaitIsNeverCutInAJob: a job whose strategy caps at a second
// calls an API through a brisk transport (delays up to a second), and the
// API answers 429 with Retry-After. With 600 s, the API is called once and
// the job runs again 600 s after its failure, not a second later; with
// 7,200 s, past the job's limit (an hour for that strategy), the job is
// cancelled retry_after_too_long with 7,200 s in its error and its record;
// with Config.WaitLimit at 3 h, it is scheduled 7,200 s after its failure
// (read from River, rather than waited out: two hours of River's polling
// take a minute of the machine's time). On SQLite, under synctest's
// clock. Until the job's limit, each wait was cut to the strategy's
// second: four calls in 3 s.
func TestAServersWaitIsNeverCutInAJob(t *testing.T) {
	const capped = `{"strategy":"unless_stopped","backoff":{"kind":"exponential","base_delay_secs":1,"max_delay_secs":1}}`
	for _, c := range []struct {
		name  string
		asked time.Duration
		limit time.Duration
		fatal bool
		ran   bool // waited out: the job runs again
	}{
		{"600 s", 600 * time.Second, 0, false, true},
		{"7200 s beyond the default limit", 7200 * time.Second, 0, true, false},
		{"7200 s within a limit of 3 h", 7200 * time.Second, 3 * time.Hour, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newSQLiteHarnessWith(t, slowPolling, Config{WaitLimit: c.limit})
				briskCalls.Store(0)
				res, err := h.client.Insert(context.Background(), testArgs{Case: "rate limited", Outcomes: []outcome{httpRetryAfterBrisk, succeed}, After: c.asked},
					&river.InsertOpts{Metadata: []byte(`{"retry_strategy":` + capped + `}`)})
				require.NoError(t, err)
				id := res.Job.ID
				if !c.fatal && !c.ran {
					job := h.waitRetryable(id, time.Hour)
					assert.Equal(t, int64(1), briskCalls.Load(), "the API was called once")
					decided := h.decisions(id)
					require.NotEmpty(t, decided)
					near(t, h.precision, decided[0].FailedAt.Add(c.asked), job.ScheduledAt, "scheduled after the wait asked")
					return
				}
				rows := h.waitEnded([]int64{id}, 3*time.Hour)
				assert.Equal(t, int64(1), briskCalls.Load(), "the API was called once")
				decided := h.decisions(id)
				require.NotEmpty(t, decided)
				failedAt := decided[0].FailedAt
				near(t, h.precision, failedAt.Add(c.asked), decided[0].Decision.Due, "the decision's due time")
				if c.fatal {
					assert.Equal(t, rivertype.JobStateCancelled, rows[id].State)
					assert.Len(t, h.seen.of(id), 1, "never run again")
					assert.Contains(t, rows[id].Errors[0].Error, "giving up (retry_after_too_long, asked to wait 2h0m0s")
					reason, asked := givenUp(t, rows[id].Metadata)
					assert.Equal(t, "retry_after_too_long", reason)
					assert.Equal(t, 7200.0, asked)
					return
				}
				assert.Equal(t, rivertype.JobStateCompleted, rows[id].State)
				runs := h.seen.of(id)
				require.Len(t, runs, 2)
				near(t, h.precision, failedAt.Add(c.asked), runs[1].scheduled, "run again after the wait asked")
			})
		})
	}
}
