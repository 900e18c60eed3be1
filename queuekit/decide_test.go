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

// judge is Judge on err's marks, under the job's limit of pol.
func judge(pol *retrypolicy.Policy, d retrypolicy.Decision, err error, at time.Time) queuekit.Verdict {
	return queuekit.Judge(d, retry.ReadMarks(err), at, retry.WaitLimit(pol, retry.Durable))
}

// TestJudge pins what a run's error changes in the decision on it.
func TestJudge(t *testing.T) {
	pol, err := retrypolicy.Compile(retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: time.Second, MaxDelay: time.Minute}})
	require.NoError(t, err)
	at := t0
	wait := queuekit.Decide(pol, []int64{at.UnixNano()}, 0, 1, at) // owes 1 s
	require.Equal(t, retrypolicy.Wait, wait.Action)

	v := judge(pol, wait, errors.New("plain"), at)
	assert.Equal(t, wait, v.Decision, "a plain error changes nothing")
	assert.Zero(t, v.GaveUp)
	assert.Zero(t, v.Asked)
	assert.Equal(t, wait, judge(pol, wait, nil, at).Decision, "no error (a panic) changes nothing")

	v = judge(pol, wait, retry.Permanent(errors.New("bad input")), at)
	assert.Equal(t, retrypolicy.Fatal, v.Action)
	assert.Equal(t, retry.NotRetryable, v.GaveUp)
	assert.Equal(t, 1, v.InWindow)
	assert.True(t, v.Due.IsZero())

	v = judge(pol, wait, retry.After(errors.New("429"), 30*time.Second), at)
	assert.True(t, v.Due.Equal(at.Add(30*time.Second)), "Retry-After lengthens the wait: %v", v.Due)
	assert.Equal(t, 30*time.Second, v.Asked)
	v = judge(pol, wait, retry.After(errors.New("429"), time.Hour), at)
	assert.True(t, v.Due.Equal(at.Add(time.Hour)), "an hour, past the strategy's cap of a minute, is not cut: %v", v.Due)
	assert.Equal(t, retrypolicy.Wait, v.Action)
	v = judge(pol, wait, retry.After(errors.New("429"), time.Millisecond), at)
	assert.True(t, v.Due.Equal(wait.Due), "never shortens it: %v", v.Due)

	fatal := queuekit.Decide(pol, []int64{at.UnixNano(), at.Add(time.Second).UnixNano(), at.Add(2 * time.Second).UnixNano()}, 0, 1, at.Add(2*time.Second))
	v = judge(pol, fatal, retry.After(errors.New("429"), time.Minute), at)
	assert.Equal(t, retrypolicy.Fatal, v.Action, "a fatal decision stays fatal")
	assert.Equal(t, retry.AttemptsExhausted, v.GaveUp)

	// Marks in any branch of a joined error. Until every branch was read,
	// errors.Join(exhausted, deferred) rescheduled after 1 s.
	exhausted := &retry.GiveUpError{Reason: retry.AttemptsExhausted, Failures: 3, Err: errors.New("down")}
	deferred := &retry.GiveUpError{Reason: retry.Deferred, Failures: 1, Err: errors.New("429"), Wait: 50 * time.Second}
	tooLong := &retry.GiveUpError{Reason: retry.RetryAfterTooLong, Failures: 1, Err: errors.New("429"), Wait: 40 * time.Second}
	v = judge(pol, wait, errors.Join(exhausted, deferred), at)
	assert.True(t, v.Due.Equal(at.Add(50*time.Second)), "the deferred wait in the second branch: %v", v.Due)
	v = judge(pol, wait, errors.Join(exhausted, tooLong), at)
	assert.True(t, v.Due.Equal(at.Add(40*time.Second)), "a wait asked beyond a loop's limit: %v", v.Due)
	v = judge(pol, wait, errors.Join(deferred, &retry.GiveUpError{Reason: retry.NotRetryable, Err: errors.New("400")}), at)
	assert.Equal(t, retry.NotRetryable, v.GaveUp, "a permanent mark anywhere wins")
}

