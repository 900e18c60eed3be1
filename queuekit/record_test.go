package queuekit_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/queuekit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestARecordIsAHistorysEncoding: a record's binary form is what
// History.MarshalBinary writes for the same failures, so that the two
// stay one encoding, and DecodeFailures reads it back.
func TestARecordIsAHistorysEncoding(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p, err := retrypolicy.Compile(retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped})
		require.NoError(t, err)
		h := retrypolicy.NewHistory(p)
		var r queuekit.Record
		at := time.Unix(0, rapid.Int64Range(0, 1<<61).Draw(t, "first"))
		for range rapid.IntRange(0, 20).Draw(t, "failures") {
			require.NoError(t, h.Record(at, 0))
			r.Failures = append(r.Failures, at.UnixNano())
			at = at.Add(time.Duration(rapid.Int64Range(0, int64(time.Minute)).Draw(t, "gap")))
		}
		want, err := h.MarshalBinary()
		require.NoError(t, err)
		assert.Equal(t, want, r.AppendBinary(nil))
		got, err := queuekit.DecodeFailures(r.AppendBinary(nil), nil)
		require.NoError(t, err)
		assert.Equal(t, len(r.Failures), len(got))
		if len(got) > 0 {
			assert.Equal(t, r.Failures, got)
		}
	})
	_, err := queuekit.DecodeFailures([]byte{9}, nil)
	assert.ErrorContains(t, err, "queuekit: history: not a history encoding")
}

// TestARecordIsCompact: a record of 1,000 failures to the millisecond,
// ten minutes apart, takes at most 4.5 bytes a failure in JSON; three
// seconds apart, 3.
func TestARecordIsCompact(t *testing.T) {
	for _, tc := range []struct {
		gap  time.Duration
		most float64
	}{{10 * time.Minute, 4.5}, {3 * time.Second, 3}} {
		r := queuekit.Record{Seen: 1000}
		at := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
		for i := range 1000 {
			r.Failures = append(r.Failures, at.Add(time.Duration(i)*tc.gap+time.Duration(i%1000)*time.Millisecond).UnixNano())
		}
		perFailure := float64(len(r.AppendJSON(nil))) / 1000
		assert.LessOrEqual(t, perFailure, tc.most, "failures %v apart", tc.gap)
	}
}

// TestReadMetadataReadsTheDocumentedRecord: the record Record's doc
// shows reads to its three failures and back to the same text; a record
// holding more than the limit gives the newest; a history that is not the
// encoding is refused, and a record without "history" is no record.
func TestReadMetadataReadsTheDocumentedRecord(t *testing.T) {
	const doc = `{"seen_attempt":3,"history":"AwIDqNixzLNonBisGwA"}`
	m := queuekit.ReadMetadata([]byte(`{"retrypolicy":`+doc+`}`), "retry_strategy", "retrypolicy")
	require.True(t, m.HasRecord, m.Problem)
	assert.Equal(t, 3, m.Seen)
	got, more, ok := m.Failures(nil, math.MaxInt)
	require.True(t, ok)
	assert.False(t, more)
	var times []string
	for _, ns := range got {
		times = append(times, time.Unix(0, ns).UTC().Format(time.RFC3339Nano))
	}
	assert.Equal(t, []string{"2026-11-02T14:59:58.1Z", "2026-11-02T15:00:01.2Z", "2026-11-02T15:00:04.7Z"}, times)
	assert.Equal(t, doc, string(queuekit.Record{Seen: 3, Failures: got}.AppendJSON(nil)))

	newest, more, ok := m.Failures(make([]int64, 0, 4), 2)
	require.True(t, ok)
	assert.True(t, more)
	assert.Equal(t, got[1:], newest)

	for _, bad := range []string{`"history":"AgEA"`, `"history":"*"`, `"history":"AgAAAA"`, `"history":"AwA="`} {
		m := queuekit.ReadMetadata([]byte(`{"retrypolicy":{"seen_attempt":1,`+bad+`}}`), "retry_strategy", "retrypolicy")
		require.True(t, m.HasRecord, bad)
		_, _, ok := m.Failures(nil, 10)
		assert.False(t, ok, bad)
	}
	none := queuekit.ReadMetadata([]byte(`{"retrypolicy":{"seen_attempt":3,"failures":"8-zssum0BstD8gD"}}`), "retry_strategy", "retrypolicy")
	assert.False(t, none.HasRecord)
	assert.Contains(t, none.Problem, `"history": string}`)
}

// TestDecidingFromMetadataDoesNotAllocate: reading a job's strategy and
// record of 8 failures into a buffer of the caller's allocates nothing.
func TestDecidingFromMetadataDoesNotAllocate(t *testing.T) {
	r := queuekit.Record{Seen: 8}
	for i := range 8 {
		r.Failures = append(r.Failures, int64(i)*int64(time.Minute)+1_700_000_000_000_000_000)
	}
	meta := append(append([]byte(`{"retry_strategy":{"strategy":"none"},"retrypolicy":`), r.AppendJSON(nil)...), '}')
	var room [16]int64
	allocs := testing.AllocsPerRun(100, func() {
		m := queuekit.ReadMetadata(meta, "retry_strategy", "retrypolicy")
		if f, _, ok := m.Failures(room[:], 100); !ok || len(f) != 8 {
			t.Fatal("not read")
		}
	})
	assert.Zero(t, allocs)
}

// ExampleRecord_AppendJSON writes the record of three failures, as an
// adapter keeps it in a job's JSON metadata.
func ExampleRecord_AppendJSON() {
	var r queuekit.Record
	r.Seen = 3
	for _, at := range []string{"14:59:58.1", "15:00:01.2", "15:00:04.7"} {
		t, _ := time.Parse(time.RFC3339Nano, "2026-11-02T"+at+"Z")
		r.Failures = append(r.Failures, t.UnixNano())
	}
	fmt.Println(string(r.AppendJSON(nil)))
	// Output:
	// {"seen_attempt":3,"history":"AwIDqNixzLNonBisGwA"}
}

// TestDecideDoesNotAllocate: deciding on 8 failures converts them on the
// stack, and on 1,000 in a buffer the pool keeps: no allocation either way
// once warm.
func TestDecideDoesNotAllocate(t *testing.T) {
	pol, err := retrypolicy.Compile(retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped})
	require.NoError(t, err)
	for _, n := range []int{8, 1000} {
		if n > 32 && raceEnabled {
			continue // under the race detector sync.Pool drops what it is given at random
		}
		failures := make([]int64, n)
		for i := range failures {
			failures[i] = int64(i)*int64(time.Second) + 1_700_000_000_000_000_000
		}
		now := time.Unix(0, failures[n-1])
		allocs := testing.AllocsPerRun(100, func() {
			if d := queuekit.Decide(pol, failures, 0, 1, now); d.Action == 0 {
				t.Fatal("no decision")
			}
		})
		assert.Zero(t, allocs, "%d failures", n)
	}
}
