package retrypolicy

import (
	"encoding/json"
	"math"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// held returns the failures h holds, oldest first, and checks that they
// are in order.
func held(t require.TestingT, h *History) []int64 {
	out, _ := h.failures()
	require.True(t, slices.IsSorted(out), "failures out of order")
	require.Equal(t, len(out), h.Len())
	return out
}

func TestHistoryKeepsTheWindowOfTheNewest(t *testing.T) {
	h := newHistory(t, bounded(3, time.Hour))
	failures := failuresAt(-7200, -100, -50, -3, 0, -20)
	for _, f := range failures {
		require.NoError(t, h.Record(f, 0))
	}
	assert.Len(t, held(t, h), 5, "all but the failure two hours back")
	d, err := h.Decide(0, t0)
	require.NoError(t, err)
	want, err := Decide(bounded(3, time.Hour), failures, 0, 0, t0)
	require.NoError(t, err)
	assert.Equal(t, 5, d.InWindow, "the count is not capped at max_attempts")
	assert.Equal(t, want, d)

	u := newHistory(t, Default())
	for _, f := range failuresAt(-5000, -3000, -10, 0) {
		require.NoError(t, u.Record(f, 0))
	}
	assert.Len(t, held(t, u), 3, "the failure out of the hour is gone")
	require.NoError(t, u.Record(t0.Add(-4000*time.Second), 0))
	assert.Len(t, held(t, u), 3, "a late failure older than the window is not kept")
	require.NoError(t, u.Record(t0.Add(3590*time.Second), 0))
	assert.Len(t, held(t, u), 3, "the newest moved: -3000 left the window")
	d, err = u.Decide(0, t0)
	require.NoError(t, err)
	assert.True(t, d.Due.Equal(t0.Add(3590*time.Second+4*time.Second)), "3 failures owe 4 s after the newest")
}

func TestHistoryRejectsTimesItCannotHold(t *testing.T) {
	h := newHistory(t, Default())
	assert.ErrorIs(t, h.Record(time.Time{}, 0), errTimeOutOfRange)
	assert.ErrorIs(t, h.Record(time.Date(2262, 4, 12, 0, 0, 0, 0, time.UTC), 0), errTimeOutOfRange)
	assert.Empty(t, held(t, h), "a rejected failure changes nothing")
	require.NoError(t, h.Record(time.Unix(0, math.MaxInt64), 0))
	require.NoError(t, h.Record(time.Unix(0, math.MaxInt64-int64(time.Hour)), 0))
	assert.Len(t, held(t, h), 2)
	_, err := h.Decide(0, t0)
	assert.NoError(t, err)

	empty := newHistory(t, Default())
	_, err = empty.Decide(0, t0)
	assert.ErrorIs(t, err, errNoFailures)
}

func TestZeroHistoryIsUnderTheDefaultStrategy(t *testing.T) {
	var h History
	for _, f := range failuresAt(-5000, -3, -2, -1, 0) {
		require.NoError(t, h.Record(f, 0))
	}
	d, err := h.Decide(0, t0)
	require.NoError(t, err)
	want, err := Decide(Default(), failuresAt(-5000, -3, -2, -1, 0), 0, 0, t0)
	require.NoError(t, err)
	assert.Equal(t, want, d)
}

func TestUnixNanoEdges(t *testing.T) {
	ns, ok := unixNano(time.Unix(0, math.MaxInt64))
	assert.True(t, ok)
	assert.Equal(t, int64(math.MaxInt64), ns)
	_, ok = unixNano(time.Unix(0, math.MaxInt64).Add(1))
	assert.False(t, ok)
	ns, ok = unixNano(time.Unix(-9223372036, 0))
	assert.True(t, ok)
	assert.Equal(t, int64(-9223372036000000000), ns)
	_, ok = unixNano(time.Unix(-9223372037, 0))
	assert.False(t, ok)
}

// TestHistoryDecidesAsTheFullHistory pins that a History keeps everything a
// decision needs and nothing more: for failures recorded in any order, its
// decision is the one Decide makes on all of them, and it holds exactly the
// failures in the window of the newest.
func TestHistoryDecidesAsTheFullHistory(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genStrategy(t)
		if s.Kind == Bounded {
			s.MaxAttempts = rapid.IntRange(1, 40).Draw(t, "max_attempts small")
		}
		h := newHistory(t, s)
		var all []time.Time
		var uptime time.Duration // the uptime recorded last with the newest failure
		steps := rapid.IntRange(1, 60).Draw(t, "failures")
		for i := range steps {
			f := t0.Add(time.Duration(rapid.Int64Range(-int64(maxWindow), int64(maxWindow)).Draw(t, "at_"+strconv.Itoa(i))))
			if rapid.Bool().Draw(t, "repeat") && len(all) > 0 {
				f = all[rapid.IntRange(0, len(all)-1).Draw(t, "which")]
			}
			up := genUptime(t, "uptime_"+strconv.Itoa(i))
			if len(all) == 0 || !f.Before(slices.MaxFunc(all, time.Time.Compare)) {
				uptime = max(up, 0)
			}
			all = append(all, f)
			require.NoError(t, h.Record(f, up))
		}
		seed := rapid.Uint64().Draw(t, "seed")
		now := t0.Add(time.Duration(rapid.Int64Range(-int64(maxWindow), int64(maxWindow)).Draw(t, "now")))
		want, err := Decide(s, all, uptime, seed, now)
		require.NoError(t, err)
		got, err := h.Decide(seed, now)
		require.NoError(t, err)
		if !got.Due.Equal(want.Due) {
			t.Fatalf("history decides %+v, the full history %+v", got, want)
		}
		got.Due, want.Due = time.Time{}, time.Time{}
		if got != want {
			t.Fatalf("history decides %+v, the full history %+v", got, want)
		}
		// The window of the newest, counted here with time's own
		// comparisons rather than countWindow.
		newest := all[0]
		for _, f := range all {
			if f.After(newest) {
				newest = f
			}
		}
		n := 0
		for _, f := range all {
			if !f.Before(newest.Add(-s.window())) {
				n++
			}
		}
		if len(held(t, h)) != n {
			t.Fatalf("history holds %d failures, the window %d", len(held(t, h)), n)
		}
	})
}

