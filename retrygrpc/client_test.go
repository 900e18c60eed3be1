package retrygrpc_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retrygrpc"
)

// client returns a connection to h through a unary interceptor of s and
// opts.
func client(t *testing.T, h *health, s retrypolicy.Strategy, opts ...retry.Option) *grpc.ClientConn {
	t.Helper()
	in, err := retrygrpc.UnaryClientInterceptor(s, opts...)
	require.NoError(t, err)
	return serve(t, h, nil, grpc.WithUnaryInterceptor(in))
}

// failing answers code for the first n calls, then succeeds.
func failing(n int, code codes.Code) func(int, context.Context) error {
	return func(call int, _ context.Context) error {
		if call <= n {
			return status.Error(code, "scripted failure")
		}
		return nil
	}
}

var safeCheck = retrygrpc.WithSafeMethods(checkMethod)

func TestTheDefaultCodesAreRetried(t *testing.T) {
	for _, code := range []codes.Code{codes.Unavailable, codes.ResourceExhausted} {
		t.Run(code.String(), func(t *testing.T) {
			h := &health{answer: failing(2, code)}
			cc := client(t, h, bounded(5), safeCheck)
			require.NoError(t, check(context.Background(), cc))
			assert.Equal(t, 3, h.Calls())
			assert.Equal(t, []string{"", "1", "2"}, h.previous, "grpc-previous-rpc-attempts of each attempt")
		})
	}
}

func TestOtherCodesAreSentOnce(t *testing.T) {
	for _, code := range []codes.Code{codes.Canceled, codes.Unknown, codes.InvalidArgument, codes.DeadlineExceeded,
		codes.NotFound, codes.AlreadyExists, codes.PermissionDenied, codes.FailedPrecondition, codes.Aborted,
		codes.OutOfRange, codes.Unimplemented, codes.Internal, codes.DataLoss, codes.Unauthenticated} {
		t.Run(code.String(), func(t *testing.T) {
			h := &health{answer: failing(2, code)}
			cc := client(t, h, bounded(5), safeCheck)
			err := check(context.Background(), cc)
			assert.Equal(t, 1, h.Calls())
			assert.Equal(t, code, status.Code(err))
			var gu *retry.GiveUpError
			assert.False(t, errors.As(err, &gu), "a call sent once returns its status error itself, got %v", err)
			assert.Equal(t, "scripted failure", status.Convert(err).Message())
		})
	}
}

func TestWithCodesReplacesTheCodes(t *testing.T) {
	h := &health{answer: failing(1, codes.Aborted)}
	cc := client(t, h, bounded(5), safeCheck, retrygrpc.WithCodes(codes.Aborted))
	require.NoError(t, check(context.Background(), cc))
	assert.Equal(t, 2, h.Calls())

	h = &health{answer: failing(1, codes.Unavailable)}
	cc = client(t, h, bounded(5), safeCheck, retrygrpc.WithCodes(codes.Aborted))
	assert.Equal(t, codes.Unavailable, status.Code(check(context.Background(), cc)))
	assert.Equal(t, 1, h.Calls())
}

