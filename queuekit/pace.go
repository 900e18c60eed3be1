package queuekit

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"time"
)

// MaxReplayRate is the most dead letters a second a paced replay sends,
// and MinReplayRate the fewest: one a day, so that a send's time, n/Rate
// seconds after the first, is one a time.Duration holds.
const (
	MaxReplayRate = 100_000
	MinReplayRate = 1.0 / 86_400
)

// Pacing is how a replay of dead letters is paced: the rule every
// adapter's replay follows. A Pacing counts its sends: it is not safe for
// concurrent use. The n-th send (from 0) is due n/Rate seconds
// after the first, delayed by a random part of Jitter; a send late for its
// time goes at once, and the next keep theirs, so that n sends take
// (n-1)/Rate seconds, plus at most Jitter, whatever each took.
type Pacing struct {
	// Rate is how many sends a second, in [MinReplayRate, MaxReplayRate].
	Rate float64
	// Jitter, between 0 and an hour, delays each send by a random part of
	// it, so that replays started together do not send together.
	Jitter time.Duration
	// Now and Sleep are the clock it paces by; nil is the machine's.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error

	first time.Time
	n     int
}

// Check returns why p cannot pace, naming the field (prefix, its owner's
// name, opens the message: "natsretry: ReplayOptions.").
func (p *Pacing) Check(prefix string) error {
	switch {
	case math.IsNaN(p.Rate) || p.Rate < MinReplayRate || p.Rate > MaxReplayRate:
		return errors.New(prefix + "Rate: must be at least one a day (" + strconv.FormatFloat(MinReplayRate, 'g', 3, 64) +
			" a second) and at most " + strconv.Itoa(MaxReplayRate) + " a second, got " + strconv.FormatFloat(p.Rate, 'g', -1, 64))
	case p.Jitter < 0 || p.Jitter > time.Hour:
		return errors.New(prefix + "Jitter: must be between 0 and an hour, got " + p.Jitter.String())
	}
	return nil
}

// now is p's clock's time.
func (p *Pacing) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Wait waits until the next send is due, or ctx ends (its error then). A
// Pacing whose Rate or Jitter is out of range (Check) waits for nothing
// and returns Check's error.
func (p *Pacing) Wait(ctx context.Context) error {
	if err := p.Check("queuekit: Pacing."); err != nil {
		return err
	}
	now := p.now()
	if p.n == 0 {
		p.first = now
	}
	at := p.first.Add(sinceFirst(p.n, p.Rate))
	if p.Jitter > 0 {
		at = at.Add(rand.N(p.Jitter))
	}
	p.n++
	wait := at.Sub(now)
	switch {
	case wait <= 0:
		return ctx.Err()
	case p.Sleep != nil:
		return p.Sleep(ctx, wait)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sinceFirst is when the n-th send is due after the first at rate,
// saturated at the longest time.Duration.
func sinceFirst(n int, rate float64) time.Duration {
	d := float64(n) / rate * float64(time.Second)
	if d >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(d)
}

// SentRate is the sends a second so far, at now: the sends after the first
// over the time since it, 0 before the second.
func (p *Pacing) SentRate(now time.Time) float64 {
	since := now.Sub(p.first)
	if p.n < 2 || since <= 0 {
		return 0
	}
	return float64(p.n-1) / since.Seconds()
}

// Clock is p's clock's time now.
func (p *Pacing) Clock() time.Time { return p.now() }
