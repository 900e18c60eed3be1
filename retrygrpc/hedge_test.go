package retrygrpc_test

import (
	"context"
	"net"
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
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retrygrpc"
)

var hedgeCheck = []retry.Option{retry.WithHedging(retry.Hedging{Delay: 20 * time.Millisecond}), retrygrpc.WithHedgedMethods(checkMethod)}

// hedgeInvoker is a unary call in memory whose first attempt hangs until
// its context ends and whose others answer at once, each with a reply,
// header, trailer and peer naming its attempt; a per-attempt error, when
// set, is returned instead (with a pushback trailer, if given).
type hedgeInvoker struct {
	mu        sync.Mutex
	calls     int
	previous  []string
	cancelled int
	fail      map[int]error
	pushback  map[int]string
}

func (f *hedgeInvoker) invoke(ctx context.Context, _ string, _, reply any, _ *grpc.ClientConn, opts ...grpc.CallOption) error {
	f.mu.Lock()
	f.calls++
	n := f.calls
	md, _ := metadata.FromOutgoingContext(ctx)
	f.previous = append(f.previous, append(md.Get(retrygrpc.PreviousAttemptsHeader), "")[0])
	err, push := f.fail[n], f.pushback[n]
	f.mu.Unlock()
	name := string(rune('0' + n))
	for _, o := range opts {
		switch o := o.(type) {
		case grpc.HeaderCallOption:
			*o.HeaderAddr = metadata.Pairs("attempt", name)
		case grpc.TrailerCallOption:
			*o.TrailerAddr = metadata.Pairs("attempt", name)
			if push != "" {
				o.TrailerAddr.Set(retrygrpc.PushbackTrailer, push)
			}
		case grpc.PeerCallOption:
			*o.PeerAddr = peer.Peer{Addr: &net.UnixAddr{Name: name}}
		}
	}
	if err != nil {
		return err
	}
	if n == 1 {
		<-ctx.Done()
		f.mu.Lock()
		f.cancelled++
		f.mu.Unlock()
		return status.FromContextError(ctx.Err()).Err()
	}
	reply.(*grpc_health_v1.HealthCheckResponse).Status = grpc_health_v1.HealthCheckResponse_SERVING
	return nil
}

// TestAHedgedCallTheFirstAnswerWins: a named method's call whose first
// attempt hangs is answered by the hedge sent 20 ms later, which carries
// grpc-previous-rpc-attempts; its reply, header, trailer and peer are the
// caller's; the first attempt is cancelled; the hedge was paid from the
// budget.
func TestAHedgedCallTheFirstAnswerWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := retry.DefaultBudget()
		in, err := retrygrpc.UnaryClientInterceptor(bounded(3), append(hedgeCheck, retry.WithBudget(b))...)
		require.NoError(t, err)
		f := &hedgeInvoker{}
		reply := &grpc_health_v1.HealthCheckResponse{Status: grpc_health_v1.HealthCheckResponse_NOT_SERVING}
		var header, trailer metadata.MD
		var p peer.Peer
		start := time.Now()
		err = in(context.Background(), checkMethod, &grpc_health_v1.HealthCheckRequest{}, reply, nil, f.invoke, grpc.Header(&header), grpc.Trailer(&trailer), grpc.Peer(&p))
		require.NoError(t, err)
		assert.Equal(t, 20*time.Millisecond, time.Since(start))
		assert.Equal(t, grpc_health_v1.HealthCheckResponse_SERVING, reply.Status)
		assert.Equal(t, []string{"2"}, header.Get("attempt"))
		assert.Equal(t, []string{"2"}, trailer.Get("attempt"))
		assert.Equal(t, "2", p.Addr.String())
		assert.Equal(t, []string{"", "1"}, f.previous)
		assert.Equal(t, 1, f.cancelled, "the loser cancelled, and waited for")
		assert.InDelta(t, 9.1, b.Tokens(), 1e-9)
	})
}

