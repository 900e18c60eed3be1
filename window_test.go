package retrypolicy

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestCountWindow(t *testing.T) {
	tests := []struct {
		name     string
		failures []time.Time
		window   time.Duration
		wantLast time.Time
		wantN    int
	}{
		{"empty", nil, time.Hour, time.Time{}, 0},
		{"one", failuresAt(0), time.Hour, t0, 1},
		{"all inside", failuresAt(-3599, -10, 0), time.Hour, t0, 3},
		{"edge counts", failuresAt(-3600, 0), time.Hour, t0, 2},
		{"a nanosecond past the edge does not", []time.Time{t0.Add(-time.Hour - 1), t0}, time.Hour, t0, 1},
		{"unsorted", failuresAt(0, -7200, -30, -4000, -1), time.Hour, t0, 3},
		{"newest last in the slice", failuresAt(-30, -1, 0), time.Hour, t0, 3},
		{"duplicates count twice", failuresAt(0, 0, -5, -5), time.Hour, t0, 4},
		{"one-second window", failuresAt(-2, -1, 0), time.Second, t0, 2},
		{"the window ends at the newest failure, not at now", failuresAt(-100, -90), 15 * time.Second, t0.Add(-90 * time.Second), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			last, n := CountWindow(tt.failures, tt.window)
			assert.True(t, last.Equal(tt.wantLast), "last %v, want %v", last, tt.wantLast)
			assert.Equal(t, tt.wantN, n)
		})
	}
}

func TestCountWindowComparesInstantsAcrossLocations(t *testing.T) {
	tokyo := time.FixedZone("JST", 9*3600)
	failures := []time.Time{t0.In(tokyo), t0.Add(-time.Minute), t0.Add(-2 * time.Hour).In(tokyo)}
	last, n := CountWindow(failures, time.Hour)
	assert.True(t, last.Equal(t0))
	assert.Equal(t, 2, n)
}

func TestCountWindowLeavesInputAlone(t *testing.T) {
	failures := failuresAt(0, -7200, -30)
	want := append([]time.Time(nil), failures...)
	CountWindow(failures, time.Hour)
	assert.Equal(t, want, failures)
}

func TestHistoryKeepsWhatDecisionsNeed(t *testing.T) {
	h, err := NewHistory(bounded(3, time.Hour))
	require.NoError(t, err)
	for _, f := range failuresAt(-7200, -100, -50, -3, 0, -20) {
		require.NoError(t, h.Record(f))
	}
	last, n := h.Window()
	assert.True(t, last.Equal(t0))
	assert.Equal(t, 3, n, "bounded keeps max_attempts")
	assert.Equal(t, 3, h.Len())

	u, err := NewHistory(Default())
	require.NoError(t, err)
	for _, f := range failuresAt(-5000, -3000, -10, 0) {
		require.NoError(t, u.Record(f))
	}
	assert.Equal(t, 3, u.Len(), "the failure out of the hour is gone")
	require.NoError(t, u.Record(t0.Add(-4000*time.Second)))
	assert.Equal(t, 3, u.Len(), "a late failure older than the window is not kept")
	require.NoError(t, u.Record(t0.Add(3590*time.Second)))
	last, n = u.Window()
	assert.True(t, last.Equal(t0.Add(3590*time.Second)))
	assert.Equal(t, 3, n, "the newest moved: -3000 left the window")
}

