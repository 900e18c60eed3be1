// Package say writes the project's figures for people, one way each.
//
// It has one way to write a duration in a message, a table, a chart or a
// finding, and one way to write it as a flag or a query takes it back.
package say

import (
	"strconv"
	"strings"
	"time"
)

// Duration writes d for a person to read: to the millisecond past a
// second, in days past two, without zero units at the end: 500ms, 30s,
// 2m, 1h30m, 2m6.996s, 47h, 3d, 2d12h.
func Duration(d time.Duration) string {
	const day = 24 * time.Hour
	if d < 2*day {
		return GoDuration(d)
	}
	d = d.Round(time.Millisecond)
	days := strconv.FormatInt(int64(d/day), 10) + "d"
	if d%day == 0 {
		return days
	}
	return days + GoDuration(d%day)
}

// GoDuration writes d as time.ParseDuration, and so every duration flag
// and query parameter, reads it back: as Duration does, but in hours past
// a day (720h, not 30d).
func GoDuration(d time.Duration) string {
	if d >= time.Second {
		d = d.Round(time.Millisecond)
	}
	text := d.String()
	if d < time.Second {
		return text
	}
	if strings.HasSuffix(text, "m0s") {
		text = text[:len(text)-2]
	}
	if strings.HasSuffix(text, "h0m") {
		text = text[:len(text)-2]
	}
	return text
}
