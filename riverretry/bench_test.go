package riverretry

import (
	"strconv"
	"testing"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// jobWithErrors returns a job on its ninth attempt after eight failures,
// each on record in River's Errors and in the policy's metadata, under a
// strategy of its own.
func jobWithErrors() *rivertype.JobRow {
	base := time.Now().Add(-time.Hour)
	job := &rivertype.JobRow{ID: 4242, Attempt: 9, MaxAttempts: MaxAttempts, Kind: "bench"}
	r := record{seen: 8}
	for i := range 8 {
		at := base.Add(time.Duration(i) * 3 * time.Minute)
		job.Errors = append(job.Errors, rivertype.AttemptError{At: at, Attempt: i + 1, Error: "upstream unavailable"})
		r.failures = append(r.failures, failure{attempt: i + 1, at: at.Add(time.Second)})
	}
	r.decision = retrypolicy.Decision{Action: retrypolicy.Wait, InWindow: 8, Owed: time.Minute, Delay: time.Minute, Due: base}
	rec, _ := r.MarshalJSON()
	job.Metadata = []byte(`{"retry_strategy":{"strategy":"unless_stopped","backoff":{"kind":"exponential_with_jitter","base_delay_secs":1,"max_delay_secs":300}},"retrypolicy":` + string(rec) + `}`)
	attempted := base.Add(time.Hour)
	job.AttemptedAt = &attempted
	return job
}

// BenchmarkNextRetry puts the policy's NextRetry beside River's default on
// a job with 8 errors (compare with benchstat -col /impl):
//
//   - impl=river: River's DefaultClientRetryPolicy, its attempt^4 schedule;
//   - impl=decided: the policy as River calls it after a run failed, the
//     middleware having decided: the handoff of the decision (put by the
//     middleware, taken by NextRetry) and the clock;
//   - impl=from-job: the policy with no decision made (a rescued run): it
//     reads the job's strategy (cached by its bytes) and its 8 failures
//     from the metadata, and decides.
func BenchmarkNextRetry(b *testing.B) {
	job := jobWithErrors()
	p, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	p.NextRetry(job) // compiles and caches the job's strategy
	var sink time.Time
	b.Run("impl=river", func(b *testing.B) {
		var river river.DefaultClientRetryPolicy
		b.ReportAllocs()
		for b.Loop() {
			sink = river.NextRetry(job)
		}
	})
	b.Run("impl=decided", func(b *testing.B) {
		d := retrypolicy.Decision{Action: retrypolicy.Wait, InWindow: 9, Due: time.Now().Add(time.Hour)}
		at := time.Now()
		b.ReportAllocs()
		for b.Loop() {
			p.pending.put(job.ID, job.Attempt, d, at)
			sink = p.NextRetry(job)
		}
	})
	b.Run("impl=from-job", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = p.NextRetry(job)
		}
	})
	_ = sink
}

// TestBenchmarkJobDecides: the benchmark's job is decided from its
// metadata, its eight failures counted with the one being decided.
func TestBenchmarkJobDecides(t *testing.T) {
	job := jobWithErrors()
	now := time.Now()
	p, err := New(Config{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	d, ok := p.decideUnseen(t.Context(), job, now, 0)
	if !ok || d.InWindow != 9 || d.Action != retrypolicy.Wait {
		t.Fatalf("decision %+v (ok %v), want a wait after 9 failures", d, ok)
	}
	s, _ := retrypolicy.Parse([]byte(`{"strategy":"unless_stopped","backoff":{"kind":"exponential_with_jitter","base_delay_secs":1,"max_delay_secs":300}}`))
	var times []time.Time
	for _, e := range job.Errors {
		times = append(times, e.At.Add(time.Second))
	}
	want, _ := retrypolicy.Decide(s, append(times, now), 0, retrypolicy.SeedFromString(strconv.FormatInt(job.ID, 10)), now)
	if !p.NextRetry(job).Equal(want.Due) {
		t.Fatalf("NextRetry %v, the library's due %v", p.NextRetry(job), want.Due)
	}
}
