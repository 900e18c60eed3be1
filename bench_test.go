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
// last run lasted 20 s: with the strategy compiled once (a Policy), and
// checked and compiled on each call (Decide on a plain Strategy).
func BenchmarkDecide(b *testing.B) {
	for _, bo := range benchBackoffs() {
		for _, n := range []int{1, 8, 16, 64, 1024} {
			s := Strategy{Kind: UnlessStopped, Backoff: bo}
			p, err := Compile(s)
			if err != nil {
				b.Fatal(err)
			}
			failures := make([]time.Time, n)
			for i := range failures {
				failures[i] = t0.Add(-time.Duration(n-1-i) * 30 * time.Second)
			}
			now := t0.Add(time.Minute)
			for _, form := range []string{"policy", "plain"} {
				b.Run(bo.Kind.String()+"/failures="+strconv.Itoa(n)+"/"+form, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						var d Decision
						var err error
						if form == "policy" {
							d, err = p.Decide(failures, 20*time.Second, 42, now)
						} else {
							d, err = Decide(s, failures, 20*time.Second, 42, now)
						}
						if err != nil {
							b.Fatal(err)
						}
						actionSink, durationSink = d.Action, d.Delay+d.Jitter
					}
				})
			}
		}
	}
}

// BenchmarkCredit computes the uptime credit with n failures in the window
// for multipliers down to the closest to 1 there is, uncapped, for runs of
// 90 s and of 100 years.
func BenchmarkCredit(b *testing.B) {
	for _, m := range []float64{2, 1.5, 1.0001, 1.000001, 1 + 0x1p-52} {
		p, err := Compile(Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Exponential, BaseDelay: time.Second, Multiplier: m}})
		if err != nil {
			b.Fatal(err)
		}
		for _, u := range []time.Duration{90 * time.Second, ceiling} {
			for _, n := range []int64{10, 1000000} {
				b.Run("m="+strconv.FormatFloat(m, 'g', -1, 64)+"/uptime="+u.String()+"/n="+strconv.FormatInt(n, 10), func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						_, c := p.d.owe(n, u)
						durationSink = time.Duration(c)
					}
				})
			}
		}
	}
}

// BenchmarkHistory records a failure every second into an unless_stopped
// history (one-hour window, so 3600 retained in the steady state), and
// decides on it. Both report the bytes the history holds per failure.
func BenchmarkHistory(b *testing.B) {
	fill := func(b *testing.B) (*History, time.Time) {
		h := NewHistory(nil)
		at := t0
		for range 2 * 3600 {
			at = at.Add(time.Second)
			if err := h.Record(at, 20*time.Second); err != nil {
				b.Fatal(err)
			}
		}
		return h, at
	}
	perFailure := func(b *testing.B, h *History) {
		b.ReportMetric(float64(cap(h.t)*8)/float64(len(h.t)), "B/failure")
	}
	b.Run("record", func(b *testing.B) {
		h, at := fill(b)
		b.ReportAllocs()
		for b.Loop() {
			at = at.Add(time.Second)
			if err := h.Record(at, 20*time.Second); err != nil {
				b.Fatal(err)
			}
		}
		perFailure(b, h)
	})
	b.Run("decide", func(b *testing.B) {
		h, at := fill(b)
		b.ReportAllocs()
		for b.Loop() {
			d, err := h.Decide(42, at)
			if err != nil {
				b.Fatal(err)
			}
			actionSink = d.Action
		}
		perFailure(b, h)
	})
}

// BenchmarkWorstCredit is the credit's worst case: multiplier 1.000001
// without a cap, a million failures in the window, and a run of 100 years
// that pays every step, beside the same Policy deciding the same failures
// with no uptime (the price of reading them).
func BenchmarkWorstCredit(b *testing.B) {
	const n = 1000000
	p, err := Compile(Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Exponential, BaseDelay: time.Second, Multiplier: 1.000001}})
	if err != nil {
		b.Fatal(err)
	}
	failures := make([]time.Time, n)
	for i := range failures {
		failures[i] = t0.Add(-time.Duration(n-1-i) * time.Millisecond)
	}
	for _, u := range []struct {
		name string
		d    time.Duration
	}{{"0", 0}, {"100y", ceiling}} {
		b.Run("uptime="+u.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d, err := p.Decide(failures, u.d, 42, t0)
				if err != nil {
					b.Fatal(err)
				}
				durationSink = d.Delay
			}
		})
	}
}

// BenchmarkCompile compiles a descriptor's strategy beside parsing the
// descriptor, for multipliers from 2 down to the closest to 1 there is.
func BenchmarkCompile(b *testing.B) {
	for _, m := range []string{"2.0", "1.5", "1.0001", "1.000001", "1.0000000000000002", "0.5", "0.9999999999999999"} {
		doc := []byte(`{"strategy":"unless_stopped","backoff":{"kind":"exponential","base_delay_secs":1,"multiplier":` + m + `}}`)
		s, err := Parse(doc)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("m="+m+"/op=parse", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("m="+m+"/op=compile", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Compile(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
