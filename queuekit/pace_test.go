package queuekit

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeClock sleeps by moving forward.
type fakeClock struct{ now time.Time }

func (c *fakeClock) pacing(rate float64, jitter time.Duration) *Pacing {
	return &Pacing{Rate: rate, Jitter: jitter, Now: func() time.Time { return c.now },
		Sleep: func(_ context.Context, d time.Duration) error { c.now = c.now.Add(d); return nil }}
}

// TestPacingSpacesSends: 1,000 sends at 200 a second take 4.995 s (the
// first at once, each next 5 ms later); with a jitter of 20 ms, at most
// 20 ms more, and never less; a send that took longer than its slot does
// not push the next ones back.
func TestPacingSpacesSends(t *testing.T) {
	start := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	c := &fakeClock{now: start}
	p := c.pacing(200, 0)
	assert.Zero(t, p.SentRate(c.now), "before a send")
	for range 1000 {
		require.NoError(t, p.Wait(context.Background()))
	}
	assert.Equal(t, 4995*time.Millisecond, c.now.Sub(start))
	assert.InDelta(t, 200, p.SentRate(c.now), 1e-9, "999 sends after the first in 4.995 s")

	c.now = start
	p = c.pacing(200, 20*time.Millisecond)
	for range 1000 {
		require.NoError(t, p.Wait(context.Background()))
	}
	took := c.now.Sub(start)
	assert.GreaterOrEqual(t, took, 4995*time.Millisecond)
	assert.Less(t, took, 5015*time.Millisecond)

	c.now = start
	p = c.pacing(10, 0)
	require.NoError(t, p.Wait(context.Background()))
	c.now = c.now.Add(350 * time.Millisecond) // the first send took 3.5 slots
	for range 3 {
		require.NoError(t, p.Wait(context.Background()))
		assert.Equal(t, start.Add(350*time.Millisecond), c.now, "late: sent at once")
	}
	require.NoError(t, p.Wait(context.Background()))
	assert.Equal(t, start.Add(400*time.Millisecond), c.now, "the 5th at its own time")
}

// TestPacingChecksItsFields: each out of range names its field.
func TestPacingChecksItsFields(t *testing.T) {
	for _, c := range []struct {
		p    Pacing
		want string
	}{
		{Pacing{}, "x: Rate: must be at least one a day (1.16e-05 a second) and at most 100000 a second, got 0"},
		{Pacing{Rate: 100001}, "x: Rate: must be at least one a day (1.16e-05 a second) and at most 100000 a second, got 100001"},
		// An interval that overflows a time.Duration: refused, not sent at once.
		{Pacing{Rate: 1e-10}, "x: Rate: must be at least one a day (1.16e-05 a second) and at most 100000 a second, got 1e-10"},
		{Pacing{Rate: 1, Jitter: -1}, "x: Jitter: must be between 0 and an hour, got -1ns"},
	} {
		assert.EqualError(t, c.p.Check("x: "), c.want)
	}
	assert.NoError(t, (&Pacing{Rate: 0.5, Jitter: time.Second}).Check("x: "))
	// Built without Check, a Pacing out of range waits for nothing.
	assert.EqualError(t, (&Pacing{}).Wait(context.Background()), "queuekit: Pacing.Rate: must be at least one a day (1.16e-05 a second) and at most 100000 a second, got 0")
	// A day's interval, the longest, paced in full.
	c := &fakeClock{now: time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)}
	p := c.pacing(MinReplayRate, 0)
	for range 3 {
		require.NoError(t, p.Wait(context.Background()))
	}
	assert.Equal(t, time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC), c.now)
}

// TestPacingEndsWithItsContext: a wait under an ended context returns its
// error.
func TestPacingEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := &Pacing{Rate: 1}
	assert.ErrorIs(t, p.Wait(ctx), context.Canceled, "the first, due at once")
	assert.ErrorIs(t, p.Wait(ctx), context.Canceled, "the second, a second later")
}
