package queuekit_test

import (
	"bytes"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/queuekit"
	"github.com/retrypolicy/retrypolicy/retry"
)

var t0 = time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)

// TestDecideOnManyFailures: 40 failures a second apart, shuffled, under
// unless_stopped with a fixed second: all 40 in the window (an hour), and
// the wait a second after the newest, as with fewer than 32.
func TestDecideOnManyFailures(t *testing.T) {
	pol, err := retrypolicy.Compile(retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Second}})
	require.NoError(t, err)
	for _, n := range []int{1, 32, 33, 40} {
		var failures []int64
		for i := range n {
			failures = append(failures, t0.Add(time.Duration(i)*time.Second).UnixNano())
		}
		rand.Shuffle(len(failures), func(i, j int) { failures[i], failures[j] = failures[j], failures[i] })
		newest := t0.Add(time.Duration(n-1) * time.Second)
		d := queuekit.Decide(pol, failures, 0, 1, newest)
		assert.Equal(t, n, d.InWindow, "%d failures", n)
		assert.Equal(t, retrypolicy.Wait, d.Action)
		assert.True(t, d.Due.Equal(newest.Add(time.Second)), "%d failures: due %v", n, d.Due)
	}
	assert.Equal(t, retrypolicy.Decision{}, queuekit.Decide(pol, nil, 0, 1, t0), "no failures")
}

// TestJudge pins what a run's error changes in the decision on it.
func TestJudge(t *testing.T) {
	pol, err := retrypolicy.Compile(retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: time.Second, MaxDelay: time.Minute}})
	require.NoError(t, err)
	at := t0
	wait := queuekit.Decide(pol, []int64{at.UnixNano()}, 0, 1, at) // owes 1 s
	require.Equal(t, retrypolicy.Wait, wait.Action)

	v := queuekit.Judge(pol, wait, errors.New("plain"), at)
	assert.Equal(t, wait, v.Decision, "a plain error changes nothing")
	assert.Zero(t, v.GaveUp)

	v = queuekit.Judge(pol, wait, retry.Permanent(errors.New("bad input")), at)
	assert.Equal(t, retrypolicy.Fatal, v.Action)
	assert.Equal(t, retry.NotRetryable, v.GaveUp)
	assert.Equal(t, 1, v.InWindow)
	assert.True(t, v.Due.IsZero())

	v = queuekit.Judge(pol, wait, retry.After(errors.New("429"), 30*time.Second), at)
	assert.True(t, v.Due.Equal(at.Add(30*time.Second)), "Retry-After lengthens the wait: %v", v.Due)
	v = queuekit.Judge(pol, wait, retry.After(errors.New("429"), time.Hour), at)
	assert.True(t, v.Due.Equal(at.Add(time.Minute)), "within the cap: %v", v.Due)
	v = queuekit.Judge(pol, wait, retry.After(errors.New("429"), time.Millisecond), at)
	assert.True(t, v.Due.Equal(wait.Due), "never shortens it: %v", v.Due)

	fatal := queuekit.Decide(pol, []int64{at.UnixNano(), at.Add(time.Second).UnixNano(), at.Add(2 * time.Second).UnixNano()}, 0, 1, at.Add(2*time.Second))
	v = queuekit.Judge(pol, fatal, retry.After(errors.New("429"), time.Minute), at)
	assert.Equal(t, retrypolicy.Fatal, v.Action, "a fatal decision stays fatal")
	assert.Equal(t, retry.Reason(retrypolicy.AttemptsExhausted), v.GaveUp)

	// Marks in any branch of a joined error. Until every branch was read,
	// errors.Join(exhausted, deferred) rescheduled after 1 s.
	exhausted := &retry.GiveUpError{Reason: retry.AttemptsExhausted, Failures: 3, Err: errors.New("down")}
	deferred := &retry.GiveUpError{Reason: retry.Deferred, Failures: 1, Err: errors.New("429"), Wait: 50 * time.Second}
	tooLong := &retry.GiveUpError{Reason: retry.RetryAfterTooLong, Failures: 1, Err: errors.New("429"), Wait: 40 * time.Second}
	v = queuekit.Judge(pol, wait, errors.Join(exhausted, deferred), at)
	assert.True(t, v.Due.Equal(at.Add(50*time.Second)), "the deferred wait in the second branch: %v", v.Due)
	v = queuekit.Judge(pol, wait, errors.Join(exhausted, tooLong), at)
	assert.True(t, v.Due.Equal(at.Add(40*time.Second)), "a wait asked beyond a loop's limit: %v", v.Due)
	v = queuekit.Judge(pol, wait, errors.Join(deferred, &retry.GiveUpError{Reason: retry.NotRetryable, Err: errors.New("400")}), at)
	assert.Equal(t, retry.NotRetryable, v.GaveUp, "a permanent mark anywhere wins")
	v = queuekit.Judge(pol, wait, &retry.GiveUpError{Reason: retry.Deferred, Wait: 24 * time.Hour}, at)
	assert.True(t, v.Due.Equal(at.Add(time.Minute)), "a deferred wait within the strategy's cap: %v", v.Due)
	uncapped, err := retrypolicy.Compile(retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Second}})
	require.NoError(t, err)
	v = queuekit.Judge(uncapped, wait, retry.After(errors.New("429"), 24*time.Hour), at)
	assert.True(t, v.Due.Equal(at.Add(time.Hour)), "an hour for a strategy without a cap: %v", v.Due)
}

