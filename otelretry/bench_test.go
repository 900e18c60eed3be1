package otelretry

import (
	"context"
	"errors"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
)

var errFlaky = errors.New("flaky")

// BenchmarkRetryAllocations is an operation that fails `failures` times,
// then succeeds, every millisecond: through the plain Retry, and through
// this package's with the global providers left as they are (no-op). The
// allocations that grow with the failures are what a retry costs; the
// rest is the call's.
func BenchmarkRetryAllocations(b *testing.B) {
	s := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}
	in, err := New()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, failures := range []int{1, 4} {
		flaky := func() func(context.Context) (int, error) {
			calls := 0
			return func(context.Context) (int, error) {
				if calls++; calls <= failures {
					return 0, errFlaky
				}
				return calls, nil
			}
		}
		b.Run("failures="+string(rune('0'+failures))+"/impl=plain", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := retry.Do(ctx, s, flaky()); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("failures="+string(rune('0'+failures))+"/impl=otel-noop", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := retry.Do(ctx, s, flaky(), in.Options("retry", "op")...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPerRetry is an operation that fails 10,000 times, then
// succeeds, under a strategy whose waits after the first are 0 ns (1 ms ×
// 1e-9): what each retry costs besides waiting, reported as ns/retry.
// impl=plain is the plain Retry's own bookkeeping (timing the call,
// recording the failure, deciding, the timer); impl=sdk is this package's
// Retry recording each retry through the SDK (a metric reader, a sampled
// span with an event a retry); impl=sdk-metrics the same without a span.
func BenchmarkPerRetry(b *testing.B) {
	const failures = 10_000
	s := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: time.Millisecond, Multiplier: 1e-9}}
	flaky := func() func(context.Context) (int, error) {
		calls := 0
		return func(context.Context) (int, error) {
			if calls++; calls <= failures {
				return 0, errFlaky
			}
			return calls, nil
		}
	}
	report := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*failures), "ns/retry")
	}
	ctx := context.Background()
	b.Run("impl=plain", func(b *testing.B) {
		for b.Loop() {
			if _, err := retry.Do(ctx, s, flaky()); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	sdk := func(b *testing.B, opts ...Option) {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		in, err := New(append(opts, WithMeterProvider(mp))...)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := retry.Do(ctx, s, flaky(), in.Options("retry", "op")...); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	}
	b.Run("impl=sdk", func(b *testing.B) { sdk(b, WithTracerProvider(sdktrace.NewTracerProvider())) })
	b.Run("impl=sdk-metrics", func(b *testing.B) { sdk(b, WithTracerProvider(noop.NewTracerProvider())) })
}