// TestWhichCallsHedge: a method not named is sent unhedged; a call's own
// CallOptions with retry.WithHedging hedge it; a reply that is not a
// proto.Message is sent unhedged; Disable sends once.
func TestWhichCallsHedge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, err := retrygrpc.UnaryClientInterceptor(bounded(3), hedgeCheck...)
		require.NoError(t, err)
		plain, err := retrygrpc.UnaryClientInterceptor(bounded(3), retrygrpc.WithSafeMethods(checkMethod))
		require.NoError(t, err)
		type notProto struct{ Status int }
		for _, c := range []struct {
			name   string
			in     grpc.UnaryClientInterceptor
			method string
			reply  any
			opts   []grpc.CallOption
			want   int
		}{
			{"named", in, checkMethod, &grpc_health_v1.HealthCheckResponse{}, nil, 2},
			{"not named", in, "/grpc.health.v1.Health/Other", &grpc_health_v1.HealthCheckResponse{}, nil, 1},
			{"per call", plain, checkMethod, &grpc_health_v1.HealthCheckResponse{}, []grpc.CallOption{retrygrpc.CallOptions(retry.WithHedging(retry.Hedging{Delay: time.Millisecond}))}, 2},
			{"disabled", in, checkMethod, &grpc_health_v1.HealthCheckResponse{}, []grpc.CallOption{retrygrpc.Disable()}, 1},
		} {
			f := &hedgeInvoker{}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = c.in(ctx, c.method, nil, c.reply, nil, f.invoke, c.opts...)
			cancel()
			assert.Equal(t, c.want, f.calls, c.name)
		}
		f := &hedgeInvoker{} // its first attempt hangs until the deadline
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err = in(ctx, checkMethod, nil, &notProto{}, nil, f.invoke)
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "a reply that is no proto.Message: sent unhedged")
		assert.Equal(t, 1, f.calls)
	})
}

// TestANegativePushbackStopsHedges: the hedge fails
// with a retried code and a negative pushback: no third attempt is sent,
// and the call waits for the first, whose answer (here its own failure)
// ends it.
func TestANegativePushbackStopsHedges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, err := retrygrpc.UnaryClientInterceptor(bounded(5), retry.WithHedging(retry.Hedging{Attempts: 4, Delay: 20 * time.Millisecond}), retrygrpc.WithHedgedMethods(checkMethod))
		require.NoError(t, err)
		f := &hedgeInvoker{fail: map[int]error{2: status.Error(codes.Unavailable, "shedding")}, pushback: map[int]string{2: "-1"}}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err = in(ctx, checkMethod, nil, &grpc_health_v1.HealthCheckResponse{}, nil, f.invoke)
		assert.Equal(t, 2, f.calls, "no attempt after the refusal")
		var g *retry.GiveUpError
		require.ErrorAs(t, err, &g)
		assert.Equal(t, retry.ContextDone, g.Reason, "the first attempt outstanding until the deadline")
	})
}

// TestHedgingIsRefusedWhereItDoesNotBelong: a stream interceptor refuses
// hedging; a unary one refuses methods named without hedging, and
// hedging that names no method.
func TestHedgingIsRefusedWhereItDoesNotBelong(t *testing.T) {
	_, err := retrygrpc.StreamClientInterceptor(bounded(3), hedgeCheck...)
	assert.ErrorContains(t, err, "a stream is never hedged")
	_, err = retrygrpc.UnaryClientInterceptor(bounded(3), retrygrpc.WithHedgedMethods(checkMethod))
	assert.ErrorContains(t, err, "needs retry.WithHedging")
	_, err = retrygrpc.UnaryClientInterceptor(bounded(3), retry.WithHedging(retry.Hedging{Delay: time.Millisecond}))
	assert.ErrorContains(t, err, "retrygrpc.WithHedgedMethods")
	_, err = retrygrpc.UnaryClientInterceptor(bounded(3), retry.WithHedging(retry.Hedging{}), retrygrpc.WithHedgedMethods(checkMethod))
	assert.ErrorContains(t, err, "Delay must be positive")
}
