package riverretry

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/queuekit"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestRecordReadsBackWhatItWrites: a record written into metadata, among
// other keys nested deeper than any limit, reads back with the same
// attempt and failures, and the test's own decoder reads the same
// failures from the text.
func TestRecordReadsBackWhatItWrites(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 40).Draw(t, "failures")
		r := queuekit.Record{Seen: rapid.IntRange(0, MaxAttempts).Draw(t, "seen")}
		ns := rapid.Int64Range(0, 1<<62).Draw(t, "oldest")
		for range n {
			r.Failures = append(r.Failures, ns)
			ns += rapid.Int64Range(0, 1<<62-ns).Draw(t, "gap")
		}
		deep := strings.Repeat(`[{"x":`, 40) + `"}"` + strings.Repeat(`}]`, 40)
		meta := []byte(`{"a":` + deep + `,"` + MetadataKey + `":` + string(r.AppendJSON(nil)) + `,"` + MetadataStrategy + `":{"strategy":"none"},"z":null}`)
		m := readMetadata(meta)
		require.Empty(t, m.Problem, "%s", meta)
		assert.Equal(t, `{"strategy":"none"}`, string(m.Strategy))
		assert.Equal(t, r.Seen, m.Seen)
		got, more, ok := m.Failures(nil, math.MaxInt)
		require.True(t, ok)
		assert.False(t, more)
		assert.Equal(t, len(r.Failures), len(got))
		assert.Equal(t, r.Failures, got[:len(got):len(got)])
		seen, times, ok := recordOf(t, meta)
		require.True(t, ok)
		assert.Equal(t, r.Seen, seen)
		require.Len(t, times, n)
		for i, at := range times {
			assert.Equal(t, r.Failures[n-1-i], at.UnixNano())
		}
	})
}

// TestReadMetadata: what a job's metadata may hold.
func TestReadMetadata(t *testing.T) {
	deep := strings.Repeat(`{"k":`, 17) + `1` + strings.Repeat(`}`, 17)
	for _, tc := range []struct {
		meta      string
		problem   string // a part of the problem named, "" for none
		strategy  string
		hasRecord bool
	}{
		{``, "", "", false},
		{`{}`, "", "", false},
		{` { "retry_strategy" : null } `, "", "", false},
		{`{"retry_strat\u0065gy":{"strategy":"none"}}`, "", `{"strategy":"none"}`, false},
		{`{"user":` + deep + `,"retry_strategy":"bounded"}`, "", `"bounded"`, false},
		{`{"retrypolicy":{"seen_attempt":2,"failures":"AB"}}`, "is not {", "", false},
		{`{"retrypolicy":{"seen_attempt":2,"history":"AgA","future_key":[1]}}`, "", "", true},
		{`{"retrypolicy":null}`, "", "", false},
		{`{"retrypolicy":{"seen_attempt":1.0,"history":""}}`, "is not {", "", false},
		{`{"retrypolicy":{"seen_attempt":"3","history":""}}`, "is not {", "", false},
		{`{"retrypolicy":{"seen_attempt":3}}`, "is not {", "", false},
		{`{"retrypolicy":{"seen_attempt":3,"failures":[{"attempt":1,"at":"2026-11-02T15:00:00Z"}]}}`, "is not {", "", false},
		{`{"retrypolicy":[]}`, "is not {", "", false},
		{`{"retrypolicy":12}`, "is not {", "", false},
		{`[]`, "JSON object", "", false},
		{`{"a":1`, "JSON object", "", false},
		{`{,}`, "JSON object", "", false},
	} {
		m := readMetadata([]byte(tc.meta))
		if tc.problem == "" {
			assert.Empty(t, m.Problem, "%s", tc.meta)
		} else {
			assert.Contains(t, m.Problem, tc.problem, "%s", tc.meta)
		}
		assert.Equal(t, tc.strategy, string(m.Strategy), "%s", tc.meta)
		assert.Equal(t, tc.hasRecord, m.HasRecord, "%s", tc.meta)
	}
}

