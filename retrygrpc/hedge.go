package retrygrpc

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
)

// withHedgedMethods is the setting of WithHedgedMethods.
var withHedgedMethods = retry.NewAdditiveSetting[config]("retrygrpc.WithHedgedMethods")

// WithHedgedMethods names the unary methods, by their full name
// ("/package.Service/Method"), that a client interceptor given
// retry.WithHedging hedges: sending one twice at once must be harmless,
// which neither WithSafeMethods nor an idempotency key says. Given more
// than once, each adds its methods.
//
// A hedged call sends another attempt when the last has not answered
// within the hedging's delay, or at once when one fails with a retried
// code; the first answer that ends the call wins (a success, or a code
// not retried), the others are cancelled and waited for. Each attempt has
// a reply of its own (the caller's reply's ProtoReflect().New()) and its
// own header, trailer and peer; the winner's are copied into the
// caller's (the reply by proto.Reset then proto.Merge; the others into
// the holders grpc.Header, grpc.Trailer and grpc.Peer gave). A reply that
// is not a proto.Message is sent unhedged, retried as any safe call is.
// Each attempt after the first carries grpc-previous-rpc-attempts. A
// pushback trailer delays the next attempt, or (negative, invalid,
// repeated, or beyond the loop's limit) stops new ones while the
// outstanding may still win. See retry.WithHedging for the budget and
// the rest.
//
// With the pick_first balancer every attempt goes to the same backend,
// where a hedge helps least: a hedging client should spread its calls
// (round_robin, say: grpc.WithDefaultServiceConfig with
// {"loadBalancingConfig": [{"round_robin":{}}]}).
//
// A call is hedged too when its own CallOptions hold retry.WithHedging,
// whatever its method. Such a call's loop is made for it alone, so that a
// following delay (retry.Hedging.Quantile) has no samples there and its
// Delay serves; the interceptor's own loop keeps them across its calls.
func WithHedgedMethods(fullMethods ...string) retry.Option {
	m := append([]string(nil), fullMethods...)
	return withHedgedMethods.Option(func(c *config) {
		for _, name := range m {
			if !fullMethod(name) {
				c.refuse("WithHedgedMethods", name+" is not a full method name, such as \"/package.Service/Method\"")
			}
		}
		c.hedgedMethods = append(c.hedgedMethods, m...)
	})
}

// hedgeClient is what a client interceptor keeps for its hedged calls.
type hedgeClient struct {
	loop    *retry.Loop[*reply] // the options with hedging, or without (for a call's own)
	hedges  bool                // the interceptor's options give retry.WithHedging
	methods map[string]bool     // WithHedgedMethods'
}

// newHedgeClient returns the hedging part of an interceptor of s and
// loopOpts (its loop's options).
func newHedgeClient(s retrypolicy.Strategy, loopOpts []retry.Option, methods []string) (*hedgeClient, error) {
	h := &hedgeClient{hedges: slices.ContainsFunc(loopOpts, retry.Option.IsHedging), methods: make(map[string]bool, len(methods))}
	for _, m := range methods {
		h.methods[m] = true
	}
	var err error
	h.loop, err = retry.New[*reply](s, loopOpts...)
	return h, err
}

// withoutHedging returns opts without retry.WithHedging.
func withoutHedging(opts []retry.Option) []retry.Option {
	if !slices.ContainsFunc(opts, retry.Option.IsHedging) {
		return opts
	}
	return slices.DeleteFunc(slices.Clone(opts), retry.Option.IsHedging)
}

// hedged reports whether a call of method with callOpts is hedged: named
// by WithHedgedMethods under an interceptor with hedging, or given
// retry.WithHedging by its own CallOptions; never when disabled. It
// allocates nothing.
func (h *hedgeClient) hedged(method string, callOpts []grpc.CallOption) bool {
	named := h.hedges && h.methods[method]
	for _, o := range callOpts {
		if co, ok := o.(callOption); ok {
			if co.disable {
				return false
			}
			named = named || slices.ContainsFunc(co.opts, retry.Option.IsHedging)
		}
	}
	return named
}

// reply is one hedged attempt's reply, header, trailer and peer.
type reply struct {
	msg     proto.Message
	header  metadata.MD
	trailer metadata.MD
	peer    peer.Peer
}