// TestKeep pins what a record keeps: the newest InWindow failures, at
// most a bounded strategy's MaxAttempts, sorted.
func TestKeep(t *testing.T) {
	bounded, err := retrypolicy.Compile(retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 2})
	require.NoError(t, err)
	unbounded, err := retrypolicy.Compile(retrypolicy.Default())
	require.NoError(t, err)
	assert.Equal(t, []int64{3, 4}, queuekit.Keep(bounded, []int64{4, 1, 3, 2}, retrypolicy.Decision{InWindow: 4}))
	assert.Equal(t, []int64{2, 3, 4}, queuekit.Keep(unbounded, []int64{4, 1, 3, 2}, retrypolicy.Decision{InWindow: 3}))
	assert.Equal(t, []int64{1, 2, 3, 4}, queuekit.Keep(unbounded, []int64{4, 1, 3, 2}, retrypolicy.Decision{InWindow: 9}))
	assert.Equal(t, 2, queuekit.MostKept(bounded))
}

// TestLogLint: each warning of Lint is one Warn line, in the adapter's
// words, naming the field, the finding's code and the tick.
func TestLogLint(t *testing.T) {
	var out bytes.Buffer
	c := queuekit.Config{Kinds: map[string]retrypolicy.Strategy{
		"fast": {Kind: retrypolicy.Bounded, MaxAttempts: 2, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}}}
	c.LogLint(slog.New(slog.NewTextHandler(&out, nil)), "adapter:", "none: the queue runs a retry when due")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, len(c.Lint()))
	require.NotEmpty(t, lines[0])
	assert.Contains(t, lines[0], `level=WARN msg="adapter: Config.Kinds[\"fast\"]: `)
	assert.Contains(t, lines[0], "code=gives-up-fast")
	assert.Contains(t, lines[0], `tick="none: the queue runs a retry when due"`)
}

// TestKindsField: an adapter that names its kinds otherwise sees its own
// name in errors and warnings.
func TestKindsField(t *testing.T) {
	_, err := queuekit.NewPolicies(queuekit.Config{KindsField: "Config.Subjects",
		Kinds: map[string]retrypolicy.Strategy{"orders.new": {Kind: retrypolicy.Bounded}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `Config.Subjects["orders.new"]: retrypolicy: MaxAttempts: required`)
	_, err = queuekit.NewPolicies(queuekit.Config{Kinds: map[string]retrypolicy.Strategy{"email": {Kind: retrypolicy.Bounded}}})
	assert.ErrorContains(t, err, `Config.Kinds["email"]: `)
	c := queuekit.Config{KindsField: "Config.Subjects", Kinds: map[string]retrypolicy.Strategy{
		"fast": {Kind: retrypolicy.Bounded, MaxAttempts: 2, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}}}
	w := c.Lint()
	require.NotEmpty(t, w)
	assert.Equal(t, `Config.Subjects["fast"]`, w[0].Field)
}