// TestCheckRecord: a record is checked against River's columns and the
// clock; what cannot be trusted is named, and instants a little ahead
// (another client's clock) count as now.
func TestCheckRecord(t *testing.T) {
	now := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	// enc is a record of seen with these failures, newest first.
	enc := func(seen int, times ...time.Time) queuekit.Metadata {
		r := queuekit.Record{Seen: seen}
		for i := len(times) - 1; i >= 0; i-- {
			r.Failures = append(r.Failures, times[i].UnixNano())
		}
		return readMetadata([]byte(`{"retrypolicy":` + string(r.AppendJSON(nil)) + `}`))
	}
	for _, tc := range []struct {
		name    string
		attempt int
		errors  int
		m       queuekit.Metadata
		limit   int
		problem string
		want    []time.Time // newest first
	}{
		{"sound", 3, 2, enc(2, now.Add(-time.Minute), now.Add(-2*time.Minute)), 10, "", []time.Time{now.Add(-time.Minute), now.Add(-2 * time.Minute)}},
		{"ahead within the skew", 3, 2, enc(2, now.Add(10*time.Minute), now.Add(-time.Minute)), 10, "", []time.Time{now, now.Add(-time.Minute)}},
		{"far in the future", 2, 1, enc(1, time.Date(2200, 12, 31, 23, 59, 59, 0, time.UTC)), 10, "after the allowed clock skew", nil},
		{"before the job", 2, 1, enc(1, now.Add(-48*time.Hour)), 10, "before the job was created", nil},
		{"seen beyond the job", 3, 2, enc(7, now), 10, "has seen attempt 7", nil},
		{"more failures than attempts", 3, 2, enc(2, now, now, now), 10, "more failures than the job's 2 attempts", nil},
		{"more failures than errors", 5, 1, enc(4, now, now), 10, "and 1 errors", nil},
		{"cut to the strategy's bound", 5, 4, enc(4, now, now.Add(-time.Second), now.Add(-2*time.Second)), 2, "", []time.Time{now, now.Add(-time.Second)}},
		{"not base64url", 2, 1, readMetadata([]byte(`{"retrypolicy":{"seen_attempt":1,"history":"*"}}`)), 10, "not a list of failure times", nil},
		{"not a history", 2, 1, readMetadata([]byte(`{"retrypolicy":{"seen_attempt":1,"history":"AgEA"}}`)), 10, "not a list of failure times", nil},
	} {
		job := &rivertype.JobRow{ID: 1, Attempt: tc.attempt, CreatedAt: now.Add(-24 * time.Hour), Errors: make([]rivertype.AttemptError, tc.errors)}
		rec, problem := checkRecord(reading{job: job, now: now}, tc.m, tc.limit)
		if tc.problem == "" {
			assert.Empty(t, problem, tc.name)
		} else {
			assert.Contains(t, problem, tc.problem, tc.name)
		}
		var got []time.Time
		for i := len(rec.Failures) - 1; i >= 0; i-- {
			got = append(got, time.Unix(0, rec.Failures[i]).UTC())
		}
		assert.Equal(t, tc.want, got, tc.name)
	}
}

// TestSeedIsTheDecimalID: the jitter seed of a job is SeedFromString of
// its decimal id.
func TestSeedIsTheDecimalID(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		id := rapid.Int64().Draw(t, "id")
		assert.Equal(t, retrypolicy.SeedFromString(strconv.FormatInt(id, 10)), queuekit.Seed(id))
	})
}

// TestPendingDropsStaleEntries: decisions River never asks for are
// dropped once old, so that the table and its overflow stay bounded.
func TestPendingDropsStaleEntries(t *testing.T) {
	var q pending
	t0 := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	// Every slot taken, then maxPending more jobs on those slots: all
	// live, so all kept.
	for i := range pendingSlots + maxPending {
		q.put(&rivertype.JobRow{ID: int64(i), Attempt: 1}, retrypolicy.Decision{}, t0)
	}
	assert.Len(t, q.more, maxPending)
	later := t0.Add(stalePending + time.Second)
	q.put(&rivertype.JobRow{ID: -1, Attempt: 1}, retrypolicy.Decision{}, later) // a slot of a stale entry
	q.put(&rivertype.JobRow{ID: -1 - pendingSlots, Attempt: 1}, retrypolicy.Decision{}, later)
	assert.Len(t, q.more, 1, "the overflow past its bound drops its stale entries")
	_, _, ok := q.take(-1, 2)
	assert.False(t, ok, "a decision for another attempt is not this failure's")
	_, ok = q.peek(-1, 1)
	assert.False(t, ok, "take dropped it")
	_, _, ok = q.take(-1-pendingSlots, 1)
	assert.True(t, ok)
	assert.Empty(t, q.more)
}

