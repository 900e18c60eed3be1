package bench

import (
	"math"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/retrypolicy/retrypolicy"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)

// Sinks keep results alive so that the compiler cannot drop the work.
var (
	sink       time.Duration
	timeSink   time.Time
	actionSink retrypolicy.Action
)

// compile is retrypolicy.Compile for strategies the benchmarks know valid.
func compile(s retrypolicy.Strategy) *retrypolicy.Policy {
	p, err := retrypolicy.Compile(s)
	if err != nil {
		panic(err)
	}
	return p
}

// failuresEvery returns n failures, step apart, the newest at t0.
func failuresEvery(n int, step time.Duration) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		out[i] = t0.Add(-time.Duration(n-1-i) * step)
	}
	return out
}

// Both sides of the n-th delay are configured alike: 1 s, ×2, no
// randomization, and no cap that the first 30 delays reach.
var doubling = compile(retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped,
	Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: time.Second, Multiplier: 2}})

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

// policyNth is the delay owed after the n-th failure within the window, a
// millisecond apart, as a decision on them.
func policyNth(failures []time.Time) time.Duration {
	d, err := doubling.Decide(failures, 0, 0, failures[len(failures)-1])
	if err != nil {
		panic(err)
	}
	return d.Owed
}

// TestSameDelays checks that the two sides compute the same delays, so that
// the benchmark compares like with like.
func TestSameDelays(t *testing.T) {
	peer := peerBackoff()
	for _, n := range []int{1, 2, 10, 30} {
		require.Equal(t, peerNth(peer, n), policyNth(failuresEvery(n, time.Millisecond)), "n=%d", n)
	}
	require.Equal(t, 512*time.Second, policyNth(failuresEvery(10, time.Millisecond)))
}

// BenchmarkNthDelay: the delay after the n-th failure, from nothing but the
// failures (retrypolicy) or from a fresh state (cenkalti/backoff).
func BenchmarkNthDelay(b *testing.B) {
	for _, n := range []int{1, 10, 30} {
		failures := failuresEvery(n, time.Millisecond)
		b.Run("n="+strconv.Itoa(n)+"/impl=cenkalti", func(b *testing.B) {
			peer := peerBackoff()
			b.ReportAllocs()
			for b.Loop() {
				sink = peerNth(peer, n)
			}
		})
		b.Run("n="+strconv.Itoa(n)+"/impl=retrypolicy", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink = policyNth(failures)
			}
		})
	}
}

// The strategies a scheduler compares with River's default: each backoff
// kind, as a compiled Policy.
var kinds = []struct {
	name   string
	policy *retrypolicy.Policy
}{
	{"fixed", compile(retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 5 * time.Second}})},
	{"exponential", compile(retrypolicy.Default())},
	{"jitter", compile(retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.ExponentialWithJitter, BaseDelay: time.Second, Multiplier: 1.5, MaxDelay: 300 * time.Second}})},
}

// BenchmarkNextRetry decides the retry of a job with k errors: River's
// DefaultClientRetryPolicy.NextRetry (attempt^4 seconds and a random
// jitter, from time.Now), against Policy.Decide on k failures 30 s apart,
// for each backoff kind, after a run of 0 s or 90 s (uptime credit).
func BenchmarkNextRetry(b *testing.B) {
	for _, errs := range []int{1, 8} {
		prefix := "errors=" + strconv.Itoa(errs) + "/impl="
		b.Run(prefix+"river", func(b *testing.B) {
			policy := &river.DefaultClientRetryPolicy{}
			job := &rivertype.JobRow{ID: 42, Errors: make([]rivertype.AttemptError, errs-1)}
			b.ReportAllocs()
			for b.Loop() {
				timeSink = policy.NextRetry(job)
			}
		})
		failures := failuresEvery(errs, 30*time.Second)
		now := t0.Add(time.Second)
		seed := retrypolicy.SeedFromString("42")
		for _, k := range kinds {
			for _, uptime := range []time.Duration{0, 90 * time.Second} {
				name := k.name
				if uptime > 0 {
					name += "+credit"
				}
				b.Run(prefix+name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						d, err := k.policy.Decide(failures, uptime, seed, now)
						if err != nil {
							b.Fatal(err)
						}
						actionSink, timeSink = d.Action, d.Due
					}
				})
			}
		}
	}
}

