package bench

import (
	"context"
	"strconv"
	"testing"
	"time"

	avast "github.com/avast/retry-go/v4"
	"github.com/cenkalti/backoff/v5"
	"github.com/failsafe-go/failsafe-go"
	fsretry "github.com/failsafe-go/failsafe-go/retrypolicy"
	sethvargo "github.com/sethvargo/go-retry"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
)

// peerLoop is one library's retry loop: build prepares, once, what the
// library lets a caller prepare for calls that retry at most retries
// times, wait apart, under ctx; the function it returns runs one call of
// op through it.
type peerLoop struct {
	name  string
	build func(ctx context.Context, retries int, wait time.Duration) func(op func() (int, error)) (int, error)
}

// peerLoops are the loop and the libraries people use for the same
// thing, each configured for a constant wait and a number of retries, as
// each documents it, and each built once as far as it can be: a Loop
// (retry.New), cenkalti's and avast's options, failsafe-go's executor,
// sethvargo's constant backoff (its retry count holds a call's state, so
// it is made for each call).
var peerLoops = []peerLoop{
	{"retrypolicy", func(ctx context.Context, retries int, wait time.Duration) func(func() (int, error)) (int, error) {
		s := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: retries + 1, Window: 7 * 24 * time.Hour,
			Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: wait}}
		l, err := retry.New[int](s, retry.WithJitterSeed(1))
		if err != nil {
			panic(err)
		}
		return func(op func() (int, error)) (int, error) {
			return l.Do(ctx, func(context.Context) (int, error) { return op() })
		}
	}},
	{"cenkalti", func(ctx context.Context, retries int, wait time.Duration) func(func() (int, error)) (int, error) {
		opts := []backoff.RetryOption{backoff.WithBackOff(&backoff.ConstantBackOff{Interval: wait}), backoff.WithMaxTries(uint(retries + 1))}
		return func(op func() (int, error)) (int, error) { return backoff.Retry(ctx, op, opts...) }
	}},
	{"avast", func(ctx context.Context, retries int, wait time.Duration) func(func() (int, error)) (int, error) {
		opts := []avast.Option{avast.Context(ctx), avast.Attempts(uint(retries + 1)), avast.Delay(wait), avast.DelayType(avast.FixedDelay), avast.LastErrorOnly(true)}
		return func(op func() (int, error)) (int, error) { return avast.DoWithData(op, opts...) }
	}},
	{"sethvargo", func(ctx context.Context, retries int, wait time.Duration) func(func() (int, error)) (int, error) {
		constant := sethvargo.NewConstant(wait)
		return func(op func() (int, error)) (int, error) {
			var v int
			err := sethvargo.Do(ctx, sethvargo.WithMaxRetries(uint64(retries), constant), func(context.Context) error {
				var err error
				if v, err = op(); err != nil {
					return sethvargo.RetryableError(err)
				}
				return nil
			})
			return v, err
		}
	}},
	{"failsafe", func(ctx context.Context, retries int, wait time.Duration) func(func() (int, error)) (int, error) {
		p := fsretry.NewBuilder[int]().WithDelay(wait).WithMaxRetries(retries).Build()
		executor := failsafe.With[int](p).WithContext(ctx)
		return func(op func() (int, error)) (int, error) { return executor.Get(op) }
	}},
}

// BenchmarkPeers holds the loop beside four other Go retry libraries on
// the same three calls, each library's loop built before the timing: one that succeeds at once (first-try), one that
// fails three times 1 ms apart and then succeeds (failures=3: the same
// three sleeps on every side), and one that fails 1,000 times 1 µs apart
// (failures=1000, reported per retry: what a retry costs besides a short
// sleep).
func BenchmarkPeers(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		failures int
		wait     time.Duration
	}{{"first-try", 0, time.Millisecond}, {"failures=3", 3, time.Millisecond}, {"failures=1000", 1000, time.Microsecond}} {
		for _, l := range peerLoops {
			b.Run(c.name+"/impl="+l.name, func(b *testing.B) {
				run := l.build(ctx, c.failures, c.wait)
				b.ReportAllocs()
				for b.Loop() {
					calls := 0
					v, err := run(func() (int, error) {
						if calls++; calls <= c.failures {
							return 0, errFlaky
						}
						return calls, nil
					})
					if err != nil || calls != c.failures+1 {
						b.Fatalf("%s: %v after %d calls", l.name, err, calls)
					}
					intSink = v
				}
				if c.failures > 0 {
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*c.failures), "ns/retry")
				}
			})
		}
	}
	_ = strconv.Itoa
}