// TestHistoryHoldsFailuresRecordedInAnyOrder records failures within an
// hour in a shuffled order, with repeats: the history holds them all,
// ascending.
func TestHistoryHoldsFailuresRecordedInAnyOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 3000).Draw(t, "n")
		want := make([]int64, n)
		for i := range want {
			want[i] = t0.UnixNano() + rapid.Int64Range(0, int64(time.Hour)).Draw(t, "at")
		}
		var h History
		for _, i := range rapid.Permutation(sequence(n)).Draw(t, "order") {
			require.NoError(t, h.Record(time.Unix(0, want[i]), 0))
		}
		slices.Sort(want)
		if got := held(t, &h); !slices.Equal(got, want) {
			t.Fatalf("held %d failures out of %d, or in another order", len(got), len(want))
		}
	})
}

func sequence(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// TestHistoriesShareOnePolicy pins the memory of histories that share a
// policy: with 8 failures each, at most 128 bytes of heap apiece.
func TestHistoriesShareOnePolicy(t *testing.T) {
	p, err := Compile(Default())
	require.NoError(t, err)
	const jobs = 10000
	hs := make([]*History, jobs)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range hs {
		hs[i] = NewHistory(p)
		for k := range 8 {
			require.NoError(t, hs[i].Record(t0.Add(time.Duration(k)*time.Second), 0))
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perHistory := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / jobs
	assert.LessOrEqual(t, perHistory, int64(128), "%d bytes a history", perHistory)
	assert.Positive(t, perHistory, "the histories must take some heap")
	runtime.KeepAlive(hs)
	for _, h := range hs {
		require.Equal(t, 8, h.Len())
	}
}

// TestHistoryRoundTrips pins saving and restoring: the binary and the JSON
// forms restore a history that holds the same failures and the same last
// uptime, and so decides the same.
func TestHistoryRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genStrategy(t)
		h := newHistory(t, s)
		for i := range rapid.IntRange(0, 3000).Draw(t, "failures") {
			at := rapid.Int64Range(-int64(maxWindow), int64(maxWindow)).Draw(t, "at_"+strconv.Itoa(i))
			up := time.Duration(rapid.Int64Range(0, math.MaxInt64).Draw(t, "up_"+strconv.Itoa(i)))
			require.NoError(t, h.Record(t0.Add(time.Duration(at)), up))
		}
		bin, err := h.MarshalBinary()
		require.NoError(t, err)
		text, err := json.Marshal(h)
		require.NoError(t, err)
		fromBin := newHistory(t, s)
		require.NoError(t, fromBin.UnmarshalBinary(bin))
		fromJSON := newHistory(t, s)
		require.NoError(t, json.Unmarshal(text, fromJSON))
		want := held(t, h)
		if !slices.Equal(held(t, fromBin), want) || !slices.Equal(held(t, fromJSON), want) {
			t.Fatalf("restored histories differ from the saved one")
		}
		if fromBin.up != h.up || fromJSON.up != h.up {
			t.Fatalf("last uptime %v restored as %v (binary) and %v (JSON)", h.up, fromBin.up, fromJSON.up)
		}
		again, err := fromBin.MarshalBinary()
		require.NoError(t, err)
		require.Equal(t, bin, again)
	})
}

