package otelretry_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/otelretry"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

// sdk is a meter provider read by hand and a tracer provider that keeps
// its spans, with the instruments on them.
type sdk struct {
	in     *otelretry.Instruments
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
}

func newSDK(t *testing.T, opts ...otelretry.Option) *sdk {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	spans := tracetest.NewSpanRecorder()
	in, err := otelretry.New(append(opts,
		otelretry.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))),
		otelretry.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))))...)
	require.NoError(t, err)
	return &sdk{in: in, reader: reader, spans: spans}
}

// metrics collects the metrics, by name.
func (s *sdk) metrics(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, s.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(t, otelretry.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// counts returns a counter's value by attribute set, checking that it is
// a monotonic int64 sum with the unit.
func counts(t *testing.T, m metricdata.Metrics, unit string) map[attribute.Distinct]int64 {
	t.Helper()
	assert.Equal(t, unit, m.Unit, m.Name)
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is a counter of int64, not %T", m.Name, m.Data)
	assert.True(t, sum.IsMonotonic, m.Name)
	out := map[attribute.Distinct]int64{}
	for _, dp := range sum.DataPoints {
		out[dp.Attributes.Equivalent()] = dp.Value
	}
	return out
}

// hist is a histogram point's count and sum.
type hist struct {
	count uint64
	sum   float64
}

// histograms returns a histogram's points by attribute set.
func histograms[N int64 | float64](t *testing.T, m metricdata.Metrics, unit string) map[attribute.Distinct]hist {
	t.Helper()
	assert.Equal(t, unit, m.Unit, m.Name)
	h, ok := m.Data.(metricdata.Histogram[N])
	require.True(t, ok, "%s is a histogram, not %T", m.Name, m.Data)
	out := map[attribute.Distinct]hist{}
	for _, dp := range h.DataPoints {
		out[dp.Attributes.Equivalent()] = hist{dp.Count, float64(dp.Sum)}
	}
	return out
}

// retryOp is retry.Do recorded by in's options for the operation name,
// from the source "retry".
func retryOp[T any](ctx context.Context, in *otelretry.Instruments, name string, s retrypolicy.Strategy, fn func(context.Context) (T, error), opts ...retry.Option) (T, error) {
	return retry.Do(ctx, s, fn, append(opts, in.Options("retry", name)...)...)
}

func set(kv ...attribute.KeyValue) attribute.Distinct {
	s := attribute.NewSet(kv...)
	return s.Equivalent()
}

var oneSecond = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3,
	Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Second}}

// TestRetryFailsTwiceThenSucceeds: two retries of a second each, three
// attempts at a success, a span with an event a retry, no give-up.
func TestRetryFailsTwiceThenSucceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSDK(t)
		calls := 0
		v, err := retryOp(context.Background(), s.in, "fetch", oneSecond, func(context.Context) (int, error) {
			if calls++; calls < 3 {
				return 0, errors.New("flaky")
			}
			return 7, nil
		})
		require.NoError(t, err)
		assert.Equal(t, 7, v)
		op := []attribute.KeyValue{otelretry.Source.String("retry"), otelretry.Operation.String("fetch")}
		m := s.metrics(t)
		assert.Equal(t, map[attribute.Distinct]int64{set(op...): 2}, counts(t, m["retrypolicy.retries"], "{retry}"))
		assert.Equal(t, map[attribute.Distinct]hist{set(op...): {2, 2.0}}, histograms[float64](t, m["retrypolicy.wait.duration"], "s"))
		assert.Equal(t, map[attribute.Distinct]hist{set(append(op, otelretry.Outcome.String("success"))...): {1, 3}},
			histograms[int64](t, m["retrypolicy.operation.attempts"], "{attempt}"))
		assert.NotContains(t, m, "retrypolicy.give_ups", "nothing given up")

		spans := s.spans.Ended()
		require.Len(t, spans, 1)
		assert.Equal(t, "fetch", spans[0].Name())
		require.Len(t, spans[0].Events(), 2)
		assert.Equal(t, "retrypolicy.retry", spans[0].Events()[0].Name)
		assert.Contains(t, spans[0].Events()[1].Attributes, attribute.Float64("retrypolicy.wait_secs", 1))
		assert.Equal(t, codes.Unset, spans[0].Status().Code)
	})
}

