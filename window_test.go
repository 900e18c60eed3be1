package retrypolicy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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
