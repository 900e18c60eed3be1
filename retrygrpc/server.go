package retrygrpc

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/retrypolicy/retrypolicy/retry"
)

// server is what a server interceptor keeps.
type server struct{ cfg config }

// newServer checks opts: WithCodes and WithNestedRetries are a server's.
func newServer(opts []Option) (*server, error) {
	cfg, err := build(opts)
	if err != nil {
		return nil, err
	}
	if cfg.clientOnly != "" {
		return nil, errors.New("retrygrpc: " + cfg.clientOnly + " is a client interceptor's option; a server interceptor takes WithCodes and WithNestedRetries")
	}
	return &server{cfg}, nil
}

// UnaryServerInterceptor returns an interceptor that runs each call's
// handler as an attempt of a layer: when the handler returns a retried
// code (Unavailable and ResourceExhausted, or WithCodes') after a retry
// layer it ran gave up retrying, the status carries the trailer
// [RetriedBelowTrailer], and a client interceptor of this package does
// not retry it. With WithNestedRetries, the trailer is never set. It
// returns an error naming an option that is invalid or not a server's.
func UnaryServerInterceptor(opts ...Option) (grpc.UnaryServerInterceptor, error) {
	s, err := newServer(opts)
	if err != nil {
		return nil, err
	}
	return s.unary, nil
}

// StreamServerInterceptor is [UnaryServerInterceptor] for streaming
// calls: the handler's stream carries the attempt in its context.
func StreamServerInterceptor(opts ...Option) (grpc.StreamServerInterceptor, error) {
	s, err := newServer(opts)
	if err != nil {
		return nil, err
	}
	return s.stream, nil
}

// unary is the unary server interceptor.
func (s *server) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if s.cfg.nested {
		return handler(ctx, req)
	}
	actx, attempt := retry.StartAttempt(ctx)
	resp, err := handler(actx, req)
	if attempt.End() && err != nil && s.cfg.retried(status.Code(err)) {
		_ = grpc.SetTrailer(ctx, retriedBelow()) // fails only for a call already over
	}
	return resp, err
}

// retriedBelow is the trailer of a status retried below.
func retriedBelow() metadata.MD { return metadata.Pairs(RetriedBelowTrailer, "1") }

// stream is the stream server interceptor.
func (s *server) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if s.cfg.nested {
		return handler(srv, ss)
	}
	actx, attempt := retry.StartAttempt(ss.Context())
	err := handler(srv, &attemptStream{ServerStream: ss, ctx: actx})
	if attempt.End() && err != nil && s.cfg.retried(status.Code(err)) {
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