func TestHistoryRejectsTimesItCannotHold(t *testing.T) {
	h, err := NewHistory(Default())
	require.NoError(t, err)
	assert.ErrorIs(t, h.Record(time.Time{}), ErrTimeOutOfRange)
	assert.ErrorIs(t, h.Record(time.Date(2262, 4, 12, 0, 0, 0, 0, time.UTC)), ErrTimeOutOfRange)
	assert.Equal(t, 0, h.Len(), "a rejected failure changes nothing")
	require.NoError(t, h.Record(time.Unix(0, math.MaxInt64)))
	require.NoError(t, h.Record(time.Unix(0, math.MaxInt64-int64(time.Hour))))
	assert.Equal(t, 2, h.Len())
	_, err = h.Decide(0, 0, t0)
	assert.NoError(t, err)

	_, err = NewHistory(Strategy{})
	assert.ErrorIs(t, err, ErrInvalid)
	empty, err := NewHistory(Default())
	require.NoError(t, err)
	_, err = empty.Decide(0, 0, t0)
	assert.ErrorIs(t, err, ErrNoFailures)
	last, n := empty.Window()
	assert.True(t, last.IsZero())
	assert.Equal(t, 0, n)
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
// decision needs: for failures recorded in any order, its decision is the one
// Decide makes on every failure, and it retains no more than the window (and
// max_attempts for bounded) holds.
func TestHistoryDecidesAsTheFullHistory(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genStrategy(t)
		if s.Kind == Bounded {
			s.MaxAttempts = rapid.IntRange(1, 40).Draw(t, "max_attempts small")
		}
		h, err := NewHistory(s)
		require.NoError(t, err)
		var all []time.Time
		steps := rapid.IntRange(1, 60).Draw(t, "failures")
		for i := range steps {
			f := t0.Add(time.Duration(rapid.Int64Range(-int64(MaxWindow), int64(MaxWindow)).Draw(t, "at_"+strconv.Itoa(i))))
			if rapid.Bool().Draw(t, "repeat") && len(all) > 0 {
				f = all[rapid.IntRange(0, len(all)-1).Draw(t, "which")]
			}
			all = append(all, f)
			require.NoError(t, h.Record(f))
		}
		uptime := genUptime(t, "uptime")
		seed := rapid.Uint64().Draw(t, "seed")
		now := t0.Add(time.Duration(rapid.Int64Range(-int64(MaxWindow), int64(MaxWindow)).Draw(t, "now")))
		want, err := Decide(s, Input{Failures: all, Uptime: uptime, JitterSeed: seed}, now)
		require.NoError(t, err)
		got, err := h.Decide(uptime, seed, now)
		require.NoError(t, err)
		if s.Kind == Bounded {
			want.Failures = min(want.Failures, s.MaxAttempts)
		}
		if !got.Last.Equal(want.Last) || !got.Due.Equal(want.Due) {
			t.Fatalf("history decides %+v, the full history %+v", got, want)
		}
		got.Last, got.Due, want.Last, want.Due = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if got != want {
			t.Fatalf("history decides %+v, the full history %+v", got, want)
		}
		if _, n := CountWindow(all, s.window()); h.Len() > n {
			t.Fatalf("history retains %d failures, the window holds %d", h.Len(), n)
		}
	})
}

// TestInstantOrdersAsBefore pins that the wall-clock instant order the
// library uses is Before's order for times without monotonic readings, in
// any location.
func TestInstantOrdersAsBefore(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		at := func(label string) time.Time {
			sec := rapid.OneOf(rapid.Int64Range(-1e11, 1e11), rapid.Int64Range(-62135596800, 4e9)).Draw(t, label+"_sec")
			tm := time.Unix(sec, rapid.Int64Range(0, 999999999).Draw(t, label+"_nsec"))
			return tm.In(time.FixedZone("z", rapid.IntRange(-50000, 50000).Draw(t, label+"_zone")))
		}
		a, b := at("a"), at("b")
		if rapid.Bool().Draw(t, "close") {
			b = a.Add(time.Duration(rapid.Int64Range(-2, 2).Draw(t, "delta")))
		}
		if got, want := instantOf(a).before(instantOf(b)), a.Before(b); got != want {
			t.Fatalf("%v before %v: instant says %v, Before says %v", a, b, got, want)
		}
	})
}

func TestMonotonicReadingsDoNotChangeTheCount(t *testing.T) {
	// In-process times carry monotonic readings; stored ones do not. Both
	// must count the same.
	base := time.Now()
	inProcess := []time.Time{base, base.Add(-10 * time.Second), base.Add(-2 * time.Hour)}
	stored := make([]time.Time, len(inProcess))
	for i, f := range inProcess {
		stored[i] = f.Round(0) // strips the monotonic reading
	}
	l1, n1 := CountWindow(inProcess, time.Hour)
	l2, n2 := CountWindow(stored, time.Hour)
	assert.True(t, l1.Equal(l2))
	assert.Equal(t, 2, n1)
	assert.Equal(t, n1, n2)
}
