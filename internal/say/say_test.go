package say

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                         "0s",
		500 * time.Millisecond:    "500ms",
		1500 * time.Microsecond:   "1.5ms",
		30 * time.Second:          "30s",
		2 * time.Minute:           "2m",
		90 * time.Minute:          "1h30m",
		time.Hour:                 "1h",
		time.Hour + time.Second:   "1h0m1s",
		126996 * time.Millisecond: "2m6.996s",
		126996*time.Millisecond + 400*time.Microsecond: "2m6.996s",
		47 * time.Hour: "47h",
		72 * time.Hour: "3d",
		60 * time.Hour: "2d12h",
		-time.Second:   "-1s",
	} {
		assert.Equal(t, want, Duration(d), "%d", d)
	}
}

// TestGoDurationReadsBack: GoDuration writes what time.ParseDuration reads
// as the same duration, to the millisecond past a second.
func TestGoDurationReadsBack(t *testing.T) {
	assert.Equal(t, "720h", GoDuration(30*24*time.Hour))
	rapid.Check(t, func(t *rapid.T) {
		d := time.Duration(rapid.Int64Range(-1<<62, 1<<62).Draw(t, "d"))
		back, err := time.ParseDuration(GoDuration(d))
		require.NoError(t, err)
		want := d
		if d >= time.Second {
			want = d.Round(time.Millisecond)
		}
		assert.Equal(t, want, back)
	})
}