// TestPendingLosesNoDecision: whatever ids and attempts are put, taken
// and dropped, and in any order, pending answers as a map of live
// entries does.
func TestPendingLosesNoDecision(t *testing.T) {
	t0 := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	rapid.Check(t, func(t *rapid.T) {
		var q pending
		model := map[int64]int{} // id: attempt
		// Ids on a few slots, so that they collide.
		id := rapid.Custom(func(t *rapid.T) int64 {
			return rapid.Int64Range(-2, 2).Draw(t, "slot")*pendingSlots + rapid.Int64Range(0, 2).Draw(t, "offset")
		})
		for range rapid.IntRange(1, 60).Draw(t, "steps") {
			k, attempt := id.Draw(t, "id"), rapid.IntRange(1, 3).Draw(t, "attempt")
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0, 1:
				q.put(&rivertype.JobRow{ID: k, Attempt: attempt}, retrypolicy.Decision{Due: t0.Add(time.Duration(k))}, t0)
				model[k] = attempt
			case 2:
				_, due, ok := q.take(k, attempt)
				want, had := model[k]
				require.Equal(t, had && want == attempt, ok, "take(%d, %d)", k, attempt)
				if ok {
					require.True(t, due.Equal(t0.Add(time.Duration(k))), "the entry is job %d's", k)
				}
				delete(model, k)
			case 3:
				q.drop(k)
				delete(model, k)
			}
			for k, attempt := range model {
				_, ok := q.peek(k, attempt)
				require.True(t, ok, "job %d's decision is kept", k)
			}
		}
	})
}

// TestNewNamesTheBadStrategy: an invalid strategy in Config is an error
// naming where it is.
func TestNewNamesTheBadStrategy(t *testing.T) {
	_, err := New(Config{Kinds: map[string]retrypolicy.Strategy{"email\n": {Kind: retrypolicy.Bounded}}})
	require.Error(t, err)
	assert.ErrorIs(t, err, retrypolicy.ErrInvalid)
	assert.Contains(t, err.Error(), `Config.Kinds["email\n"]`)
	_, err = New(Config{Default: retrypolicy.Strategy{Kind: 9}})
	assert.ErrorContains(t, err, "Config.Default")
}

// TestNewLogsTheTrapsOfItsStrategies: New logs each warning plan.Lint
// finds in a configured strategy once, naming the field, and nothing for
// the default strategy, whose finding is only an info.
func TestNewLogsTheTrapsOfItsStrategies(t *testing.T) {
	var logs bytes.Buffer
	neverFatal := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5, Window: time.Minute,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 30 * time.Second}}
	_, err := New(Config{
		Kinds:  map[string]retrypolicy.Strategy{"email": neverFatal, "report": {}},
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, 1, logs.String())
	var entry map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &entry))
	assert.Equal(t, "WARN", entry["level"])
	assert.Equal(t, "never-fatal", entry["code"])
	assert.Contains(t, entry["msg"], `Config.Kinds["email"]: bounded never gives up`)
	assert.Contains(t, entry["msg"], "short of MaxAttempts 5", "a strategy built in Go is spoken of in Go's names")
	assert.Contains(t, entry["fix"], "(Window: 120 * time.Second)")
	assert.NotContains(t, entry["fix"], "_secs")
	assert.Equal(t, "none: linted with each retry when due, as River runs it", entry["tick"])
}

// TestInstall: it sets the retry policy, the error handler, the
// middleware and MaxAttempts, once; it refuses to replace another's.
func TestInstall(t *testing.T) {
	p, err := New(Config{})
	require.NoError(t, err)
	var cfg river.Config
	require.NoError(t, p.Install(&cfg))
	require.NoError(t, p.Install(&cfg), "installing twice is harmless")
	assert.Same(t, p, cfg.RetryPolicy)
	assert.Same(t, p, cfg.ErrorHandler)
	assert.Len(t, cfg.Middleware, 1)
	assert.Equal(t, MaxAttempts, cfg.MaxAttempts)

	cfg = river.Config{MaxAttempts: 7, RetryPolicy: &river.DefaultClientRetryPolicy{}}
	assert.Error(t, p.Install(&cfg))
	assert.Nil(t, cfg.ErrorHandler, "nothing changed")
	assert.Empty(t, cfg.Middleware)

	cfg = river.Config{MaxAttempts: 7, ErrorHandler: &recordingHandler{}}
	assert.ErrorContains(t, p.Install(&cfg), "riverretry.Config.ErrorHandler")
	assert.Nil(t, cfg.RetryPolicy)

	cfg = river.Config{MaxAttempts: 7}
	require.NoError(t, p.Install(&cfg))
	assert.Equal(t, 7, cfg.MaxAttempts, "a MaxAttempts of one's own is kept")
}