func TestOnlySafeCallsAreRetried(t *testing.T) {
	cases := []struct {
		name  string
		opts  []retry.Option
		key   []string // the call's idempotency-key values
		calls int
	}{
		{"no safe rule", nil, nil, 1},
		{"another method named", []retry.Option{retrygrpc.WithSafeMethods("/grpc.health.v1.Health/List")}, nil, 1},
		{"the method named", []retry.Option{safeCheck}, nil, 3},
		{"the method matched", []retry.Option{retrygrpc.WithSafe(func(m string) bool { return strings.HasSuffix(m, "/Check") })}, nil, 3},
		{"a method not matched", []retry.Option{retrygrpc.WithSafe(func(string) bool { return false })}, nil, 1},
		{"an idempotency key", nil, []string{"order-17"}, 3},
		{"a blank idempotency key", nil, []string{" "}, 1},
		{"a blank and a real key", nil, []string{"", "order-17"}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := &health{answer: failing(2, codes.Unavailable)}
			cc := client(t, h, bounded(5), tc.opts...)
			ctx := context.Background()
			for _, k := range tc.key {
				ctx = metadata.AppendToOutgoingContext(ctx, retrygrpc.IdempotencyKey, k)
			}
			err := check(ctx, cc)
			assert.Equal(t, tc.calls, h.Calls())
			if tc.calls == 1 {
				assert.Equal(t, codes.Unavailable, status.Code(err))
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

func TestAGivenUpCallHasTheLastAttemptsCode(t *testing.T) {
	var ended retry.End
	h := &health{answer: func(n int, _ context.Context) error {
		if n < 3 {
			return status.Error(codes.ResourceExhausted, "quota")
		}
		return status.Error(codes.Unavailable, "down")
	}}
	cc := client(t, h, bounded(3), safeCheck, retry.WithEnd(func(e retry.End) { ended = e }))
	err := check(context.Background(), cc)
	assert.Equal(t, 3, h.Calls())
	var gu *retry.GiveUpError
	require.ErrorAs(t, err, &gu)
	assert.Equal(t, retry.AttemptsExhausted, gu.Reason)
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, 3, ended.Attempts, "the loop's end callback")
}

func TestPushback(t *testing.T) {
	t.Run("a wait is kept", func(t *testing.T) {
		var waits []time.Duration
		h := &health{answer: func(n int, ctx context.Context) error {
			if n == 1 {
				_ = grpc.SetTrailer(ctx, metadata.Pairs(retrygrpc.PushbackTrailer, "30"))
				return status.Error(codes.Unavailable, "busy")
			}
			return nil
		}}
		cc := client(t, h, bounded(3), safeCheck, retry.WithObserver(func(e retry.Event) { waits = append(waits, e.Wait) }))
		require.NoError(t, check(context.Background(), cc))
		assert.Equal(t, 2, h.Calls())
		assert.Equal(t, []time.Duration{30 * time.Millisecond}, waits, "the pushback, not the strategy's millisecond")
	})
	for _, v := range [][]string{{"-1"}, {"soon"}, {"1", "2"}, {""}, {"99999999999999999999x"}, {"1x"}, {"+30"}, {" 30"}} {
		t.Run("no retry for "+strings.Join(v, ","), func(t *testing.T) {
			h := &health{answer: func(_ int, ctx context.Context) error {
				md := metadata.MD{}
				md[retrygrpc.PushbackTrailer] = v
				_ = grpc.SetTrailer(ctx, md)
				return status.Error(codes.Unavailable, "go away")
			}}
			cc := client(t, h, bounded(3), safeCheck)
			err := check(context.Background(), cc)
			assert.Equal(t, 1, h.Calls())
			assert.Equal(t, codes.Unavailable, status.Code(err))
		})
	}
	t.Run("past the longest wait, saturated", func(t *testing.T) {
		for _, v := range []string{"9223372036854775807", "99999999999999999999999"} {
			h := &health{answer: func(_ int, ctx context.Context) error {
				_ = grpc.SetTrailer(ctx, metadata.Pairs(retrygrpc.PushbackTrailer, v))
				return status.Error(codes.Unavailable, "come back much later")
			}}
			cc := client(t, h, bounded(3), safeCheck)
			var gu *retry.GiveUpError
			require.ErrorAs(t, check(context.Background(), cc), &gu, v)
			assert.Equal(t, retry.RetryAfterTooLong, gu.Reason, v)
			assert.Equal(t, time.Duration(1<<63-1), gu.Wait, v)
		}
	})
	t.Run("beyond the limit", func(t *testing.T) {
		h := &health{answer: func(_ int, ctx context.Context) error {
			_ = grpc.SetTrailer(ctx, metadata.Pairs(retrygrpc.PushbackTrailer, "600000"))
			return status.Error(codes.ResourceExhausted, "come back in ten minutes")
		}}
		cc := client(t, h, bounded(3), safeCheck, retry.WithWaitLimit(time.Minute))
		err := check(context.Background(), cc)
		assert.Equal(t, 1, h.Calls())
		var gu *retry.GiveUpError
		require.ErrorAs(t, err, &gu)
		assert.Equal(t, retry.RetryAfterTooLong, gu.Reason)
		assert.Equal(t, 10*time.Minute, gu.Wait)
		assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	})
	// A fixed backoff's longest delay is its delay: a fixed 10 ms client's
	// limit is a minute, so a 90 s pushback gives up at once. Until it was,
	// the fixed client slept the 90 s (an hour's limit) where an
	// exponential one capped at a second gave up.
	t.Run("beyond a fixed 10 ms's default limit of a minute", func(t *testing.T) {
		h := &health{answer: func(_ int, ctx context.Context) error {
			_ = grpc.SetTrailer(ctx, metadata.Pairs(retrygrpc.PushbackTrailer, "90000"))
			return status.Error(codes.Unavailable, "come back in a minute and a half")
		}}
		fixed := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3,
			Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 10 * time.Millisecond}}
		cc := client(t, h, fixed, safeCheck)
		err := check(context.Background(), cc)
		assert.Equal(t, 1, h.Calls())
		var gu *retry.GiveUpError
		require.ErrorAs(t, err, &gu)
		assert.Equal(t, retry.RetryAfterTooLong, gu.Reason)
		assert.Equal(t, 90*time.Second, gu.Wait)
	})
	t.Run("past the call's deadline", func(t *testing.T) {
		h := &health{answer: func(_ int, ctx context.Context) error {
			_ = grpc.SetTrailer(ctx, metadata.Pairs(retrygrpc.PushbackTrailer, "50000"))
			return status.Error(codes.Unavailable, "busy")
		}}
		cc := client(t, h, bounded(3), safeCheck)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var gu *retry.GiveUpError
		require.ErrorAs(t, check(ctx, cc), &gu)
		assert.Equal(t, retry.PastDeadline, gu.Reason)
		assert.Equal(t, 1, h.Calls())
	})
}

// blockFirst is an invoker whose first call waits for its context to end
// and whose later calls succeed; it records whether each had a deadline.
type blockFirst struct {
	calls     int
	deadlines []bool
}

func (f *blockFirst) invoke(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
	f.calls++
	_, ok := ctx.Deadline()
	f.deadlines = append(f.deadlines, ok)
	if f.calls == 1 {
		<-ctx.Done()
		return status.FromContextError(ctx.Err()).Err()
	}
	return nil
}

func TestAnAttemptTimeoutIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, err := retrygrpc.UnaryClientInterceptor(bounded(3), safeCheck, retry.WithAttemptTimeout(time.Second))
		require.NoError(t, err)
		f := &blockFirst{}
		require.NoError(t, in(context.Background(), checkMethod, nil, nil, nil, f.invoke))
		assert.Equal(t, 2, f.calls)
		assert.Equal(t, []bool{true, true}, f.deadlines, "each attempt has a deadline, which gRPC sends the server")
	})
}

func TestTheCallsOwnDeadlineIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, err := retrygrpc.UnaryClientInterceptor(bounded(3), safeCheck, retry.WithAttemptTimeout(time.Hour))
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		f := &blockFirst{}
		err = in(ctx, checkMethod, nil, nil, nil, f.invoke)
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
		assert.Equal(t, 1, f.calls)
	})
}

// fakeStream is a server-streaming call's client side in memory: its first
// attempt sends nothing until its context ends; the next sends a message,
// then, an hour later (past any attempt timeout), another if its context
// still lives.
type fakeStream struct {
	grpc.ClientStream
	ctx      context.Context
	attempt  int
	received int
}

func (f *fakeStream) SendMsg(any) error { return nil }
func (f *fakeStream) CloseSend() error  { return nil }
func (f *fakeStream) Trailer() metadata.MD {
	return nil
}

func (f *fakeStream) RecvMsg(any) error {
	if f.attempt == 1 {
		<-f.ctx.Done()
		return status.FromContextError(f.ctx.Err()).Err()
	}
	if f.received++; f.received == 2 {
		time.Sleep(time.Hour)
	}
	if err := f.ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	return nil
}

func TestAStreamsAttemptTimeoutBoundsItsFirstMessageOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, err := retrygrpc.StreamClientInterceptor(bounded(3), retrygrpc.WithSafeMethods(watchMethod), retry.WithAttemptTimeout(time.Second))
		require.NoError(t, err)
		attempts := 0
		cs, err := in(context.Background(), &grpc.StreamDesc{ServerStreams: true}, nil, watchMethod,
			func(ctx context.Context, _ *grpc.StreamDesc, _ *grpc.ClientConn, _ string, _ ...grpc.CallOption) (grpc.ClientStream, error) {
				attempts++
				return &fakeStream{ctx: ctx, attempt: attempts}, nil
			})
		require.NoError(t, err)
		require.NoError(t, cs.SendMsg(1))
		require.NoError(t, cs.CloseSend())
		require.NoError(t, cs.RecvMsg(nil), "the first message, from the second attempt")
		require.NoError(t, cs.RecvMsg(nil), "a message an hour later: the attempt's timer stopped at the first")
		assert.Equal(t, 2, attempts)
	})
}