func TestHistoryRefusesBadSavesAndChangesNothing(t *testing.T) {
	var h History
	require.NoError(t, h.Record(t0, 0))
	good, err := h.MarshalBinary()
	require.NoError(t, err)
	for name, data := range map[string][]byte{
		"empty":          nil,
		"other version":  append([]byte{9}, good[1:]...),
		"truncated":      good[:len(good)-1],
		"trailing":       append(slices.Clone(good), 0),
		"huge count":     {2, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"past int64":     {2, 2, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02, 0},
		"no uptime":      {2, 0},
		"uptime > int64": {2, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
	} {
		assert.Error(t, h.UnmarshalBinary(data), name)
	}
	for _, doc := range []string{`{}`, `["yesterday"]`, `["0001-01-01T00:00:00Z"]`, `[1]`,
		`{"failures":[],"last_uptime_secs":-1}`, `{"failures":[],"last_uptime_secs":1e-10}`,
		`{"failures":[],"last_uptim_secs":1}`, `{"failures":[],"last_uptime_secs":"1"}`, `{"failures":[],"last_uptime_secs":null}`, `{"failures":["2026-11-02T15:04:05Z"]}`, `{"failures":[],"last_uptime_secs":0} {}`, `["2026-11-02T15:04:05Z"]`,
		`{"failures":["0001-01-01T00:00:00Z"],"last_uptime_secs":0}`, `{"failures":[null],"last_uptime_secs":0}`, `{"failures":["yesterday"],"last_uptime_secs":0}`} {
		assert.Error(t, json.Unmarshal([]byte(doc), &h), doc)
		assert.Error(t, h.UnmarshalJSON([]byte(doc)), doc)
	}
	assert.Equal(t, []int64{t0.UnixNano()}, held(t, &h))
	require.NoError(t, json.Unmarshal([]byte(`null`), &h))
	assert.Equal(t, []int64{t0.UnixNano()}, held(t, &h), "null changes nothing")

	text, err := json.Marshal(&h)
	require.NoError(t, err)
	assert.Equal(t, `{"failures":["2026-11-02T15:04:05Z"],"last_uptime_secs":0}`, string(text))
}

// TestHistoryKeepsTheUptimeOfTheNewestFailure pins the uptime a History
// credits: the one recorded with the newest failure, not with a late older
// one; a negative uptime is kept as 0, and Reset forgets it.
func TestHistoryKeepsTheUptimeOfTheNewestFailure(t *testing.T) {
	h := newHistory(t, Default())
	assert.Zero(t, lastUptime(h), "empty")
	require.NoError(t, h.Record(t0, 10*time.Second))
	require.NoError(t, h.Record(t0.Add(-time.Minute), time.Hour))
	assert.Equal(t, 10*time.Second, lastUptime(h), "a failure older than the newest does not change it")
	require.NoError(t, h.Record(t0.Add(time.Second), 3*time.Second))
	assert.Equal(t, 3*time.Second, lastUptime(h))
	require.NoError(t, h.Record(t0.Add(2*time.Second), 0))
	assert.Zero(t, lastUptime(h), "the newest failure's uptime of 0 replaces it")
	require.NoError(t, h.Record(t0.Add(3*time.Second), -time.Second))
	assert.Zero(t, lastUptime(h), "a negative uptime is 0")

	h.Reset()
	assert.Zero(t, lastUptime(h), "Reset forgets it")
	require.NoError(t, json.Unmarshal([]byte(`{"failures":["2026-11-02T15:04:05Z"],"last_uptime_secs":1.5}`), h))
	assert.Equal(t, 1500*time.Millisecond, lastUptime(h))
	h.Reset()

	// Four failures owe 8 s; the README's worked example credits a 10 s run
	// down to 4 s, a 15 s run down to 1 s: Decide credits the newest run.
	for _, f := range failuresAt(-3, -2, -1) {
		require.NoError(t, h.Record(f, time.Hour))
	}
	require.NoError(t, h.Record(t0, 10*time.Second))
	d, err := h.Decide(0, t0)
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{8 * time.Second, 4 * time.Second}, []time.Duration{d.Owed, d.Delay})
	h.Reset()
	for _, f := range failuresAt(-3, -2, -1) {
		require.NoError(t, h.Record(f, 0))
	}
	require.NoError(t, h.Record(t0, 15*time.Second))
	d, err = h.Decide(0, t0)
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{8 * time.Second, time.Second}, []time.Duration{d.Owed, d.Delay})
}

// lastUptime returns the uptime h credits.
func lastUptime(h *History) time.Duration {
	_, up := h.failures()
	return up
}
