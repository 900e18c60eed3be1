package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
)

var (
	errFlaky  = errors.New("flaky")
	intSink   int
	everyMS   = retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}
	succeeded = func() (int, error) { return 1, nil }
)

// BenchmarkRetryFirstTry is a call that succeeds at once: what wrapping a
// call in a retry loop costs when it is not needed.
func BenchmarkRetryFirstTry(b *testing.B) {
	ctx := context.Background()
	b.Run("impl=cenkalti", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v, err := backoff.Retry(ctx, succeeded, backoff.WithBackOff(&backoff.ConstantBackOff{Interval: time.Millisecond}))
			if err != nil {
				b.Fatal(err)
			}
			intSink = v
		}
	})
	b.Run("impl=retrypolicy", func(b *testing.B) {
		op := func(context.Context) (int, error) { return succeeded() }
		b.ReportAllocs()
		for b.Loop() {
			v, err := retry.Do(ctx, everyMS, op)
			if err != nil {
				b.Fatal(err)
			}
			intSink = v
		}
	})
}

// BenchmarkRetryBookkeeping is a call that fails three times, then
// succeeds, both loops waiting a constant 1 ms between calls: the same
// three sleeps on both sides, so that what differs between them is what
// each retry costs besides sleeping (deciding, timing, waking).
// ns/retry is ns/op over the three retries, sleep included.
func BenchmarkRetryBookkeeping(b *testing.B) {
	const failures = 3
	ctx := context.Background()
	report := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*failures), "ns/retry")
	}
	b.Run("impl=cenkalti", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			calls := 0
			v, err := backoff.Retry(ctx, func() (int, error) {
				if calls++; calls <= failures {
					return 0, errFlaky
				}
				return calls, nil
			}, backoff.WithBackOff(&backoff.ConstantBackOff{Interval: time.Millisecond}))
			if err != nil {
				b.Fatal(err)
			}
			intSink = v
		}
		report(b)
	})
	b.Run("impl=retrypolicy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			calls := 0
			v, err := retry.Do(ctx, everyMS, func(context.Context) (int, error) {
				if calls++; calls <= failures {
					return 0, errFlaky
				}
				return calls, nil
			}, retry.WithJitterSeed(1))
			if err != nil {
				b.Fatal(err)
			}
			intSink = v
		}
		report(b)
	})
}

// BenchmarkMicrosecondRetries is a call that fails three times, then
// succeeds, waiting 10 µs between calls (a Go strategy may wait any
// positive delay): the loop beside a bare loop that waits the same three
// timers on one reused timer, as the loop does. The target is 1.2x.
func BenchmarkMicrosecondRetries(b *testing.B) {
	const failures, wait = 3, 10 * time.Microsecond
	ctx := context.Background()
	flaky := func(calls *int) (int, error) {
		if *calls++; *calls <= failures {
			return 0, errFlaky
		}
		return *calls, nil
	}
	b.Run("impl=bare", func(b *testing.B) {
		b.ReportAllocs()
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		for b.Loop() {
			calls := 0
			for {
				v, err := flaky(&calls)
				if err == nil {
					intSink = v
					break
				}
				timer.Reset(wait)
				<-timer.C
			}
		}
	})
	b.Run("impl=retrypolicy", func(b *testing.B) {
		s := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: wait}}
		b.ReportAllocs()
		for b.Loop() {
			calls := 0
			v, err := retry.Do(ctx, s, func(context.Context) (int, error) { return flaky(&calls) }, retry.WithJitterSeed(1))
			if err != nil {
				b.Fatal(err)
			}
			intSink = v
		}
	})
}
