package queuekit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/queuekit"
	"github.com/retrypolicy/retrypolicy/retry"
)

// TestSettle pins the one call an adapter makes for a failed run, under a
// bounded strategy of 3 attempts waiting a fixed minute (no jitter): the
// failure is kept to the millisecond and added to the record; the wait is
// reckoned from it even when the record holds a later instant (a clock
// stepped back); MaxDelay cuts the strategy's own wait but not one a
// server asked; a wait asked beyond the limit gives the job up; and the
// record keeps what can count again, oldest first.
func TestSettle(t *testing.T) {
	pol, err := retrypolicy.Compile(retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Minute}})
	require.NoError(t, err)
	ended := t0.Add(1500 * time.Microsecond) // kept as t0 + 1 ms
	at := t0.Add(time.Millisecond)
	failure := func(failures ...time.Time) queuekit.Failure {
		f := queuekit.Failure{Policy: pol, Ended: ended, Uptime: time.Second, Seed: 1, Limit: time.Hour}
		for _, t := range failures {
			f.Failures = append(f.Failures, t.UnixNano())
		}
		return f
	}

	s := queuekit.Settle(failure(t0.Add(-time.Minute)))
	assert.True(t, s.At.Equal(at), "the failure to the millisecond: %v", s.At)
	assert.Equal(t, retrypolicy.Wait, s.Action)
	assert.True(t, s.Due.Equal(at.Add(time.Minute)), "due %v", s.Due)
	assert.Equal(t, 2, s.Decided)
	assert.Equal(t, []int64{t0.Add(-time.Minute).UnixNano(), at.UnixNano()}, s.Kept)

	s = queuekit.Settle(failure(t0.Add(time.Hour))) // recorded by a clock an hour ahead
	assert.True(t, s.Due.Equal(at.Add(time.Minute)), "a minute from the failure, not from the later instant: due %v", s.Due)

	f := failure()
	f.MaxDelay = 10 * time.Second
	s = queuekit.Settle(f)
	assert.True(t, s.Due.Equal(at.Add(10*time.Second)), "the strategy's minute cut to MaxDelay: due %v", s.Due)
	f.Marks = retry.Marks{Asked: 30 * time.Minute, HasAsked: true}
	s = queuekit.Settle(f)
	assert.True(t, s.Due.Equal(at.Add(30*time.Minute)), "a server's wait is not cut by MaxDelay: due %v", s.Due)
	assert.Equal(t, 30*time.Minute, s.Asked)

	f.Marks = retry.Marks{Asked: 2 * time.Hour, HasAsked: true}
	s = queuekit.Settle(f)
	assert.Equal(t, retrypolicy.Fatal, s.Action)
	assert.Equal(t, retry.RetryAfterTooLong, s.GaveUp, "beyond the hour's limit")

	s = queuekit.Settle(failure(t0.Add(-2*time.Minute), t0.Add(-time.Minute)))
	assert.Equal(t, retrypolicy.Fatal, s.Action, "the third failure of three")
	assert.Equal(t, retry.Reason(retrypolicy.AttemptsExhausted), s.GaveUp)
	assert.Len(t, s.Kept, 3, "all three kept")
}