// TestRetryGivesUpForEachReason: each reason Retry gives up for is a
// give-up of that reason, an attempts point with outcome give_up, and a
// span whose status is an error.
func TestRetryGivesUpForEachReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSDK(t)
		down := func(context.Context) (int, error) { return 0, errors.New("down") }
		budget, err := retry.NewBudget(0, 1)
		require.NoError(t, err)
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		for _, c := range []struct {
			ctx  context.Context
			s    retrypolicy.Strategy
			op   func(context.Context) (int, error)
			opts []retry.Option
		}{
			{context.Background(), oneSecond, down, nil},                                                                                         // attempts_exhausted
			{context.Background(), retrypolicy.Strategy{Kind: retrypolicy.None}, down, nil},                                                      // strategy_none
			{context.Background(), oneSecond, func(context.Context) (int, error) { return 0, retry.Permanent(errors.New("404")) }, nil},          // not_retryable
			{cancelled, oneSecond, down, nil},                                                                                                    // context_done
			{nil, oneSecond, down, nil},                                                                                                          // past_deadline: a deadline sooner than the wait
			{context.Background(), oneSecond, down, []retry.Option{retry.WithBudget(budget)}},                                                    // one retry, then budget_exhausted
			{context.Background(), oneSecond, func(context.Context) (int, error) { return 0, retry.After(errors.New("429"), 2*time.Hour) }, nil}, // retry_after_too_long
		} {
			ctx := c.ctx
			if ctx == nil {
				var stop context.CancelFunc
				ctx, stop = context.WithTimeout(context.Background(), 500*time.Millisecond)
				defer stop()
			}
			_, err := retryOp(ctx, s.in, "op", c.s, c.op, c.opts...)
			require.Error(t, err)
		}
		op := []attribute.KeyValue{otelretry.Source.String("retry"), otelretry.Operation.String("op")}
		want := map[attribute.Distinct]int64{}
		for _, r := range []string{"attempts_exhausted", "strategy_none", "not_retryable", "context_done", "past_deadline", "budget_exhausted", "retry_after_too_long"} {
			want[set(append(op, otelretry.Reason.String(r))...)] = 1
		}
		m := s.metrics(t)
		assert.Equal(t, want, counts(t, m["retrypolicy.give_ups"], "{give_up}"))
		assert.Equal(t, map[attribute.Distinct]hist{set(append(op, otelretry.Outcome.String("give_up"))...): {7, 3 + 1 + 1 + 0 + 1 + 2 + 1}},
			histograms[int64](t, m["retrypolicy.operation.attempts"], "{attempt}"))
		assert.Equal(t, map[attribute.Distinct]int64{set(op...): 3}, counts(t, m["retrypolicy.retries"], "{retry}"), "two for attempts_exhausted, one before the budget ran out")
		for _, span := range s.spans.Ended() {
			assert.Equal(t, codes.Error, span.Status().Code, span.Status().Description)
		}
	})
}

// TestHTTPRequestAnswered503Then200: the transport's retry is counted with
// its wait and attempts; under otelhttp each attempt is a client span, the
// second with http.request.resend_count 1.
func TestHTTPRequestAnswered503Then200(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	s := newSDK(t)
	quick := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}
	base := otelhttp.NewTransport(otelretry.ResendCountTransport(srv.Client().Transport), otelhttp.WithTracerProvider(traceProvider(s)))
	tr, err := retryhttp.NewTransport(base, quick, s.in.Options("http", "report")...)
	require.NoError(t, err)
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)

	op := []attribute.KeyValue{otelretry.Source.String("http"), otelretry.Operation.String("report")}
	m := s.metrics(t)
	assert.Equal(t, map[attribute.Distinct]int64{set(op...): 1}, counts(t, m["retrypolicy.retries"], "{retry}"))
	assert.Equal(t, map[attribute.Distinct]hist{set(append(op, otelretry.Outcome.String("success"))...): {1, 2}},
		histograms[int64](t, m["retrypolicy.operation.attempts"], "{attempt}"))

	spans := s.spans.Ended()
	require.Len(t, spans, 3, "a client span an attempt, and the request's around them")
	i := slices.IndexFunc(spans, func(s sdktrace.ReadOnlySpan) bool { return s.Name() == "report" })
	require.GreaterOrEqual(t, i, 0, "the request's span")
	request := spans[i]
	require.Len(t, request.Events(), 1, "the retry")
	var resend []int64
	for _, span := range slices.Delete(spans, i, i+1) {
		assert.Equal(t, request.SpanContext().SpanID(), span.Parent().SpanID(), "an attempt's span is the request's child")
		n := int64(-1)
		for _, kv := range span.Attributes() {
			if kv.Key == otelretry.ResendCount {
				n = kv.Value.AsInt64()
			}
		}
		resend = append(resend, n)
	}
	assert.ElementsMatch(t, []int64{-1, 1}, resend, "the first attempt has no resend count, the second 1")
}

