package bench

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/retrypolicy/retrypolicy"
	"github.com/stretchr/testify/require"
)

// Both sides are configured alike: 1 s, ×2, no randomization, and no cap
// that the first 30 delays reach.
var policyBackoff, _ = retrypolicy.Compile(retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped,
	Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: time.Second, Multiplier: 2}})

// policyDelay is the delay owed after the n-th failure within the window.
func policyDelay(n int) time.Duration {
	failures := failuresOfJob[:n]
	d, err := policyBackoff.Decide(failures, 0, 0, failures[n-1])
	if err != nil {
		panic(err)
	}
	return d.Owed
}

// failuresOfJob are 30 failures a millisecond apart.
var failuresOfJob = func() []time.Time {
	out := make([]time.Time, 30)
	for i := range out {
		out[i] = t0.Add(time.Duration(i) * time.Millisecond)
	}
	return out
}()

func peerBackoff() *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = time.Second
	b.Multiplier = 2
	b.RandomizationFactor = 0
	b.MaxInterval = 100 * 365 * 24 * time.Hour
	b.Reset()
	return b
}

// peerNth reaches the delay after the n-th failure the only way the peer
// offers: by calling NextBackOff n times from a fresh state.
func peerNth(b *backoff.ExponentialBackOff, n int) time.Duration {
	b.Reset()
	var d time.Duration
	for range n {
		d = b.NextBackOff()
	}
	return d
}

// TestSameDelays checks that the two sides compute the same delays, so that
// the benchmark compares like with like.
func TestSameDelays(t *testing.T) {
	peer := peerBackoff()
	for _, n := range []int{1, 2, 10, 30} {
		require.Equal(t, peerNth(peer, n), policyDelay(n), "n=%d", n)
	}
	require.Equal(t, 512*time.Second, policyDelay(10))
}

var sink time.Duration

func BenchmarkNthDelay(b *testing.B) {
	for _, n := range []int{1, 10, 30} {
		b.Run("retrypolicy/n="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink = policyDelay(n)
			}
		})
	}
	for _, n := range []int{1, 10, 30} {
		b.Run("cenkalti/n="+strconv.Itoa(n), func(b *testing.B) {
			peer := peerBackoff()
			b.ReportAllocs()
			for b.Loop() {
				sink = peerNth(peer, n)
			}
		})
	}
}

// BenchmarkNextBackOff is one NextBackOff call of the peer, for scale: what a
// retry loop that keeps the peer's state pays per failure.
func BenchmarkNextBackOff(b *testing.B) {
	peer := peerBackoff()
	b.ReportAllocs()
	for b.Loop() {
		if sink = peer.NextBackOff(); sink > time.Hour {
			peer.Reset()
		}
	}
}

// job is one job in ERROR as a controller holds it.
type job struct {
	strategy int
	failures []time.Time
	uptime   time.Duration
	seed     uint64
}

var tickStrategies = []retrypolicy.Strategy{
	retrypolicy.Default(),
	{Kind: retrypolicy.Bounded, MaxAttempts: 10, Window: time.Hour, Backoff: retrypolicy.Default().Backoff},
	{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 30 * time.Second}},
	{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.ExponentialWithJitter, BaseDelay: 2 * time.Second, Multiplier: 1.5, MaxDelay: 300 * time.Second}},
	{Kind: retrypolicy.None},
}

var t0 = time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)

// makeJobs builds count jobs with 1 to 16 failures each, oldest first, a few
// seconds to minutes apart, mixed strategies and uptimes, deterministically.
func makeJobs(count int) []job {
	backing := make([]time.Time, 0, count*17/2+16)
	jobs := make([]job, count)
	x := uint64(0x9e3779b97f4a7c15)
	next := func() uint64 { // xorshift64: deterministic, no global source
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return x
	}
	for i := range jobs {
		n := 1 + int(next()%16)
		start := len(backing)
		at := t0.Add(-time.Duration(next()%7200) * time.Second)
		for range n {
			backing = append(backing, at)
			at = at.Add(time.Duration(1+next()%300) * time.Second)
		}
		jobs[i] = job{
			strategy: int(next() % uint64(len(tickStrategies))),
			failures: backing[start:len(backing):len(backing)],
			uptime:   time.Duration(next()%600) * time.Second,
			seed:     next(),
		}
	}
	return jobs
}

type tally struct{ fatal, retry, wait int }

func (t *tally) add(d retrypolicy.Decision) {
	switch d.Action {
	case retrypolicy.Fatal:
		t.fatal++
	case retrypolicy.RetryNow:
		t.retry++
	default:
		t.wait++
	}
}

func decideJob(j *job, now time.Time) (retrypolicy.Decision, error) {
	return retrypolicy.Decide(tickStrategies[j.strategy], j.failures, j.uptime, j.seed, now)
}

// BenchmarkTick decides for a million jobs in ERROR, as a controller does on
// each tick. serial: one op is a whole tick on one core. parallel: one op is
// one job, spread over all cores with b.RunParallel; ms/tick scales it to
// the million jobs.
func BenchmarkTick(b *testing.B) {
	const count = 1000000
	jobs := makeJobs(count)
	now := t0.Add(30 * time.Minute)
	b.Run("jobs="+strconv.Itoa(count)+"/serial", func(b *testing.B) {
		b.ReportAllocs()
		var t tally
		for b.Loop() {
			t = tally{}
			for i := range jobs {
				d, err := decideJob(&jobs[i], now)
				if err != nil {
					b.Fatal(err)
				}
				t.add(d)
			}
		}
		if t.fatal == 0 || t.retry == 0 || t.wait == 0 {
			b.Fatalf("a tick should see every verdict: %+v", t)
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/tick")
	})
	b.Run("jobs="+strconv.Itoa(count)+"/parallel", func(b *testing.B) {
		var workers atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			// Each goroutine walks the jobs from its own offset, so that
			// they share no counter.
			i := int(workers.Add(1)*7919) % count
			var t tally
			for pb.Next() {
				if i++; i == count {
					i = 0
				}
				d, err := decideJob(&jobs[i], now)
				if err != nil {
					b.Error(err)
					return
				}
				t.add(d)
			}
		})
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)*count/1e6, "ms/tick")
	})
}