func TestAMessageTooLargeIsNotRetried(t *testing.T) {
	h := &health{}
	cc := client(t, h, bounded(3), safeCheck)
	_, err := grpc_health_v1.NewHealthClient(cc).Check(context.Background(),
		&grpc_health_v1.HealthCheckRequest{Service: strings.Repeat("x", 100)}, grpc.MaxCallSendMsgSize(10))
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	var gu *retry.GiveUpError
	assert.False(t, errors.As(err, &gu), "sent once: the status itself, got %v", err)
	assert.Equal(t, 0, h.Calls())
}

func TestABudgetBoundsTheRetries(t *testing.T) {
	b, err := retry.NewBudget(0, 1) // one retry, and no more
	require.NoError(t, err)
	h := &health{answer: func(int, context.Context) error { return status.Error(codes.Unavailable, "down") }}
	cc := client(t, h, bounded(5), safeCheck, retry.WithBudget(b))
	var gu *retry.GiveUpError
	require.ErrorAs(t, check(context.Background(), cc), &gu)
	assert.Equal(t, retry.BudgetExhausted, gu.Reason)
	assert.Equal(t, 2, h.Calls())
	require.ErrorAs(t, check(context.Background(), cc), &gu)
	assert.Equal(t, retry.BudgetExhausted, gu.Reason)
	assert.Equal(t, 3, h.Calls(), "the spent budget sends the next call once")
}

func TestInsideAJobALongWaitIsDeferred(t *testing.T) {
	h := &health{answer: func(_ int, ctx context.Context) error {
		_ = grpc.SetTrailer(ctx, metadata.Pairs(retrygrpc.PushbackTrailer, "30000"))
		return status.Error(codes.Unavailable, "busy")
	}}
	cc := client(t, h, bounded(3), safeCheck)
	err := check(retry.DeferAfter(context.Background(), time.Second), cc)
	wait, ok := retry.DeferredWait(err)
	require.True(t, ok, "got %v", err)
	assert.Equal(t, 30*time.Second, wait)
	assert.Equal(t, 1, h.Calls())
}

func TestInvalidOptionsAreRefused(t *testing.T) {
	budget, err := retry.NewBudget(0.1, 10)
	require.NoError(t, err)
	cases := map[string]struct {
		opts []retry.Option
		want string
	}{
		"OK":           {[]retry.Option{retrygrpc.WithCodes(codes.OK)}, "retrygrpc: retrygrpc.WithCodes: OK is not an error code a call can fail with"},
		"no codes":     {[]retry.Option{retrygrpc.WithCodes()}, "retrygrpc: retrygrpc.WithCodes: give at least one code"},
		"a code of 17": {[]retry.Option{retrygrpc.WithCodes(codes.Code(17))}, "retrygrpc: retrygrpc.WithCodes: Code(17) is not an error code a call can fail with"},
		"a method":     {[]retry.Option{retrygrpc.WithSafeMethods("Check")}, `retrygrpc: retrygrpc.WithSafeMethods: "Check" is not a full method name, such as "/package.Service/Method"`},
		"a nil func":   {[]retry.Option{retrygrpc.WithSafe(nil)}, "retrygrpc: retrygrpc.WithSafe: the function is nil"},
		"a timeout":    {[]retry.Option{retry.WithAttemptTimeout(-time.Second)}, "retrygrpc: retry.WithAttemptTimeout: must be positive, got -1s"},
		"a loop's":     {[]retry.Option{retry.WithWaitLimit(0)}, "retrygrpc: retry.WithWaitLimit: must be positive, got 0s"},
		"budgets":      {[]retry.Option{retry.WithBudget(budget), retry.WithoutBudget()}, "retrygrpc: retry.WithBudget and retry.WithoutBudget: choose one"},
		"another's":    {[]retry.Option{retry.NewAdapterSetting[struct{ x int }]("retryhttp.WithClassifier").Option(func(*struct{ x int }) {})}, "retrygrpc: retryhttp.WithClassifier is an option of retryhttp, not of this one"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := retrygrpc.UnaryClientInterceptor(bounded(3), tc.opts...)
			assert.EqualError(t, err, tc.want)
			_, err = retrygrpc.StreamClientInterceptor(bounded(3), tc.opts...)
			assert.EqualError(t, err, tc.want)
		})
	}
	_, err = retrygrpc.UnaryClientInterceptor(retrypolicy.Strategy{Kind: retrypolicy.Bounded})
	var ve *retrypolicy.ValidationError
	assert.ErrorAs(t, err, &ve)
}

