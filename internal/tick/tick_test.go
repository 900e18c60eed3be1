package tick

import (
	"testing"
	"time"
)

// TestNext works the 5th section of docs/semantics.md's rule by hand: the first tick at or
// after due, strictly after the failure; none without a tick.
func TestNext(t *testing.T) {
	const m = time.Minute
	for _, c := range []struct {
		due, failure, tick, want time.Duration
	}{
		{due: 5 * time.Second, failure: 0, tick: 0, want: 5 * time.Second},   // no tick: when due
		{due: 0, failure: 0, tick: 0, want: 0},                               // in-process: at once
		{due: 0, failure: 0, tick: m, want: m},                               // a zero delay waits a tick
		{due: 59 * time.Second, failure: 0, tick: m, want: m},                // just below a tick
		{due: m, failure: 0, tick: m, want: m},                               // on a tick
		{due: 61 * time.Second, failure: 0, tick: m, want: 2 * m},            // just above
		{due: m + 1, failure: m, tick: m, want: 2 * m},                       // failure on a tick
		{due: 30 * time.Second, failure: 20 * time.Second, tick: m, want: m}, // a run with uptime
		{due: longest - 5, failure: 0, tick: m, want: longest},               // saturates
		{due: longest, failure: longest, tick: m, want: longest},
	} {
		if got := Next(c.due, c.failure, c.tick); got != c.want {
			t.Errorf("Next(%v, %v, %v) = %v, want %v", c.due, c.failure, c.tick, got, c.want)
		}
	}
}

func TestCheck(t *testing.T) {
	for _, d := range []time.Duration{0, time.Nanosecond, time.Minute, Max} {
		if err := Check(d); err != nil {
			t.Errorf("Check(%v) = %v, want nil", d, err)
		}
	}
	for d, want := range map[time.Duration]string{
		-1:      "must be from 0 to 24h, got -1ns",
		Max + 1: "must be from 0 to 24h, got 24h0m0.000000001s",
	} {
		if err := Check(d); err == nil || err.Error() != want {
			t.Errorf("Check(%v) = %v, want %q", d, err, want)
		}
	}
}
