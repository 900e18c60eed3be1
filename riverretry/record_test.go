package riverretry

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestRecordReadsBackWhatItWrites: a record written into metadata, among
// other keys, reads back with the same failures, attempt, uptime and
// decision; encoding/json reads it as valid JSON too.
func TestRecordReadsBackWhatItWrites(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		base := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
		n := rapid.IntRange(0, 40).Draw(t, "failures")
		r := record{seen: rapid.IntRange(0, MaxAttempts).Draw(t, "seen"), uptime: time.Duration(rapid.Int64Range(0, 1<<62).Draw(t, "uptime"))}
		for i := range n {
			r.failures = append(r.failures, failure{attempt: i + 1, at: base.Add(time.Duration(rapid.Int64Range(-1e15, 1e15).Draw(t, "at")))})
		}
		if n > 0 {
			r.decision = retrypolicy.Decision{Action: retrypolicy.Wait, InWindow: n, Owed: time.Second, Delay: time.Second, Due: base}
		}
		text, err := r.MarshalJSON()
		require.NoError(t, err)
		require.True(t, json.Valid(text), "%s", text)
		meta := []byte(`{"a":[1,{"b":"}"}],"` + MetadataKey + `":` + string(text) + `,"` + MetadataStrategy + `":{"strategy":"none"},"z":null}`)
		strategy, rec, ok := readMetadata(meta, nil)
		require.True(t, ok, "%s", meta)
		assert.Equal(t, `{"strategy":"none"}`, string(strategy))
		assert.Equal(t, r.seen, rec.seen)
		assert.Equal(t, r.uptime, rec.uptime)
		require.Len(t, rec.failures, n)
		for i, f := range rec.failures {
			assert.Equal(t, r.failures[i].attempt, f.attempt)
			assert.True(t, f.at.Equal(r.failures[i].at), "%v != %v", f.at, r.failures[i].at)
		}
		if n > 0 {
			var d retrypolicy.Decision
			require.NoError(t, json.Unmarshal(rec.kept, &d))
			assert.True(t, d.Due.Equal(r.decision.Due))
			// Written back unchanged when no new decision replaces it.
			again, err := rec.MarshalJSON()
			require.NoError(t, err)
			assert.JSONEq(t, string(text), string(again))
		}
	})
}

// TestReadMetadata: what a job's metadata may hold.
func TestReadMetadata(t *testing.T) {
	for _, tc := range []struct {
		meta     string
		ok       bool
		strategy string
		failures int
	}{
		{``, true, "", 0},
		{`{}`, true, "", 0},
		{` { "retry_strategy" : null } `, true, "", 0},
		{`{"retry_strat\u0065gy":{"strategy":"none"}}`, true, `{"strategy":"none"}`, 0},
		{`{"retrypolicy":{"seen_attempt":2,"failures":[{"at":"2026-11-02T15:00:00Z","attempt":2}],"future_key":[1]}}`, true, "", 1},
		{`{"retrypolicy":{"failures":[{"attempt":2}]}}`, false, "", 0},
		{`{"retrypolicy":{"failures":[{"attempt":-2,"at":"2026-11-02T15:00:00Z"}]}}`, false, "", 0},
		{`{"retrypolicy":{"seen_attempt":1.5}}`, false, "", 0},
		{`{"retrypolicy":[]}`, false, "", 0},
		{`[]`, false, "", 0},
		{`{"a":1`, false, "", 0},
		{`{"a":1}x`, false, "", 0},
		{`{}x`, false, "", 0},
		{`{,}`, false, "", 0},
		{`{"a":1,}`, false, "", 0},
	} {
		strategy, rec, ok := readMetadata([]byte(tc.meta), nil)
		assert.Equal(t, tc.ok, ok, "%s", tc.meta)
		if tc.ok {
			assert.Equal(t, tc.strategy, string(strategy), "%s", tc.meta)
			assert.Len(t, rec.failures, tc.failures, "%s", tc.meta)
		}
	}
}

// TestSeedIsTheDecimalID: the jitter seed of a job is SeedFromString of
// its decimal id.
func TestSeedIsTheDecimalID(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		id := rapid.Int64().Draw(t, "id")
		assert.Equal(t, retrypolicy.SeedFromString(strconv.FormatInt(id, 10)), seedOf(id))
	})
}

// TestPendingDropsStaleEntries: decisions River never asks for are
// dropped once old, so that the map stays bounded.
func TestPendingDropsStaleEntries(t *testing.T) {
	var q pending
	t0 := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	for i := range maxPending {
		q.put(int64(i), 1, retrypolicy.Decision{}, t0)
	}
	q.put(-1, 1, retrypolicy.Decision{}, t0.Add(stalePending+time.Second))
	assert.Len(t, q.m, 1)
	_, ok := q.take(-1, 2)
	assert.False(t, ok, "a decision for another attempt is not this failure's")
	assert.Empty(t, q.m)
}

// TestNewNamesTheBadStrategy: an invalid strategy in Config is an error
// naming where it is.
func TestNewNamesTheBadStrategy(t *testing.T) {
	_, err := New(Config{Kinds: map[string]retrypolicy.Strategy{"email\n": {Kind: retrypolicy.Bounded}}})
	require.Error(t, err)
	assert.ErrorIs(t, err, retrypolicy.ErrInvalid)
	assert.Contains(t, err.Error(), `Config.Kinds["email\n"]`)
	_, err = New(Config{Default: retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped}})
	assert.ErrorContains(t, err, "Config.Default")
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
	fe := &FatalError{Decision: retrypolicy.Decision{Action: retrypolicy.Fatal, Reason: retrypolicy.AttemptsExhausted, InWindow: 5}, Err: run}
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
	p.pending.put(1, 1, retrypolicy.Decision{Action: retrypolicy.Wait, Due: now.Add(-time.Second)}, now)
	assert.True(t, p.NextRetry(job).Equal(now))
	p.pending.put(1, 1, retrypolicy.Decision{Action: retrypolicy.Wait, Due: now.Add(time.Second)}, now)
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
	r := record{seen: 1499}
	for i := range 1499 {
		r.failures = append(r.failures, failure{attempt: i + 1, at: now.Add(-time.Duration(1499-i) * time.Second)})
	}
	r.decision = retrypolicy.Decision{Action: retrypolicy.Wait, InWindow: 1499, Owed: time.Second, Delay: time.Second, Due: now}
	text, err := r.MarshalJSON()
	require.NoError(t, err)
	job := &rivertype.JobRow{ID: 7, Attempt: 1500, MaxAttempts: MaxAttempts,
		Metadata: []byte(`{"retry_strategy":{"strategy":"bounded","max_attempts":1500,"window_secs":604800},"retrypolicy":` + string(text) + `}`)}
	p, err := New(Config{})
	require.NoError(t, err)
	d, ok := p.decideUnseen(t.Context(), job, now, 0)
	require.True(t, ok)
	assert.Equal(t, 1500, d.InWindow)
	assert.Equal(t, retrypolicy.Fatal, d.Action)
}
