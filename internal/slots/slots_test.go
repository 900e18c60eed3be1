package slots

import (
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"pgregory.net/rapid"
)

// event is a call or a granted retry at an offset, in the reference model.
type event struct {
	at    time.Duration
	retry bool
}

// model is the rule written plainly: every event kept, the window's counts
// made by looking at each.
type model struct {
	width   time.Duration
	percent uint64 // millionths of a percent, as New keeps it
	least   int64
	events  []event
	clock   time.Duration // the test's clock, which only moves on
	latest  time.Duration // the latest time the window was given
	origin  time.Duration // the first time the window was given
	begun   bool
}

// give notes that the window is given at: the first time is its origin,
// and a time earlier than the latest counts as the latest.
func (m *model) give(at time.Duration) {
	if !m.begun {
		m.origin, m.latest, m.begun = at, at, true
	}
	m.latest = max(m.latest, at)
}

// slot returns the slot of at, counted from the origin.
func (m *model) slot(at time.Duration) int64 { return int64((at - m.origin) / m.width) }

// counts returns the calls and retries whose slot is within N of the
// latest time's.
func (m *model) counts() (calls, retries int64) {
	cur := m.slot(m.latest)
	for _, e := range m.events {
		if m.slot(e.at) > cur-N {
			if e.retry {
				retries++
			} else {
				calls++
			}
		}
	}
	return calls, retries
}

// inSlot returns the retries granted in the latest time's slot.
func (m *model) inSlot() (retries int64) {
	cur := m.slot(m.latest)
	for _, e := range m.events {
		if e.retry && m.slot(e.at) == cur {
			retries++
		}
	}
	return retries
}

// pace is the most a slot grants: ceil(bound/10).
func (m *model) pace() int64 { return (m.bound() + N - 1) / N }

// bound is max(least, floor(percent/100 × calls)), in exact arithmetic.
func (m *model) bound() int64 {
	calls, _ := m.counts()
	q := new(big.Int).Mul(big.NewInt(calls), new(big.Int).SetUint64(m.percent))
	q.Quo(q, big.NewInt(100*microPercent))
	return max(m.least, q.Int64())
}

// TestGrantsAreTheReferenceModels pins the windowed budget's rule: for any
// sequence of calls, grant requests and advances of the clock, a retry is
// granted exactly when the retries granted in the window (the current slot
// and the 9 before it) are fewer than bound = max(minRetries,
// floor(percent/100 × calls in the window)) and those granted in the
// current slot fewer than ceil(bound/10) (the pace); Allowed is the lesser
// of what each leaves. Slots count from the first time the window is
// given, which need not be the first of the clock's times, and a time
// earlier than the latest given (a caller whose clock is behind) counts as
// the latest.
func TestGrantsAreTheReferenceModels(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // no monotonic reading: the window uses the times given
	rapid.Check(t, func(t *rapid.T) {
		percent := rapid.SampledFrom([]float64{0, 0.5, 10, 20, 33.333333, 50, 99.9, 100}).Draw(t, "percent")
		interval := time.Duration(rapid.Int64Range(int64(time.Millisecond), int64(time.Hour)).Draw(t, "interval"))
		least := rapid.IntRange(0, 5).Draw(t, "minRetries")
		w, err := New(percent, interval, least)
		if err != nil {
			t.Fatal(err)
		}
		m := &model{width: interval / N, percent: w.percent, least: int64(least)}
		for range rapid.IntRange(1, 300).Draw(t, "steps") {
			op := rapid.IntRange(0, 3).Draw(t, "op")
			at := m.clock
			if op < 3 && rapid.IntRange(0, 4).Draw(t, "late") == 0 { // behind, now and then
				at -= time.Duration(rapid.Int64Range(1, int64(2*interval)).Draw(t, "behind"))
			}
			if op < 3 {
				m.give(at)
			}
			now := base.Add(at)
			switch op {
			case 0:
				w.Call(now)
				m.events = append(m.events, event{at: m.latest})
			case 1:
				_, retries := m.counts()
				want := retries < m.bound() && m.inSlot() < m.pace()
				if got := w.Grant(now); got != want {
					t.Fatalf("at %v (latest %v): granted %v, the model %v (retries %d, in the slot %d, bound %d)", at, m.latest, got, want, retries, m.inSlot(), m.bound())
				}
				if want {
					m.events = append(m.events, event{at: m.latest, retry: true})
				}
			case 2:
				_, retries := m.counts()
				if got, want := w.Allowed(now), max(min(m.bound()-retries, m.pace()-m.inSlot()), 0); got != want {
					t.Fatalf("at %v (latest %v): allows %d, the model %d", at, m.latest, got, want)
				}
			case 3:
				// Advance by up to two windows, often within a slot or to a
				// slot's edge.
				step := rapid.OneOf(rapid.Int64Range(0, int64(2*interval)), rapid.SampledFrom([]int64{1, int64(m.width) - 1, int64(m.width)})).Draw(t, "advance")
				m.clock += time.Duration(step)
			}
		}
	})
}

// TestNewNamesTheArgument: each argument out of range is an error naming
// it and its range.
func TestNewNamesTheArgument(t *testing.T) {
	for _, c := range []struct {
		percent    float64
		interval   time.Duration
		minRetries int
		want       string
	}{
		{-1, time.Second, 0, "percent must be between 0 and 100, got -1"},
		{100.5, time.Second, 0, "percent must be between 0 and 100, got 100.5"},
		{nan(), time.Second, 0, "percent must be between 0 and 100, got NaN"},
		{20, time.Millisecond - 1, 0, "interval must be between 1ms and 1h, got 999.999µs"},
		{20, time.Hour + 1, 0, "interval must be between 1ms and 1h, got 1h0m0.000000001s"},
		{20, time.Second, -1, "minRetries must be between 0 and 1000000000, got -1"},
		{20, time.Second, 1e9 + 1, "minRetries must be between 0 and 1000000000, got 1000000001"},
	} {
		_, err := New(c.percent, c.interval, c.minRetries)
		assert.EqualError(t, err, c.want)
	}
	_, err := New(100, time.Hour, 1e9)
	assert.NoError(t, err)
}

func nan() float64 { z := 0.0; return z / z }
