package retrypolicy

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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
		{"one", failuresAt(0), time.Hour, t0, 1},
		{"all inside", failuresAt(-3599, -10, 0), time.Hour, t0, 3},
		{"edge counts", failuresAt(-3600, 0), time.Hour, t0, 2},
		{"edge counts beside one outside", failuresAt(-3600, -7200, 0), time.Hour, t0, 2},
		{"a nanosecond past the edge does not", []time.Time{t0.Add(-time.Hour - 1), t0}, time.Hour, t0, 1},
		{"unsorted", failuresAt(0, -7200, -30, -4000, -1), time.Hour, t0, 3},
		{"newest last in the slice", failuresAt(-30, -1, 0), time.Hour, t0, 3},
		{"duplicates count twice", failuresAt(0, 0, -5, -5), time.Hour, t0, 4},
		{"one-second window", failuresAt(-2, -1, 0), time.Second, t0, 2},
		{"the window ends at the newest failure, not at now", failuresAt(-100, -90), 15 * time.Second, t0.Add(-90 * time.Second), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i, _, n := countWindow(tt.failures, tt.window)
			last := tt.failures[i]
			assert.True(t, last.Equal(tt.wantLast), "last %v, want %v", last, tt.wantLast)
			assert.Equal(t, tt.wantN, n)
		})
	}
}

func TestCountWindowComparesInstantsAcrossLocations(t *testing.T) {
	tokyo := time.FixedZone("JST", 9*3600)
	failures := []time.Time{t0.In(tokyo), t0.Add(-time.Minute), t0.Add(-2 * time.Hour).In(tokyo)}
	i, _, n := countWindow(failures, time.Hour)
	assert.True(t, failures[i].Equal(t0))
	assert.Equal(t, 2, n)
}

func TestCountWindowLeavesInputAlone(t *testing.T) {
	failures := failuresAt(0, -7200, -30)
	want := append([]time.Time(nil), failures...)
	countWindow(failures, time.Hour)
	assert.Equal(t, want, failures)
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
	i1, _, n1 := countWindow(inProcess, time.Hour)
	i2, _, n2 := countWindow(stored, time.Hour)
	assert.True(t, inProcess[i1].Equal(stored[i2]))
	assert.Equal(t, 2, n1)
	assert.Equal(t, n1, n2)
}

// TestCountWindowSameInEveryRange pins that the window is counted the same
// way for times anywhere in time.Time's range: the fast count on int64
// nanoseconds agrees with the count on instants, for histories in order,
// reversed or shuffled, with repeats, near the edges of its span and past
// them.
func TestCountWindowSameInEveryRange(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		center := rapid.SampledFrom([]int64{0, 1.7e9, 1<<33 - 10, -1<<33 + 10, 1<<33 + 3600, -1<<33 - 3600, 9e9, -9e10, 6e10}).Draw(t, "center")
		window := time.Duration(rapid.Int64Range(1, int64(maxWindow)).Draw(t, "window"))
		n := rapid.IntRange(1, 40).Draw(t, "n")
		failures := make([]time.Time, n)
		for i := range failures {
			failures[i] = time.Unix(center+rapid.Int64Range(-2*3600*24*7, 3600).Draw(t, "offset"), rapid.Int64Range(0, 999999999).Draw(t, "nsec"))
		}
		switch rapid.IntRange(0, 2).Draw(t, "order") {
		case 0:
			slices.SortFunc(failures, time.Time.Compare)
		case 1:
			slices.SortFunc(failures, func(a, b time.Time) int { return b.Compare(a) })
		}
		i, at, got := countWindow(failures, window)
		wantI, wantAt, want := countWindowAnywhen(failures, window)
		last, wantLast := failures[i], failures[wantI]
		if got != want || !last.Equal(wantLast) || at != wantAt || at != instantOf(last) {
			t.Fatalf("counted %d up to %v, on instants %d up to %v", got, last, want, wantLast)
		}
	})
}
