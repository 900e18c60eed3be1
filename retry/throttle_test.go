package retry

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// throttleModel is a second model of the throttle's window, written from
// its doc rather than from its code: every event kept with its time, a
// time earlier than the latest taken as the latest, and at a query the
// events whose tenth of the window (counted from the first time given) is
// one of the last ten counted.
type throttleModel struct {
	k      float64
	width  time.Duration
	origin time.Time
	latest time.Time
	events []modelEvent
}

type modelEvent struct {
	at     time.Time
	accept bool
}

func (m *throttleModel) at(now time.Time) time.Time {
	if m.origin.IsZero() {
		m.origin, m.latest = now, now
	}
	if now.After(m.latest) {
		m.latest = now
	}
	return m.latest
}

func (m *throttleModel) add(now time.Time, accept bool) {
	m.events = append(m.events, modelEvent{m.at(now), accept})
}

func (m *throttleModel) rejection(now time.Time) float64 {
	now = m.at(now)
	current := now.Sub(m.origin) / m.width
	var requests, accepts float64
	for _, e := range m.events {
		if current-e.at.Sub(m.origin)/m.width >= 10 {
			continue
		}
		if e.accept {
			accepts++
		} else {
			requests++
		}
	}
	if requests < 5 {
		return 0
	}
	return max(0, (requests-m.k*accepts)/(requests+1))
}

// TestThrottleRejectsByTheFormulaOnItsWindow pins the throttle's rule: for
// any sequence of calls allowed or rejected, attempts sent, accepts and
// steps of the clock (backwards too), the probability of a rejection is
// max(0, (requests - k × accepts) / (requests + 1)) over the trailing ten
// tenths of its window, 0 under 5 requests, as a model that keeps every
// event computes it; and every decision, allowed or not, is a request.
func TestThrottleRejectsByTheFormulaOnItsWindow(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.Float64Range(1, 10).Draw(t, "k")
		window := time.Duration(rapid.Int64Range(int64(100*time.Millisecond), int64(10*time.Minute)).Draw(t, "window"))
		th, err := NewThrottle(k, window)
		require.NoError(t, err)
		th.Seed(rapid.Uint64().Draw(t, "seed"))
		m := &throttleModel{k: k, width: window / 10}
		now := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
		for range rapid.IntRange(1, 300).Draw(t, "steps") {
			switch rapid.IntRange(0, 3).Draw(t, "step") {
			case 0:
				want := m.rejection(now)
				if got := th.RejectionAt(now); !near(got, want) {
					t.Fatalf("rejection %v, the model's %v", got, want)
				}
				th.AllowAt(now)
				m.add(now, false)
			case 1:
				th.SentAt(now)
				m.add(now, false)
			case 2:
				th.AcceptAt(now)
				m.add(now, true)
			case 3:
				step := time.Duration(rapid.Int64Range(-int64(window), 2*int64(window)).Draw(t, "clock"))
				now = now.Add(step)
			}
			if got, want := th.RejectionAt(now), m.rejection(now); !near(got, want) {
				t.Fatalf("rejection %v, the model's %v", got, want)
			}
		}
	})
}

func near(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }

// TestThrottleTableOfFixedTimes steps one throttle through fixed times:
// nothing is rejected under 5 requests, whatever fails; then the formula;
// then requests age out of the window.
func TestThrottleTableOfFixedTimes(t *testing.T) {
	th, err := NewThrottle(2, time.Second)
	require.NoError(t, err)
	t0 := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	for range 4 {
		assert.True(t, th.AllowAt(t0), "under 5 requests nothing is rejected")
	}
	assert.Equal(t, 0.0, th.RejectionAt(t0), "4 requests, no accept")
	th.SentAt(t0.Add(100 * time.Millisecond))
	assert.InDelta(t, 5.0/6, th.RejectionAt(t0.Add(100*time.Millisecond)), 1e-12, "5 requests, no accept")
	th.AcceptAt(t0.Add(200 * time.Millisecond))
	th.AcceptAt(t0.Add(200 * time.Millisecond))
	assert.InDelta(t, 1.0/6, th.RejectionAt(t0.Add(200*time.Millisecond)), 1e-12, "5 requests, 2 accepts: (5-4)/6")
	th.AcceptAt(t0.Add(300 * time.Millisecond))
	assert.Equal(t, 0.0, th.RejectionAt(t0.Add(300*time.Millisecond)), "3 accepts of 5 requests")
	// At t0+1s the slot of t0 has left the window: 1 request (the one at
	// 100 ms) remains, under the floor.
	assert.Equal(t, 0.0, th.RejectionAt(t0.Add(time.Second)))
	// A clock behind the latest counts as the latest: the window does not
	// come back.
	assert.Equal(t, 0.0, th.RejectionAt(t0))
}