func TestOptionsRecordAnotherLoopsCalls(t *testing.T) {
	s := newSDK(t)
	quick := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 2, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}
	opts := s.in.Options("grpc", "/inventory.Stock/Get")
	calls := 0
	_, err := retry.Do(context.Background(), quick, func(context.Context) (int, error) {
		calls++
		if calls == 1 {
			return 0, errors.New("unavailable")
		}
		return 1, nil
	}, opts...)
	require.NoError(t, err)
	_, err = retry.Do(context.Background(), quick, func(context.Context) (int, error) { return 0, errors.New("unavailable") }, opts...)
	require.Error(t, err)

	op := []attribute.KeyValue{otelretry.Source.String("grpc"), otelretry.Operation.String("/inventory.Stock/Get")}
	m := s.metrics(t)
	assert.Equal(t, map[attribute.Distinct]int64{set(op...): 2}, counts(t, m["retrypolicy.retries"], "{retry}"))
	assert.Equal(t, map[attribute.Distinct]int64{set(append(op, otelretry.Reason.String("attempts_exhausted"))...): 1},
		counts(t, m["retrypolicy.give_ups"], "{give_up}"))
	assert.Equal(t, map[attribute.Distinct]hist{
		set(append(op, otelretry.Outcome.String("success"))...): {1, 2},
		set(append(op, otelretry.Outcome.String("give_up"))...): {1, 2},
	}, histograms[int64](t, m["retrypolicy.operation.attempts"], "{attempt}"))
}

// traceProvider is the SDK's tracer provider, for otelhttp.
func traceProvider(s *sdk) *sdktrace.TracerProvider {
	return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(s.spans))
}

// TestSchedulerTickAndBudget: a controller's decisions are counted by
// action (and reason), a wait as a retry with its wait, a fatal one as a
// give-up; a budget's tokens are observed at collection.
func TestSchedulerTickAndBudget(t *testing.T) {
	s := newSDK(t)
	ctx := context.Background()
	queue := attribute.String("queue", "email")
	s.in.Decided(ctx, retrypolicy.Decision{Action: retrypolicy.Wait, Delay: 4 * time.Second, Jitter: time.Second}, queue)
	s.in.Decided(ctx, retrypolicy.Decision{Action: retrypolicy.RetryNow}, queue)
	s.in.Decided(ctx, retrypolicy.Decision{Action: retrypolicy.Fatal, Reason: retrypolicy.AttemptsExhausted}, queue)
	b, err := retry.NewBudget(0.1, 5)
	require.NoError(t, err)
	reg, err := s.in.ObserveBudget("payments", b)
	require.NoError(t, err)
	defer reg.Unregister()

	tick := otelretry.Source.String("tick")
	m := s.metrics(t)
	assert.Equal(t, map[attribute.Distinct]int64{
		set(tick, queue, otelretry.Action.String("wait")):                                                 1,
		set(tick, queue, otelretry.Action.String("retry_now")):                                            1,
		set(tick, queue, otelretry.Action.String("fatal"), otelretry.Reason.String("attempts_exhausted")): 1,
	}, counts(t, m["retrypolicy.decisions"], "{decision}"))
	assert.Equal(t, map[attribute.Distinct]int64{set(tick, queue): 2}, counts(t, m["retrypolicy.retries"], "{retry}"))
	assert.Equal(t, map[attribute.Distinct]hist{set(tick, queue): {2, 5}}, histograms[float64](t, m["retrypolicy.wait.duration"], "s"))
	assert.Equal(t, map[attribute.Distinct]int64{set(tick, queue, otelretry.Reason.String("attempts_exhausted")): 1}, counts(t, m["retrypolicy.give_ups"], "{give_up}"))

	g, ok := m["retrypolicy.budget.tokens"].Data.(metricdata.Gauge[float64])
	require.True(t, ok)
	assert.Equal(t, "{token}", m["retrypolicy.budget.tokens"].Unit)
	require.Len(t, g.DataPoints, 1)
	assert.Equal(t, 5.0, g.DataPoints[0].Value)
	assert.Equal(t, set(otelretry.Budget.String("payments")), g.DataPoints[0].Attributes.Equivalent())
}