// TestARepeatedSettingIsRefused: a setting of one value, the
// interceptor's or the loop's, given twice in one list is refused at
// construction, naming it, by both client interceptors, while the safe
// methods of each WithSafeMethods and WithSafe add up.
func TestARepeatedSettingIsRefused(t *testing.T) {
	budget, err := retry.NewBudget(0.1, 10)
	require.NoError(t, err)
	for _, c := range []struct {
		opts []retry.Option
		want string
	}{
		{[]retry.Option{retrygrpc.WithCodes(codes.Unavailable), retrygrpc.WithCodes(codes.Aborted)}, "retrygrpc: retrygrpc.WithCodes: given twice; give each setting once"},
		{[]retry.Option{retry.WithBudget(budget), retry.WithBudget(budget)}, "retrygrpc: retry.WithBudget: given twice; give each setting once"},
		{[]retry.Option{retry.WithAttemptTimeout(time.Second), retry.WithAttemptTimeout(time.Second)}, "retrygrpc: retry.WithAttemptTimeout: given twice; give each setting once"},
		{[]retry.Option{retry.WithNestedRetries(), retry.WithNestedRetries()}, "retrygrpc: retry.WithNestedRetries: given twice; give each setting once"},
	} {
		_, err := retrygrpc.UnaryClientInterceptor(bounded(3), c.opts...)
		assert.EqualError(t, err, c.want)
		_, err = retrygrpc.StreamClientInterceptor(bounded(3), c.opts...)
		assert.EqualError(t, err, c.want)
	}
	h := &health{answer: func(n int, _ context.Context) error {
		if n%2 == 1 {
			return status.Error(codes.Unavailable, "down")
		}
		return nil
	}}
	in, err := retrygrpc.UnaryClientInterceptor(bounded(2), retry.WithoutBudget(),
		retrygrpc.WithSafeMethods("/other.S/M"), retrygrpc.WithSafeMethods(checkMethod), retrygrpc.WithSafe(func(string) bool { return false }))
	require.NoError(t, err)
	require.NoError(t, check(context.Background(), serve(t, h, nil, grpc.WithUnaryInterceptor(in))))
	assert.Equal(t, 2, h.Calls(), "the second WithSafeMethods' method is safe too: retried")
}

// failFirst is a stream whose first attempt fails with Unavailable at
// once; the next delivers messages.
type failFirst struct {
	fakeStream
}

func (f *failFirst) RecvMsg(any) error {
	if f.attempt == 1 {
		return status.Error(codes.Unavailable, "down")
	}
	return nil
}

func TestAStreamAttemptGivenUpOnIsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, err := retrygrpc.StreamClientInterceptor(bounded(3), retrygrpc.WithSafeMethods(watchMethod))
		require.NoError(t, err)
		var ctxs []context.Context
		cs, err := in(context.Background(), &grpc.StreamDesc{ServerStreams: true}, nil, watchMethod,
			func(ctx context.Context, _ *grpc.StreamDesc, _ *grpc.ClientConn, _ string, _ ...grpc.CallOption) (grpc.ClientStream, error) {
				ctxs = append(ctxs, ctx)
				return &failFirst{fakeStream{ctx: ctx, attempt: len(ctxs)}}, nil
			})
		require.NoError(t, err)
		require.NoError(t, cs.RecvMsg(nil))
		require.Len(t, ctxs, 2)
		assert.ErrorIs(t, ctxs[0].Err(), context.Canceled, "the failed attempt's stream is closed")
		assert.NoError(t, ctxs[1].Err(), "the stream that delivered goes on")
	})
}