// historyWith returns a History under p's strategy holding n failures
// within the hour before t0, the newest after a run of uptime.
func historyWith(s retrypolicy.Strategy, n int, uptime time.Duration) *retrypolicy.History {
	p, err := retrypolicy.Compile(s)
	if err != nil {
		panic(err)
	}
	h := retrypolicy.NewHistory(p)
	step := time.Hour / time.Duration(n+1)
	for i := range n {
		if err := h.Record(t0.Add(-time.Duration(n-1-i)*step), uptime); err != nil {
			panic(err)
		}
	}
	return h
}

// BenchmarkCredit decides, from a History, for a job with n = 10 or
// 1,000,000 failures in the window, under multipliers down to the closest
// to 1 there is, capped at an hour or not, after runs of every length up
// to the longest Duration: the uptime credit's cost at n = 10 and at a
// million side by side.
func BenchmarkCredit(b *testing.B) {
	multipliers := []struct {
		name string
		m    float64
	}{{"2", 2}, {"1.0001", 1.0001}, {"1.000001", 1.000001}, {"1+2^-52", 1 + 0x1p-52}}
	uptimes := []struct {
		name string
		d    time.Duration
	}{{"90s", 90 * time.Second}, {"1d", 24 * time.Hour}, {"100y", 100 * 365 * 24 * time.Hour}, {"max", math.MaxInt64}}
	for _, m := range multipliers {
		for _, maxDelay := range []time.Duration{0, time.Hour} {
			s := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped,
				Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: time.Second, Multiplier: m.m, MaxDelay: maxDelay}}
			capName := "none"
			if maxDelay > 0 {
				capName = "1h"
			}
			for _, u := range uptimes {
				for _, n := range []int{10, 1000000} {
					h := historyWith(s, n, u.d)
					b.Run("m="+m.name+"/cap="+capName+"/uptime="+u.name+"/n="+strconv.Itoa(n), func(b *testing.B) {
						b.ReportAllocs()
						for b.Loop() {
							d, err := h.Decide(42, t0)
							if err != nil {
								b.Fatal(err)
							}
							sink = d.Delay
						}
					})
				}
			}
		}
	}
}

// BenchmarkHistory records a failure, and decides, on a History that holds
// a thousand or a million failures in its hour-long window, in the steady
// state: each new failure pushes the oldest out of the window.
func BenchmarkHistory(b *testing.B) {
	for _, retained := range []int{1000, 1000000} {
		step := time.Hour / time.Duration(retained)
		h := historyWith(retrypolicy.Default(), retained, 20*time.Second)
		at := t0
		b.Run("op=record/retained="+strconv.Itoa(retained), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				at = at.Add(step)
				if err := h.Record(at, 20*time.Second); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("op=decide/retained="+strconv.Itoa(retained), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d, err := h.Decide(42, at)
				if err != nil {
					b.Fatal(err)
				}
				actionSink = d.Action
			}
		})
	}
}

// job is one job in ERROR as a controller holds it.
type job struct {
	policy   *retrypolicy.Policy
	failures []time.Time
	uptime   time.Duration
	seed     uint64
}

var tickPolicies = []*retrypolicy.Policy{
	compile(retrypolicy.Default()),
	compile(retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 10, Window: time.Hour, Backoff: retrypolicy.Default().Backoff}),
	compile(retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 30 * time.Second}}),
	compile(retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.ExponentialWithJitter, BaseDelay: 2 * time.Second, Multiplier: 1.5, MaxDelay: 300 * time.Second}}),
	compile(retrypolicy.Strategy{Kind: retrypolicy.None}),
}

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
			policy:   tickPolicies[next()%uint64(len(tickPolicies))],
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