// TestErrors: the errors say what they are and unwrap.
func TestErrors(t *testing.T) {
	run := errors.New("upstream down")
	fe := &FatalError{Decision: retrypolicy.Decision{Action: retrypolicy.Fatal, Reason: retrypolicy.AttemptsExhausted, InWindow: 5}, Reason: retry.AttemptsExhausted, Err: run}
	assert.Equal(t, "riverretry: giving up (attempts_exhausted, 5 failure(s) in the window): upstream down", fe.Error())
	assert.ErrorIs(t, fe, run)

	_, err := retrypolicy.Parse([]byte(`{"strategy":"bounded","max_attempts":0,"extra":1}`))
	var ve *retrypolicy.ValidationError
	require.ErrorAs(t, err, &ve)
	se := &StrategyError{Kind: "x\x1b[31m", Err: ve}
	assert.Equal(t, `riverretry: job of kind "x\u001b[31m": invalid retry_strategy: retry_strategy.max_attempts: must be at least 1, got 0; retry_strategy.extra: unknown field`, se.Error())
	assert.ErrorIs(t, se, retrypolicy.ErrInvalid)
}

// TestNextRetryIsNeverBeforeNow: River falls back to its own schedule for
// a time before now; the policy answers now for a decision already due.
func TestNextRetryIsNeverBeforeNow(t *testing.T) {
	now := time.Date(2026, 11, 2, 15, 0, 10, 0, time.UTC)
	p, err := New(Config{Now: func() time.Time { return now }})
	require.NoError(t, err)
	job := &rivertype.JobRow{ID: 1, Attempt: 1, MaxAttempts: MaxAttempts, Metadata: []byte(`{}`)}
	p.pending.put(&rivertype.JobRow{ID: 1, Attempt: 1}, retrypolicy.Decision{Action: retrypolicy.Wait, Due: now.Add(-time.Second)}, now)
	assert.True(t, p.NextRetry(job).Equal(now))
	p.pending.put(&rivertype.JobRow{ID: 1, Attempt: 1}, retrypolicy.Decision{Action: retrypolicy.Wait, Due: now.Add(time.Second)}, now)
	assert.True(t, p.NextRetry(job).Equal(now.Add(time.Second)))
	// Without a decision (a rescue): decided now, as a first failure of the
	// default strategy, which owes 1 s.
	assert.True(t, p.NextRetry(job).Equal(now.Add(time.Second)))
}

// TestLongHistoriesCountWhole: a record holds every failure in the window,
// however many, so that a bounded strategy with a large max_attempts
// still gives up at it.
func TestLongHistoriesCountWhole(t *testing.T) {
	now := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	job := jobWithFailures(1499, now)
	job.Metadata = bytes.Replace(job.Metadata, []byte(benchStrategy), []byte(`{"strategy":"bounded","max_attempts":1500,"window_secs":604800}`), 1)
	p, err := New(Config{})
	require.NoError(t, err)
	d := p.decideUnseen(t.Context(), run{job: job, start: now}, now)
	assert.Equal(t, 1500, d.InWindow)
	assert.Equal(t, retrypolicy.Fatal, d.Action)
}

// TestBenchmarkJobDecides: the benchmarks' job is decided from its
// metadata as the library decides on its failures and the one being
// decided.
func TestBenchmarkJobDecides(t *testing.T) {
	now := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	job := jobWithFailures(8, now)
	p, err := New(Config{Now: func() time.Time { return now }})
	require.NoError(t, err)
	s, err := retrypolicy.Parse([]byte(benchStrategy))
	require.NoError(t, err)
	_, times, ok := recordOf(t, job.Metadata)
	require.True(t, ok)
	require.Len(t, times, 8)
	want, err := retrypolicy.Decide(s, append(times, now), 0, retrypolicy.SeedFromString(strconv.FormatInt(job.ID, 10)), now)
	require.NoError(t, err)
	assert.Equal(t, 9, want.InWindow)
	assert.True(t, p.NextRetry(job).Equal(want.Due), "NextRetry %v, the library's due %v", p.NextRetry(job), want.Due)
}
