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
// each attempt, so it must not be changed once sent. Every stream goes
// through the loop until its first response message, and is counted,
// observed, budgeted and reported as a unary call is: client-streaming and
// bidirectional calls, calls that are not safe, and calls given Disable
// are sent once, their messages passed through as they are sent. A stream
// is opened when it is first used (a message sent or received, its header
// asked for): an error in opening it is returned then. It takes the
// options UnaryClientInterceptor takes; a call's CallOptions apply to it
// alone. Each call is named by its method (retry.CallName) for the loop's
// hooks. It returns the strategy's *retrypolicy.ValidationError when s is
// invalid, and an error naming the option when an option is. The
// interceptor is safe for concurrent use.
func StreamClientInterceptor(s retrypolicy.Strategy, opts ...retry.Option) (grpc.StreamClientInterceptor, error) {
	c, err := newClient(s, opts)
	if err != nil {
		return nil, err
	}
	if err := c.hedge.refuseStreams(); err != nil {
		return nil, err
	}
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, callOpts ...grpc.CallOption) (grpc.ClientStream, error) {
		own, rest := ownCallOptions(callOpts)
		loop, err := own.apply(c.loop)
		if err != nil {
			return nil, err
		}
		once := own.disabled || !desc.ServerStreams || desc.ClientStreams || !c.isSafe(ctx, method)
		return &retryStream{c: c, loop: loop, ctx: retry.NamedContext{Context: ctx, Name: method}, once: once, desc: desc, cc: cc, streamer: streamer, opts: gated(rest[:len(rest):len(rest)])}, nil
	}, nil
}

// retryStream is a streaming call under the loop until its first message:
// retried, when it is a safe server-streaming call, or else sent once.
type retryStream struct {
	c        *client
	loop     *retry.Loop[struct{}] // the interceptor's, or the call's own
	ctx      retry.NamedContext    // the call's, named by its method
	once     bool                  // sent once: its messages are passed through, not held
	desc     *grpc.StreamDesc
	cc       *grpc.ClientConn
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
	failed error // opening a stream sent once failed before the loop ran
}

// errSecondMessage is what SendMsg returns for a second request message.
var errSecondMessage = status.Error(codes.Internal, "retrygrpc: a server-streaming call sends one request message")

// SendMsg holds the request message until the stream is opened; a stream
// sent once is opened, and the message passed through.
func (s *retryStream) SendMsg(m any) error {
	s.mu.Lock()
	cur, err := s.passing()
	switch {
	case cur != nil || err != nil:
	case s.hasReq:
		err = errSecondMessage
	default:
		s.req, s.hasReq = m, true
	}
	failed := s.failed != nil
	s.mu.Unlock()
	if failed {
		return s.settle()
	}
	if cur == nil {
		return err
	}
	return cur.SendMsg(m)
}

// CloseSend closes the sending side, now or when the stream is opened.
func (s *retryStream) CloseSend() error {
	s.mu.Lock()
	cur, err := s.passing()
	if cur == nil {
		s.closed = true
	}
	failed := s.failed != nil
	s.mu.Unlock()
	if failed {
		return s.settle()
	}
	if cur == nil {
		return err
	}
	return cur.CloseSend()
}

// settle runs the loop of a stream sent once that could not be opened
// before its first receive, so that the call is counted, observed and
// reported all the same, and returns its error.
func (s *retryStream) settle() error {
	s.recv.Lock()
	defer s.recv.Unlock()
	s.mu.Lock()
	done, err := s.done, s.err
	s.mu.Unlock()
	if done {
		return err
	}
	return s.first(nil) // its attempt fails opening: it receives nothing
}

// passing returns the stream what is sent goes to at once: the current
// one once the first message arrived, or a stream sent once, opened now
// if it is not (an error in opening it is the loop's first attempt's
// too); nil while the request message is held. s.mu is held.
func (s *retryStream) passing() (grpc.ClientStream, error) {
	switch {
	case s.cur != nil && (s.done || s.once):
		return s.cur, nil
	case !s.once || s.done:
		return nil, s.err
	case s.failed != nil:
		return nil, s.failed
	}
	if err := s.openFirst(); err != nil {
		s.failed = err
		return nil, err
	}
	return s.cur, nil
}

// Header returns the header of the stream, opening its first attempt when
// none is open (an error in opening it is returned, and the first
// message's loop tries again). After a retry, it is the header of the
// attempt that delivered the first message.
func (s *retryStream) Header() (metadata.MD, error) {
	s.mu.Lock()
	var err error
	if s.cur == nil && !s.done && s.failed == nil {
		if err = s.openFirst(); err != nil {
			s.timer.end() // the first message's loop opens the next attempt
			if s.once {
				s.failed = err // and a stream sent once is not opened again
			}
		}
	}
	cur, failed := s.cur, s.failed != nil
	if err == nil {
		err = s.err
	}
	s.mu.Unlock()
	if failed {
		return nil, s.settle()
	}
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
		return &s.ctx
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
	_, err := s.loop.Do(&s.ctx, func(actx context.Context) (struct{}, error) {
		cur, err := s.current(actx)
		if err != nil {
			return struct{}{}, s.fail(actx, err, nil)
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
		return struct{}{}, s.fail(actx, err, cur.Trailer())
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
// is open: a stream sent once is not opened again after it failed to.
func (s *retryStream) current(actx context.Context) (grpc.ClientStream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed != nil {
		return nil, s.failed
	}
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
	octx, t := streamContext(actx, s.sent, s.loop.AttemptTimeout())
	cs, err := s.streamer(octx, s.desc, s.cc, s.ctx.Name, s.opts...)
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

// fail returns what the loop is told of an attempt that failed with err:
// a stream sent once is not sent again.
func (s *retryStream) fail(actx context.Context, err error, trailer metadata.MD) error {
	s.mu.Lock()
	t := s.timer
	s.mu.Unlock()
	err = s.c.classify(&s.ctx, outcome{actx: actx, err: err, trailer: trailer, timedOut: t.end()})
	if s.once && !retry.IsPermanent(err) {
		return retry.PermanentFailure(err) // as a unary call sent once
	}
	return err
}
