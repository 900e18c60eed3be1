package retrygrpc

import (
	"context"
	"errors"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
)

// StreamClientInterceptor returns an interceptor that retries the safe
// server-streaming calls under s until the first response message
// arrives, never after: the request message is held and sent again with
// each attempt, so it must not be changed once sent. Client-streaming and
// bidirectional calls, and calls that are not safe, pass through it
// untried. The stream is opened when the first message is received (or
// its header asked for): an error in opening it is returned then. It
// takes the options UnaryClientInterceptor takes; a call's Disable makes
// it pass through untried, and its CallOptions apply to it alone. It
// returns the strategy's *retrypolicy.ValidationError when s is invalid,
// and an error naming the option when an option is. The interceptor is
// safe for concurrent use.
func StreamClientInterceptor(s retrypolicy.Strategy, opts ...retry.Option) (grpc.StreamClientInterceptor, error) {
	c, err := newClient(s, opts)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, callOpts ...grpc.CallOption) (grpc.ClientStream, error) {
		own, rest := ownCallOptions(callOpts)
		if own.disabled || !desc.ServerStreams || desc.ClientStreams || !c.isSafe(ctx, method) {
			return streamer(ctx, desc, cc, method, rest...)
		}
		loop, err := own.apply(c.loop)
		if err != nil {
			return nil, err
		}
		return &retryStream{c: c, loop: loop, ctx: c.name(ctx, method), desc: desc, cc: cc, method: method, streamer: streamer, opts: rest}, nil
	}, nil
}

// retryStream is a server-streaming call retried until its first message.
type retryStream struct {
	c        *client
	loop     *retry.Loop[struct{}] // the interceptor's, or the call's own
	ctx      context.Context
	desc     *grpc.StreamDesc
	cc       *grpc.ClientConn
	method   string
	streamer grpc.Streamer
	opts     []grpc.CallOption

	recv sync.Mutex // one receiver at a time, held across the first message's loop

	mu     sync.Mutex // the fields below, held briefly: never across a wait or a receive
	req    any        // the request message, held for each attempt
	hasReq bool       // SendMsg was called
	closed bool       // CloseSend was called
	cur    grpc.ClientStream
	timer  attemptTimer // cur's, until its first message
	sent   int
	done   bool  // the first message arrived, or the loop ended
	err    error // the loop's error, returned by every RecvMsg after it
}

// errSecondMessage is what SendMsg returns for a second request message.
var errSecondMessage = status.Error(codes.Internal, "retrygrpc: a server-streaming call sends one request message")

// SendMsg holds the request message until the stream is opened.
func (s *retryStream) SendMsg(m any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil && s.done {
		return s.cur.SendMsg(m)
	}
	if s.hasReq {
		return errSecondMessage
	}
	s.req, s.hasReq = m, true
	return nil
}

// CloseSend closes the sending side, now or when the stream is opened.
func (s *retryStream) CloseSend() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.cur != nil && s.done {
		return s.cur.CloseSend()
	}
	return nil
}

// Header returns the header of the stream, opening its first attempt when
// none is open (an error in opening it is returned, and the first
// message's loop tries again). After a retry, it is the header of the
// attempt that delivered the first message.
func (s *retryStream) Header() (metadata.MD, error) {
	s.mu.Lock()
	var err error
	if s.cur == nil && !s.done {
		if err = s.open(s.ctx); err != nil {
			s.timer.end() // the first message's loop opens the next attempt
		}
	}
	cur := s.cur
	if err == nil {
		err = s.err
	}
	s.mu.Unlock()
	if cur == nil {
		return nil, err
	}
	return cur.Header()
}

// Trailer returns the trailer of the stream's current attempt.
func (s *retryStream) Trailer() metadata.MD {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return nil
	}
	return s.cur.Trailer()
}

// Context returns the context of the stream's current attempt, or the
// call's before one is open.
func (s *retryStream) Context() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return s.ctx
	}
	return s.cur.Context()
}

// RecvMsg receives the first message under the retry loop, then each
// message from the attempt that delivered it. The stream's other methods
// (Context, Header, Trailer, SendMsg) are not held up by the loop's waits
// or receives.
func (s *retryStream) RecvMsg(m any) error {
	s.recv.Lock()
	defer s.recv.Unlock()
	s.mu.Lock()
	done, cur, err := s.done, s.cur, s.err
	s.mu.Unlock()
	if !done {
		return s.first(m)
	}
	if cur == nil {
		return err
	}
	if err := cur.RecvMsg(m); err != nil {
		s.endAttempt() // the stream is over: its context too
		return err
	}
	return nil
}

// first runs the loop until the first message arrives, or it gives up.
func (s *retryStream) first(m any) error {
	var eof bool
	_, err := s.loop.Do(s.ctx, func(actx context.Context) (struct{}, error) {
		cur, err := s.current(actx)
		if err != nil {
			return struct{}{}, s.failed(actx, err, nil)
		}
		err = cur.RecvMsg(m)
		switch {
		case err == nil:
			s.mu.Lock()
			s.timer.stop() // the stream goes on under the call's deadline
			s.mu.Unlock()
			return struct{}{}, nil
		case errors.Is(err, io.EOF):
			eof = true     // the stream ended with no message: not a failure
			s.endAttempt() // and its context ends with it
			return struct{}{}, nil
		}
		s.mu.Lock()
		s.cur = nil
		s.mu.Unlock()
		return struct{}{}, s.failed(actx, err, cur.Trailer())
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	switch {
	case err != nil:
		s.err = given(err, s.sent)
	case eof:
		s.err = io.EOF
	}
	return s.err
}

// current returns the attempt's stream, opening one under actx when none
// is open.
func (s *retryStream) current(actx context.Context) (grpc.ClientStream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		if err := s.open(actx); err != nil {
			return nil, err
		}
	}
	return s.cur, nil
}

// endAttempt ends the current attempt's context.
func (s *retryStream) endAttempt() {
	s.mu.Lock()
	t := s.timer
	s.mu.Unlock()
	t.end()
}

// open opens the next attempt's stream under actx, and sends it what the
// caller has sent; s.mu is held.
func (s *retryStream) open(actx context.Context) error {
	s.sent++
	octx, t := s.c.attemptContext(actx, s.sent, true)
	cs, err := s.streamer(octx, s.desc, s.cc, s.method, s.opts...)
	if err != nil {
		s.timer = t
		return err
	}
	if s.hasReq {
		// io.EOF says the stream ended: its status is RecvMsg's.
		if err := cs.SendMsg(s.req); err != nil && !errors.Is(err, io.EOF) {
			s.timer = t
			return err
		}
	}
	if s.closed {
		if err := cs.CloseSend(); err != nil {
			s.timer = t
			return err
		}
	}
	s.cur, s.timer = cs, t
	return nil
}

// failed returns what the loop is told of an attempt that failed with err.
func (s *retryStream) failed(actx context.Context, err error, trailer metadata.MD) error {
	s.mu.Lock()
	t := s.timer
	s.mu.Unlock()
	fired := t.end()
	return s.c.classify(actx, s.ctx, err, trailer, fired)
}