// TestSpanEventsAreCapped: a call that retries 20 times writes an event
// for each of its first 8 retries (DefaultSpanEvents) and sums the other
// 12 on its span as it ends (count, total wait, largest wait), while the
// metrics count all 20; WithSpanEvents changes the 8, and 0 writes none.
func TestSpanEventsAreCapped(t *testing.T) {
	for _, c := range []struct {
		opts   []otelretry.Option
		events int
	}{{nil, otelretry.DefaultSpanEvents}, {[]otelretry.Option{otelretry.WithSpanEvents(2)}, 2}, {[]otelretry.Option{otelretry.WithSpanEvents(0)}, 0}, {[]otelretry.Option{otelretry.WithSpanEvents(50)}, 20}} {
		synctest.Test(t, func(t *testing.T) {
			s := newSDK(t, c.opts...)
			forever := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Second}}
			calls := 0
			_, err := retryOp(context.Background(), s.in, "poll", forever, func(context.Context) (int, error) {
				if calls++; calls <= 20 {
					return 0, errors.New("not yet")
				}
				return 1, nil
			})
			require.NoError(t, err)
			op := []attribute.KeyValue{otelretry.Source.String("retry"), otelretry.Operation.String("poll")}
			assert.Equal(t, map[attribute.Distinct]int64{set(op...): 20}, counts(t, s.metrics(t)["retrypolicy.retries"], "{retry}"))
			spans := s.spans.Ended()
			require.Len(t, spans, 1)
			assert.Len(t, spans[0].Events(), c.events)
			summed := 20 - c.events
			attrs := spans[0].Attributes()
			if summed == 0 {
				for _, a := range attrs {
					assert.NotEqual(t, attribute.Key("retrypolicy.summed_retries"), a.Key)
				}
				return
			}
			assert.Contains(t, attrs, attribute.Int("retrypolicy.summed_retries", summed))
			assert.Contains(t, attrs, attribute.Float64("retrypolicy.summed_wait_secs", float64(summed)))
			assert.Contains(t, attrs, attribute.Float64("retrypolicy.summed_max_wait_secs", 1))
		})
	}
}

// TestEachCallIsLabelledByItsName: options for an operation of "" label
// each call by its name (retry.NameCall: retrygrpc names a call by its
// method), or by the source when it has none, with a span of that name
// around the call. Until a call could name itself, every method of a gRPC
// interceptor had the one label the options were made with.
func TestEachCallIsLabelledByItsName(t *testing.T) {
	s := newSDK(t)
	quick := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 2, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}
	opts := s.in.Options("grpc", "")
	down := func(context.Context) (int, error) { return 0, errors.New("unavailable") }
	for _, name := range []string{"/inventory.Stock/Get", "/inventory.Stock/Put", "/inventory.Stock/Get", ""} {
		_, err := retry.Do(retry.NameCall(context.Background(), name), quick, down, opts...)
		require.Error(t, err)
	}
	grpcOp := func(name string) attribute.Distinct {
		return set(otelretry.Source.String("grpc"), otelretry.Operation.String(name))
	}
	assert.Equal(t, map[attribute.Distinct]int64{grpcOp("/inventory.Stock/Get"): 2, grpcOp("/inventory.Stock/Put"): 1, grpcOp("grpc"): 1},
		counts(t, s.metrics(t)["retrypolicy.retries"], "{retry}"))
	var names []string
	for _, span := range s.spans.Ended() {
		names = append(names, span.Name())
	}
	assert.Equal(t, []string{"/inventory.Stock/Get", "/inventory.Stock/Put", "/inventory.Stock/Get", "grpc"}, names)
}
