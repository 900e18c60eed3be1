package natsretry

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy/retry"
)

func TestHistoryRoundTrip(t *testing.T) {
	for _, h := range []history{
		{},
		{seen: 3, due: 1_790_000_000_123, wait: 1500, failures: []int64{1_790_000_000_000_000_000, 1_790_000_001_500_000_000}},
		{seen: 1 << 40, dead: true, reason: retry.NotRetryable, lastError: "disk full", failures: []int64{-5, 7}},
		{seen: 2, parkedID: "0123abcd", failures: []int64{9}},
	} {
		b := appendHistory(nil, h)
		got, err := readHistory(b, nil)
		require.NoError(t, err)
		if len(h.failures) == 0 {
			h.failures = got.failures // an empty slice either way
		}
		assert.Equal(t, h, got)
	}
}

// TestHistoryRefusesWhatItDidNotWrite: every cut of a history, a later
// version and unknown flags are errors, never a panic.
func TestHistoryRefusesWhatItDidNotWrite(t *testing.T) {
	full := appendHistory(nil, history{seen: 9, due: 1 << 41, dead: true, reason: retry.NotRetryable,
		lastError: "x", failures: []int64{1e18, 1e18 + 1e9}})
	for n := range len(full) {
		_, err := readHistory(full[:n], nil)
		assert.Error(t, err, "cut at %d of %d", n, len(full))
	}
	_, err := readHistory(append([]byte{3}, full[1:]...), nil)
	assert.Error(t, err, "version 3")
	_, err = readHistory(append([]byte{2, 4}, full[2:]...), nil)
	assert.Error(t, err, "an unknown flag")
	long := append([]byte{2, 1, 0, 0, 0, 3}, 0xff, 0xff, 0x03) // an error text longer than MaxErrorText
	_, err = readHistory(long, nil)
	assert.Error(t, err)
}

// TestHistoryReadsOnlyItsVersion: a history of any other version, the
// shorter layout of a version 1 that no release wrote included, is not a
// history.
func TestHistoryReadsOnlyItsVersion(t *testing.T) {
	v1 := []byte{1, 0, 3, 4} // seen 3, due 2 (zigzag), no wait
	v1 = append(v1, appendHistory(nil, history{})[5:]...)
	_, err := readHistory(v1, nil)
	assert.ErrorIs(t, err, errHistory)
}

func TestHistoryKey(t *testing.T) {
	at := time.Unix(1_700_000_000, 123)
	key := func(stream, consumer string, seq uint64) string {
		return historyKey(&jetstream.MsgMetadata{Stream: stream, Consumer: consumer, Sequence: jetstream.SequencePair{Stream: seq}, Timestamp: at})
	}
	assert.Equal(t, "JOBS.worker.42.1700000000000000123", key("JOBS", "worker", 42))
	assert.Equal(t, "a=2Eb.c=20d=C3=A9.7.1700000000000000123", key("a.b", "c dé", 7), "a dot, a space and é escaped")
}

func TestClip(t *testing.T) {
	assert.Equal(t, "short", clip("short"))
	long := strings.Repeat("é", MaxErrorText)
	got := clip(long)
	assert.LessOrEqual(t, len(got), MaxErrorText)
	assert.True(t, strings.HasSuffix(got, "…"))
	assert.True(t, strings.HasPrefix(long, strings.TrimSuffix(got, "…")), "cut at a character's boundary")
}

func TestSubjectMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, subject string
		want             bool
	}{
		{"jobs.>", "jobs.a", true}, {"jobs.>", "jobs.a.b", true}, {"jobs.>", "jobs", false},
		{"jobs.*", "jobs.a", true}, {"jobs.*", "jobs.a.b", false}, {"jobs.a", "jobs.a", true},
		{"jobs.a", "jobs.b", false}, {"*.a", "x.a", true}, {">", "anything.at.all", true},
		{"jobs.*.c", "jobs.b.c", true}, {"jobs.*.c", "jobs.b.d", false}, {"jobs", "jobs.a", false},
	} {
		assert.Equal(t, c.want, subjectMatches(c.pattern, c.subject), "%s ~ %s", c.pattern, c.subject)
	}
	for _, s := range []string{"jobs.a", "a"} {
		assert.True(t, publishable(s), s)
	}
	for _, s := range []string{"", "jobs.*", "jobs.>", "jobs..a", ".a", "a.", "a b"} {
		assert.False(t, publishable(s), s)
	}
}

// TestAStoredReasonIsStable: a dead history keeps its reason as a byte,
// the reason's number, pinned here for each; a byte no reason has (one a
// later version stored) is an error naming it, never read as another
// reason.
func TestAStoredReasonIsStable(t *testing.T) {
	for stored, name := range map[byte]string{1: "strategy_none", 2: "attempts_exhausted", 3: "not_retryable", 4: "context_done",
		5: "past_deadline", 6: "budget_exhausted", 7: "retried_below", 8: "deferred", 9: "retry_after_too_long"} {
		var r retry.Reason
		require.NoError(t, r.UnmarshalText([]byte(name)))
		b := appendHistory(nil, history{dead: true, reason: r})
		// version, flags, seen, due, wait: then the reason's byte.
		assert.Equal(t, stored, b[5], name)
		back, err := readHistory(b, nil)
		require.NoError(t, err)
		assert.Equal(t, name, back.reason.String())
	}
	b := appendHistory(nil, history{dead: true, reason: retry.NotRetryable})
	b[5] = 42
	_, err := readHistory(b, nil)
	assert.EqualError(t, err, "its reason is unknown: 42")
}

// TestParkedRecordRoundTrip: a parked record reads back as written, and
// neither reader takes the other's bytes: a parked record is not a
// history, nor a history a parked record.
func TestParkedRecordRoundTrip(t *testing.T) {
	rec := parkedRecord{origin: "JOBS.worker.7.9", subject: "jobs.a", stream: "JOBS", seq: 7, stamp: -3, strategy: `{"strategy":"none"}`,
		copySeq: 42, state: history{due: 5, wait: 3, dead: true, reason: retry.AttemptsExhausted, failures: []int64{1, 2}}}
	b := appendParked(nil, rec)
	got, err := readParked(b, nil)
	require.NoError(t, err)
	assert.Equal(t, rec, got)
	_, err = readHistory(b, nil)
	assert.Error(t, err, "a parked record is not a history")
	_, err = readParked(appendHistory(nil, rec.state), nil)
	assert.ErrorIs(t, err, errParked, "nor a history a parked record")
	for n := range len(b) {
		_, err := readParked(b[:n], nil)
		assert.Error(t, err, "cut at %d of %d", n, len(b))
	}
}