// TestThrottleRejectsAtItsRate: over many decisions the share rejected is
// the probability the formula gives. One accept for every two requests at
// k = 2 keeps requests - 2 × accepts where it is (400,000), so that over
// 20,000 decisions p falls only from 0.400 to 0.392; with no accept at all
// p is n/(n+1): nearly every call is rejected, never every one.
func TestThrottleRejectsAtItsRate(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	th, err := NewThrottle(2, time.Minute)
	require.NoError(t, err)
	th.Seed(1)
	for range 1_000_000 {
		th.SentAt(t0)
	}
	for range 300_000 {
		th.AcceptAt(t0)
	}
	require.InDelta(t, 400_000.0/1_000_001, th.RejectionAt(t0), 1e-12)
	const n = 20_000
	rejected := 0
	for i := range n {
		if !th.AllowAt(t0) {
			rejected++
		}
		if i%2 == 1 {
			th.AcceptAt(t0)
		}
	}
	// The mean of p over the run is 0.396: 7,920 expected, a standard
	// deviation of 69; the bounds are 4.5 of them either side.
	assert.InDelta(t, 7920, rejected, 310, "rejected %d of %d", rejected, n)

	idle, err := NewThrottle(2, time.Minute)
	require.NoError(t, err)
	idle.Seed(2)
	for range 1000 {
		idle.SentAt(t0)
	}
	require.InDelta(t, 1000.0/1001, idle.RejectionAt(t0), 1e-12)
	rejected = 0
	for range n {
		if !idle.AllowAt(t0) {
			rejected++
		}
	}
	assert.Greater(t, rejected, n*99/100, "no accept: nearly every call rejected")
	assert.Less(t, rejected, n, "never every one")
}

func TestThrottleSeedRepeatsItsDecisions(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	run := func() []bool {
		th, err := NewThrottle(2, time.Minute)
		require.NoError(t, err)
		th.Seed(42)
		var got []bool
		for i := range 200 {
			got = append(got, th.AllowAt(t0))
			if i%5 == 0 {
				th.AcceptAt(t0)
			}
		}
		return got
	}
	assert.Equal(t, run(), run())
}

func TestThrottleRefusesBadSettings(t *testing.T) {
	for _, tc := range []struct {
		k      float64
		window time.Duration
		want   string
	}{
		{0.5, time.Second, "retrypolicy: NewThrottle: k must be between 1 and 10, got 0.5"},
		{11, time.Second, "retrypolicy: NewThrottle: k must be between 1 and 10, got 11"},
		{nan(), time.Second, "retrypolicy: NewThrottle: k must be between 1 and 10, got NaN"},
		{2, 99 * time.Millisecond, "retrypolicy: NewThrottle: window must be between 100ms and 10m, got 99ms"},
		{2, 11 * time.Minute, "retrypolicy: NewThrottle: window must be between 100ms and 10m, got 11m0s"},
	} {
		th, err := NewThrottle(tc.k, tc.window)
		assert.Nil(t, th)
		assert.EqualError(t, err, tc.want)
	}
}

func nan() float64 { var z float64; return z / z }

// BenchmarkThrottle measures a decision (AllowAt with a time given, and
// Allow, which reads the clock) beside one time.Now and the windowed
// budget's grant. The target: a decision at most one time.Now plus 20 ns,
// with 0 allocations.
func BenchmarkThrottle(b *testing.B) {
	th, err := NewThrottle(2, time.Minute)
	require.NoError(b, err)
	b.Run("part=time.Now", func(b *testing.B) {
		b.ReportAllocs()
		var n int64
		for b.Loop() {
			n += time.Now().UnixNano()
		}
		sink.Add(n)
	})
	b.Run("part=decision-at", func(b *testing.B) {
		b.ReportAllocs()
		now := time.Now()
		var n int64
		for b.Loop() {
			if th.AllowAt(now) {
				n++
			}
		}
		sink.Add(n)
	})
	b.Run("part=decision", func(b *testing.B) {
		b.ReportAllocs()
		var n int64
		for b.Loop() {
			if th.Allow() {
				n++
			}
		}
		sink.Add(n)
	})
}
