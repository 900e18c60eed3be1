package retrypolicy

import (
	"strconv"
	"testing"
	"time"
)

// Sinks keep results alive so that the compiler cannot drop the work. They
// take scalar fields: storing a whole Decision, which holds time.Location
// pointers, in a global would add a typed copy that callers do not pay.
var (
	actionSink   Action
	durationSink time.Duration
)

func benchBackoffs() []Backoff {
	return []Backoff{
		{Kind: Fixed, BaseDelay: 5 * time.Second},
		defaultBackoff(),
		{Kind: ExponentialWithJitter, BaseDelay: time.Second, Multiplier: 1.5, MaxDelay: 300 * time.Second},
	}
}

// BenchmarkDecide decides for a job whose history holds the given number of
// failures, one every 30 s (all within the hour up to 120 of them), whose
// last run lasted 20 s.
func BenchmarkDecide(b *testing.B) {
	for _, bo := range benchBackoffs() {
		for _, n := range []int{1, 8, 16, 64, 1024} {
			b.Run(bo.Kind.String()+"/failures="+strconv.Itoa(n), func(b *testing.B) {
				s := Strategy{Kind: UnlessStopped, Backoff: bo}
				failures := make([]time.Time, n)
				for i := range failures {
					failures[i] = t0.Add(-time.Duration(i) * 30 * time.Second)
				}
				now := t0.Add(time.Minute)
				b.ReportAllocs()
				for b.Loop() {
					d, err := Decide(s, failures, 20*time.Second, 42, now)
					if err != nil {
						b.Fatal(err)
					}
					actionSink, durationSink = d.Action, d.Credited+d.Jitter
				}
			})
		}
	}
}

// BenchmarkCredit computes the uptime credit with n failures in the window
// under the default backoff for a run of two hours: at n = 10 it pays every
// step below the cap back one by one; from n = 13 on it pays two steps at
// the cap and stops.
func BenchmarkCredit(b *testing.B) {
	benchCredit(b, func(int) time.Duration { return 2 * time.Hour })
}

// BenchmarkCreditPaysAll is BenchmarkCredit for an uptime that pays every
// step back, down to the first: the most the credit can do.
func BenchmarkCreditPaysAll(b *testing.B) {
	benchCredit(b, func(n int) time.Duration { return time.Duration(n+1) * time.Hour })
}

func benchCredit(b *testing.B, uptime func(n int) time.Duration) {
	for _, n := range []int{10, 1000, 1000000} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			bo := defaultBackoff()
			u := uptime(n)
			b.ReportAllocs()
			for b.Loop() {
				_, durationSink = bo.credit(n, u)
			}
		})
	}
}

// BenchmarkHistory records a failure every second into an unless_stopped
// history (one-hour window, so 3600 retained in the steady state), and
// decides on it. Both report the bytes the history holds per failure.
func BenchmarkHistory(b *testing.B) {
	fill := func(b *testing.B) (*History, time.Time) {
		h, err := NewHistory(Default())
		if err != nil {
			b.Fatal(err)
		}
		at := t0
		for range 2 * 3600 {
			at = at.Add(time.Second)
			if err := h.Record(at); err != nil {
				b.Fatal(err)
			}
		}
		return h, at
	}
	perFailure := func(b *testing.B, h *History) {
		held := 0
		for _, c := range h.chunks {
			held += cap(c.t)
		}
		b.ReportMetric(float64(held*8)/float64(h.n), "B/failure")
	}
	b.Run("record", func(b *testing.B) {
		h, at := fill(b)
		b.ReportAllocs()
		for b.Loop() {
			at = at.Add(time.Second)
			if err := h.Record(at); err != nil {
				b.Fatal(err)
			}
		}
		perFailure(b, h)
	})
	b.Run("decide", func(b *testing.B) {
		h, at := fill(b)
		b.ReportAllocs()
		for b.Loop() {
			d, err := h.Decide(20*time.Second, 42, at)
			if err != nil {
				b.Fatal(err)
			}
			actionSink = d.Action
		}
		perFailure(b, h)
	})
}
