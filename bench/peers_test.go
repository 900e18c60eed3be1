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

// peerLoop is one library's retry loop around op, retrying at most
// retries times, waiting wait between calls.
type peerLoop struct {
	name string
	run  func(ctx context.Context, op func() (int, error), retries int, wait time.Duration) (int, error)
}

// peerLoops are the loop and the libraries people use for the same
// thing, each configured for a constant wait and a number of retries, as
// each documents it.
var peerLoops = []peerLoop{
	{"retrypolicy", func(ctx context.Context, op func() (int, error), retries int, wait time.Duration) (int, error) {
		s := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: retries + 1, Window: 7 * 24 * time.Hour,
			Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: wait}}
		return retry.Do(ctx, s, func(context.Context) (int, error) { return op() }, retry.WithJitterSeed(1))
	}},
	{"cenkalti", func(ctx context.Context, op func() (int, error), retries int, wait time.Duration) (int, error) {
		return backoff.Retry(ctx, op, backoff.WithBackOff(&backoff.ConstantBackOff{Interval: wait}), backoff.WithMaxTries(uint(retries+1)))
	}},
	{"avast", func(ctx context.Context, op func() (int, error), retries int, wait time.Duration) (int, error) {
		return avast.DoWithData(op, avast.Context(ctx), avast.Attempts(uint(retries+1)), avast.Delay(wait), avast.DelayType(avast.FixedDelay), avast.LastErrorOnly(true))
	}},
	{"sethvargo", func(ctx context.Context, op func() (int, error), retries int, wait time.Duration) (int, error) {
		var v int
		err := sethvargo.Do(ctx, sethvargo.WithMaxRetries(uint64(retries), sethvargo.NewConstant(wait)), func(context.Context) error {
			var err error
			if v, err = op(); err != nil {
				return sethvargo.RetryableError(err)
			}
			return nil
		})
		return v, err
	}},
	{"failsafe", func(ctx context.Context, op func() (int, error), retries int, wait time.Duration) (int, error) {
		p := fsretry.NewBuilder[int]().WithDelay(wait).WithMaxRetries(retries).Build()
		return failsafe.With[int](p).WithContext(ctx).Get(op)
	}},
}

// BenchmarkPeers holds the loop beside four other Go retry libraries on
// the same three calls: one that succeeds at once (first-try), one that
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
				b.ReportAllocs()
				for b.Loop() {
					calls := 0
					v, err := l.run(ctx, func() (int, error) {
						if calls++; calls <= c.failures {
							return 0, errFlaky
						}
						return calls, nil
					}, c.failures, c.wait)
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