// TestAWaitBeyondTheJobsLimitGivesTheJobUp: a wait asked or deferred
// longer than the job's limit (by default its strategy's longest delay but
// at least an hour, an hour without a cap) gives the job up as
// retry_after_too_long, the wait in the verdict and its due time; one at
// the limit is waited in full. Until the job's limit, a wait was cut to
// the strategy's cap: a job capped at a second ran again a second after
// a 429 that asked for 600.
func TestAWaitBeyondTheJobsLimitGivesTheJobUp(t *testing.T) {
	brisk, err := retrypolicy.Compile(retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: time.Second, MaxDelay: time.Second}})
	require.NoError(t, err)
	at := t0
	d := queuekit.Decide(brisk, []int64{at.UnixNano()}, 0, 1, at)
	cases := []struct {
		name  string
		err   error
		limit time.Duration
		fatal bool
		asked time.Duration
	}{
		{"600 s asked, capped at 1 s", retry.After(errors.New("429"), 600*time.Second), time.Hour, false, 600 * time.Second},
		{"an hour asked: at the limit", retry.After(errors.New("429"), time.Hour), time.Hour, false, time.Hour},
		{"2 h asked", retry.After(errors.New("429"), 2*time.Hour), time.Hour, true, 2 * time.Hour},
		{"2 h deferred", &retry.GiveUpError{Reason: retry.Deferred, Wait: 2 * time.Hour}, time.Hour, true, 2 * time.Hour},
		{"2 h asked, a limit of 3 h", retry.After(errors.New("429"), 2*time.Hour), 3 * time.Hour, false, 2 * time.Hour},
	}
	for _, c := range cases {
		v := queuekit.Judge(d, retry.ReadMarks(c.err), at, c.limit)
		assert.Equal(t, c.asked, v.Asked, c.name)
		assert.True(t, v.Due.Equal(at.Add(c.asked)), "%s: due %v", c.name, v.Due)
		if c.fatal {
			assert.Equal(t, retrypolicy.Fatal, v.Action, c.name)
			assert.Equal(t, retry.RetryAfterTooLong, v.GaveUp, c.name)
		} else {
			assert.Equal(t, retrypolicy.Wait, v.Action, c.name)
			assert.Zero(t, v.GaveUp, c.name)
		}
	}
}

// TestTheJobsLimit: Policies.WaitLimit is Config.WaitLimit when set, else
// the durable layer's limit under the strategy of the job's kind: its
// longest delay (a fixed backoff's delay) but at least an hour, an hour
// without a cap. A negative one is refused, naming it.
func TestTheJobsLimit(t *testing.T) {
	fixed := func(d time.Duration) retrypolicy.Strategy {
		return retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: d}}
	}
	capped := func(d time.Duration) retrypolicy.Strategy {
		return retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: time.Second, MaxDelay: d}}
	}
	p, err := queuekit.NewPolicies(queuekit.Config{Default: capped(time.Second), Kinds: map[string]retrypolicy.Strategy{
		"day": capped(24 * time.Hour), "fixed2h": fixed(2 * time.Hour), "fixed10ms": fixed(10 * time.Millisecond),
		"uncapped": {Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: time.Second}}}})
	require.NoError(t, err)
	for kind, want := range map[string]time.Duration{"": time.Hour, "day": 24 * time.Hour, "fixed2h": 2 * time.Hour, "fixed10ms": time.Hour, "uncapped": time.Hour} {
		assert.Equal(t, want, p.WaitLimit(kind), kind)
	}
	p, err = queuekit.NewPolicies(queuekit.Config{WaitLimit: 3 * time.Hour, Kinds: map[string]retrypolicy.Strategy{"day": capped(24 * time.Hour)}})
	require.NoError(t, err)
	assert.Equal(t, 3*time.Hour, p.WaitLimit("day"))
	_, err = queuekit.NewPolicies(queuekit.Config{WaitLimit: -time.Second})
	assert.EqualError(t, err, "Config.WaitLimit: must not be negative, got -1s")
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