// TestACallsOwnOptions: a call's CallOptions apply to it alone, after the
// interceptor's: its observer beside the interceptor's, its budget in
// place of the interceptor's; Disable sends it once, still seen by the
// end callback; an invalid call option fails the call unsent, naming it.
func TestACallsOwnOptions(t *testing.T) {
	var ends []retry.End
	h := &health{answer: func(int, context.Context) error { return status.Error(codes.Unavailable, "down") }}
	spent, err := retry.NewBudget(0, 1)
	require.NoError(t, err)
	require.True(t, spent.Withdraw())
	cc := client(t, h, bounded(3), safeCheck, retry.WithEnd(func(e retry.End) { ends = append(ends, e) }))

	var waits int
	err = check(context.Background(), cc, retrygrpc.CallOptions(retry.WithObserver(func(retry.Event) { waits++ })))
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, 3, h.Calls())
	assert.Equal(t, 2, waits, "the call's observer")
	require.Len(t, ends, 1, "the interceptor's end callback too")

	err = check(context.Background(), cc, retrygrpc.CallOptions(retry.WithBudget(spent)))
	var gu *retry.GiveUpError
	require.ErrorAs(t, err, &gu)
	assert.Equal(t, retry.BudgetExhausted, gu.Reason, "the call's spent budget")
	assert.Equal(t, 4, h.Calls())

	err = check(context.Background(), cc, retrygrpc.Disable())
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, 5, h.Calls(), "sent once")
	require.Len(t, ends, 3)
	assert.Equal(t, 1, ends[2].Attempts, "a disabled call is still seen")

	err = check(context.Background(), cc, retrygrpc.CallOptions(retrygrpc.WithCodes(codes.Aborted)))
	assert.EqualError(t, err, "retrygrpc: CallOptions: retrygrpc.WithCodes is an option of retrygrpc, not of this loop")
	assert.Equal(t, 5, h.Calls(), "unsent")
}

// TestACallIsNamedByItsMethod: every call, unary or streaming, is named by
// its method (retry.CallName) in every observer and end callback, with or
// without a start hook (which sees the name too).
func TestACallIsNamedByItsMethod(t *testing.T) {
	for _, started := range []bool{false, true} {
		var names []string
		name := func(ctx context.Context) { names = append(names, retry.CallName(ctx)) }
		opts := []retry.Option{safeCheck, retrygrpc.WithSafeMethods(watchMethod), retry.WithoutBudget(),
			retry.WithObserver(func(e retry.Event) { name(e.Context) }), retry.WithEnd(func(e retry.End) { name(e.Context) })}
		if started {
			opts = append(opts, retry.WithStart(func(ctx context.Context) context.Context { name(ctx); return ctx }))
		}
		unary, err := retrygrpc.UnaryClientInterceptor(bounded(3), opts...)
		require.NoError(t, err)
		stream, err := retrygrpc.StreamClientInterceptor(bounded(3), opts...)
		require.NoError(t, err)
		h := &health{answer: failing(1, codes.Unavailable), watch: func(n int, send func() error) error {
			if n == 3 { // the unary call made the first two
				return status.Error(codes.Unavailable, "not yet")
			}
			return send()
		}}
		cc := serve(t, h, nil, grpc.WithUnaryInterceptor(unary), grpc.WithStreamInterceptor(stream))
		require.NoError(t, check(context.Background(), cc))
		ss, err := grpc_health_v1.NewHealthClient(cc).Watch(context.Background(), &grpc_health_v1.HealthCheckRequest{})
		require.NoError(t, err)
		_, err = ss.Recv()
		require.NoError(t, err)
		want := []string{checkMethod, checkMethod, watchMethod, watchMethod} // an observer's retry and the end, each call
		if started {
			want = []string{checkMethod, checkMethod, checkMethod, watchMethod, watchMethod, watchMethod}
		}
		assert.Equal(t, want, names, "with a start hook: %v", started)
	}
}

// TestConcurrentCallsWithTheirOwnOptions: calls with CallOptions, Disable,
// an invalid call option, and none, made at once, each keep their own
// state (go test -race finds none shared), and each ends as its options say.
func TestConcurrentCallsWithTheirOwnOptions(t *testing.T) {
	h := &health{answer: func(int, context.Context) error { return nil }}
	cc := client(t, h, bounded(3), safeCheck)
	var wg sync.WaitGroup
	errs := make([]error, 40)
	for i := range errs {
		wg.Go(func() {
			switch i % 4 {
			case 0:
				errs[i] = check(context.Background(), cc, retrygrpc.CallOptions(retry.WithObserver(func(retry.Event) {})))
			case 1:
				errs[i] = check(context.Background(), cc, retrygrpc.Disable())
			case 2:
				errs[i] = check(context.Background(), cc, retrygrpc.CallOptions(retry.WithWaitLimit(-1)))
			default:
				errs[i] = check(context.Background(), cc)
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if i%4 == 2 {
			assert.EqualError(t, err, "retrygrpc: CallOptions: retry.WithWaitLimit: must be positive, got -1ns", "call %d", i)
		} else {
			assert.NoError(t, err, "call %d", i)
		}
	}
	assert.Equal(t, 30, h.Calls(), "every valid call sent once, the invalid ones not at all")
}