// BenchmarkTick decides for a million jobs in ERROR, as a controller does on
// each tick, one op a job: serial walks the jobs on one goroutine, parallel
// spreads them over every core. ms/tick scales ns/job to the million jobs.
func BenchmarkTick(b *testing.B) {
	const count = 1000000
	jobs := makeJobs(count)
	now := t0.Add(30 * time.Minute)
	b.Run("jobs="+strconv.Itoa(count)+"/serial", func(b *testing.B) {
		var t tally
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			j := &jobs[i]
			d, err := j.policy.Decide(j.failures, j.uptime, j.seed, now)
			if err != nil {
				b.Fatal(err)
			}
			t.add(d)
			if i++; i == count {
				i = 0
			}
		}
		if b.N >= count && (t.fatal == 0 || t.retry == 0 || t.wait == 0) {
			b.Fatalf("a tick should see every verdict: %+v", t)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)*count/1e6, "ms/tick")
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
				j := &jobs[i]
				d, err := j.policy.Decide(j.failures, j.uptime, j.seed, now)
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

// BenchmarkTickHistories walks 10,000, 100,000 and 1,000,000 jobs in
// ERROR, each with 8 failures in the last hour, once per op (a controller
// tick), three ways: retrypolicy, one History per job sharing one Policy
// (the default strategy); naive, the loop a scheduler author writes
// instead (count the last hour's failures over a []time.Time, 1 s << (n-1)
// capped at an hour, compare now with the newest failure plus that); and
// river, River's DefaultClientRetryPolicy.NextRetry on job rows with 8
// errors, compared with now.
func BenchmarkTickHistories(b *testing.B) {
	for _, jobs := range []int{10_000, 100_000, 1_000_000} {
		b.Run("jobs="+strconv.Itoa(jobs), func(b *testing.B) { benchTick(b, jobs) })
	}
}

// benchTick is BenchmarkTickHistories for a number of jobs.
func benchTick(b *testing.B, tickJobs int) {
	now := t0.Add(30 * time.Second)
	failures := make([][]time.Time, tickJobs)
	for i := range failures {
		at := t0.Add(-time.Duration(i%60) * time.Second)
		failures[i] = make([]time.Time, 8)
		for k := range 8 {
			failures[i][k] = at.Add(-time.Duration(7-k) * 7 * time.Minute)
		}
	}
	b.Run("impl=retrypolicy", func(b *testing.B) {
		p := compile(retrypolicy.Default())
		histories := make([]*retrypolicy.History, tickJobs)
		for i := range histories {
			histories[i] = retrypolicy.NewHistory(p)
			for _, f := range failures[i] {
				if err := histories[i].Record(f, time.Duration(i%600)*time.Second); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportAllocs()
		for b.Loop() {
			due := 0
			for i, h := range histories {
				d, err := h.Decide(uint64(i), now)
				if err != nil {
					b.Fatal(err)
				}
				if d.Action == retrypolicy.RetryNow {
					due++
				}
			}
			actionSink = retrypolicy.Action(due)
		}
	})
	b.Run("impl=naive", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			due, from := 0, now.Add(-time.Hour)
			for _, fs := range failures {
				last, n := fs[len(fs)-1], 0
				for _, f := range fs {
					if !f.Before(from) {
						n++
					}
				}
				delay := min(time.Second<<(n-1), time.Hour)
				if !now.Before(last.Add(delay)) {
					due++
				}
			}
			actionSink = retrypolicy.Action(due)
		}
	})
	b.Run("impl=river", func(b *testing.B) {
		policy := &river.DefaultClientRetryPolicy{}
		rows := make([]rivertype.JobRow, tickJobs)
		for i := range rows {
			rows[i] = rivertype.JobRow{ID: int64(i), Attempt: 8, Errors: make([]rivertype.AttemptError, 7)}
			for k := range rows[i].Errors {
				rows[i].Errors[k] = rivertype.AttemptError{At: failures[i][k], Attempt: k + 1}
			}
		}
		b.ReportAllocs()
		for b.Loop() {
			due := 0
			for i := range rows {
				if !now.Before(policy.NextRetry(&rows[i])) {
					due++
				}
			}
			actionSink = retrypolicy.Action(due)
		}
	})
}
