package retrygrpc

import (
	"context"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/retrypolicy/retrypolicy/retry"
)

// ServerOption configures a server interceptor; the With functions of this
// file make them. A client interceptor's options are retry.Options, of
// another type: one given to a server interceptor does not compile.
type ServerOption struct{ set func(*server) }

// server is what a server interceptor keeps.
type server struct {
	codes       []codes.Code
	withoutMark bool
}

// WithMarkedCodes replaces the codes a server interceptor marks with
// [RetriedBelowTrailer], Unavailable and ResourceExhausted by default:
// give it the codes its clients retry (WithCodes). A code no call fails
// with (OK, or one gRPC does not know) is never marked.
func WithMarkedCodes(c ...codes.Code) ServerOption {
	c = append([]codes.Code(nil), c...)
	return ServerOption{func(s *server) { s.codes = c }}
}

// WithoutMark makes a server interceptor never set [RetriedBelowTrailer],
// so that the clients above retry a call as if nothing retried below it:
// the server's side of retry.WithNestedRetries.
func WithoutMark() ServerOption {
	return ServerOption{func(s *server) { s.withoutMark = true }}
}

// newServer applies opts.
func newServer(opts []ServerOption) *server {
	s := &server{codes: []codes.Code{codes.Unavailable, codes.ResourceExhausted}}
	for _, o := range opts {
		if o.set != nil {
			o.set(s)
		}
	}
	return s
}

// marks reports whether s marks a status of code retried below.
func (s *server) marks(code codes.Code) bool {
	return failing(code) && slices.Contains(s.codes, code)
}

// UnaryServerInterceptor returns an interceptor that runs each call's
// handler as an attempt of a layer: when the handler returns a retried
// code (Unavailable and ResourceExhausted, or WithMarkedCodes') after a
// retry layer it ran gave up retrying, the status carries the trailer
// [RetriedBelowTrailer], and a client interceptor of this package does
// not retry it. With WithoutMark, the trailer is never set.
func UnaryServerInterceptor(opts ...ServerOption) grpc.UnaryServerInterceptor {
	return newServer(opts).unary
}

// StreamServerInterceptor is [UnaryServerInterceptor] for streaming
// calls: the handler's stream carries the attempt in its context.
func StreamServerInterceptor(opts ...ServerOption) grpc.StreamServerInterceptor {
	return newServer(opts).stream
}

// unary is the unary server interceptor.
func (s *server) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if s.withoutMark {
		return handler(ctx, req)
	}
	actx, attempt := retry.StartAttempt(ctx)
	resp, err := handler(actx, req)
	if attempt.End() && err != nil && s.marks(status.Code(err)) {
		_ = grpc.SetTrailer(ctx, retriedBelow()) // fails only for a call already over
	}
	return resp, err
}

// retriedBelow is the trailer of a status retried below.
func retriedBelow() metadata.MD { return metadata.Pairs(RetriedBelowTrailer, "1") }

// stream is the stream server interceptor.
func (s *server) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if s.withoutMark {
		return handler(srv, ss)
	}
	actx, attempt := retry.StartAttempt(ss.Context())
	err := handler(srv, &attemptStream{ServerStream: ss, ctx: actx})
	if attempt.End() && err != nil && s.marks(status.Code(err)) {
		ss.SetTrailer(retriedBelow())
	}
	return err
}

// attemptStream is a server stream whose context is the attempt's.
type attemptStream struct {
	grpc.ServerStream
	ctx context.Context
}

// Context returns the attempt's context.
func (a *attemptStream) Context() context.Context { return a.ctx }