// hedgedUnary is one hedged unary call.
type hedgedUnary struct {
	c       *client
	ctx     retry.NamedContext
	req     any
	reply   proto.Message // the caller's
	cc      *grpc.ClientConn
	invoker grpc.UnaryInvoker
	rest    []grpc.CallOption // the caller's for gRPC, without its holders
	holders holders           // the caller's header, trailer and peer holders
	sent    atomic.Int32

	mu   sync.Mutex
	last *reply // the last attempt to fail
}

// holders are the caller's grpc.Header, grpc.Trailer and grpc.Peer.
type holders struct {
	header, trailer []*metadata.MD
	peer            []*peer.Peer
}

// split returns callOpts without the holders it holds, and the holders.
func split(callOpts []grpc.CallOption) ([]grpc.CallOption, holders) {
	var h holders
	rest := make([]grpc.CallOption, 0, len(callOpts))
	for _, o := range callOpts {
		switch o := o.(type) {
		case grpc.HeaderCallOption:
			h.header = append(h.header, o.HeaderAddr)
		case grpc.TrailerCallOption:
			h.trailer = append(h.trailer, o.TrailerAddr)
		case grpc.PeerCallOption:
			h.peer = append(h.peer, o.PeerAddr)
		default:
			rest = append(rest, o)
		}
	}
	return rest, h
}

// fill copies r's header, trailer and peer into the holders.
func (h holders) fill(r *reply) {
	for _, p := range h.header {
		*p = r.header
	}
	for _, p := range h.trailer {
		*p = r.trailer
	}
	for _, p := range h.peer {
		*p = r.peer
	}
}

// runHedged sends u's call hedged when its reply is a proto.Message, and
// reports false, sending nothing, when it is not.
func (c *client) runHedged(u *unaryCall, callOpts []grpc.CallOption) (bool, error) {
	msg, ok := u.reply.(proto.Message)
	if !ok {
		return false, nil
	}
	own, rest := ownCallOptions(callOpts)
	loop := c.hedge.loop
	if own.given && len(own.opts) > 0 {
		var err error
		if loop, err = loop.With(own.opts...); err != nil {
			return true, errors.New("retrygrpc: CallOptions: " + err.Error())
		}
	}
	h := &hedgedUnary{c: c, ctx: u.ctx, req: u.req, reply: msg, cc: u.cc, invoker: u.invoker}
	h.rest, h.holders = split(rest)
	won, err := loop.Hedge(&h.ctx, h.attempt)
	if err != nil {
		if h.last != nil {
			h.holders.fill(h.last)
		}
		return true, given(err, int(h.sent.Load()))
	}
	proto.Reset(msg)
	proto.Merge(msg, won.msg)
	h.holders.fill(won)
	return true, nil
}

// attempt sends the call once, into a reply and holders of its own.
func (h *hedgedUnary) attempt(actx context.Context) (*reply, error) {
	n := int(h.sent.Add(1))
	r := &reply{msg: h.reply.ProtoReflect().New().Interface()}
	opts := append(slices.Clip(h.rest), grpc.Header(&r.header), grpc.Trailer(&r.trailer), grpc.Peer(&r.peer))
	err := h.invoker(previous(actx, n), h.ctx.Name, h.req, r.msg, h.cc, opts...)
	if err == nil {
		return r, nil
	}
	h.mu.Lock()
	h.last = r
	h.mu.Unlock()
	return nil, h.c.classify(&h.ctx, outcome{actx: actx, err: err, trailer: r.trailer, timedOut: actx.Err() != nil})
}

// check returns an error when the interceptor's hedging options do not go
// together: methods named with no hedging, or hedging that names none.
func (h *hedgeClient) check() error {
	switch {
	case len(h.methods) > 0 && !h.hedges:
		return errors.New("retrygrpc: retrygrpc.WithHedgedMethods needs retry.WithHedging")
	case h.hedges && len(h.methods) == 0:
		return errors.New("retrygrpc: retry.WithHedging hedges the methods retrygrpc.WithHedgedMethods names: name at least one (a call opts in with CallOptions)")
	}
	return nil
}

// refuseStreams returns an error when a stream interceptor is given
// hedging: a stream is never hedged.
func (h *hedgeClient) refuseStreams() error {
	if h.hedges || len(h.methods) > 0 {
		return errors.New("retrygrpc: a stream is never hedged: give retry.WithHedging and retrygrpc.WithHedgedMethods to UnaryClientInterceptor")
	}
	return nil
}
