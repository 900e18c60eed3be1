package retrygrpc_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retrygrpc"
)

// h2conn is the server's end of one in-memory HTTP/2 connection, written
// frame by frame: its frames go out through a goroutine of its own, so that
// the server never blocks on a pipe the client writes to, and a frame
// written once the connection has ended is dropped.
type h2conn struct {
	mu     sync.Mutex
	closed bool
	out    chan []byte
}

// write sends one frame.
func (c *h2conn) write(kind, flags byte, id uint32, payload []byte) {
	b := make([]byte, 9, 9+len(payload))
	b[0], b[1], b[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	b[3], b[4] = kind, flags
	binary.BigEndian.PutUint32(b[5:], id)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.out <- append(b, payload...)
	}
}

// serveH2 reads the client's preface, sends settings (a SETTINGS frame's
// payload), then reads each frame until conn ends: it acknowledges
// settings and pings, and hands each HEADERS frame's stream to headers.
func serveH2(conn net.Conn, c *h2conn, settings []byte, headers func(id uint32)) {
	defer conn.Close()
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for b := range c.out {
			if _, err := conn.Write(b); err != nil {
				break
			}
		}
		for range c.out {
		}
	}()
	defer func() {
		c.mu.Lock()
		c.closed = true
		close(c.out)
		c.mu.Unlock()
		<-wrote
	}()
	r := bufio.NewReader(conn)
	if _, err := io.ReadFull(r, make([]byte, 24)); err != nil {
		return
	}
	c.write(4, 0, 0, settings)
	head := make([]byte, 9)
	for {
		if _, err := io.ReadFull(r, head); err != nil {
			return
		}
		n := int(head[0])<<16 | int(head[1])<<8 | int(head[2])
		kind, flags, id := head[3], head[4], binary.BigEndian.Uint32(head[5:])&0x7fffffff
		payload := make([]byte, n)
		if _, err := io.ReadFull(r, payload); err != nil {
			return
		}
		switch {
		case kind == 4 && flags&1 == 0:
			c.write(4, 1, 0, nil)
		case kind == 6 && flags&1 == 0:
			c.write(6, 1, 0, payload)
		case kind == 1:
			headers(id)
		}
	}
}

// h2server is what the in-memory HTTP/2 test servers share: each
// connection a pipe whose far end serveH2 serves, ended and waited for by
// close.
type h2server struct {
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []*h2conn
	ends  []net.Conn
}

// open returns the client's end of a new connection, served with
// settings, headers told of each stream opened on it.
func (s *h2server) open(settings []byte, headers func(c *h2conn, id uint32)) net.Conn {
	near, far := net.Pipe()
	c := &h2conn{out: make(chan []byte, 64)}
	s.mu.Lock()
	s.conns = append(s.conns, c)
	s.ends = append(s.ends, far)
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		serveH2(far, c, settings, func(id uint32) { headers(c, id) })
	}()
	return near
}

// close ends every connection and waits for its server.
func (s *h2server) close() {
	s.mu.Lock()
	for _, c := range s.ends {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// draining is an HTTP/2 server on in-memory pipes whose settings allow no
// stream at all (SETTINGS_MAX_CONCURRENT_STREAMS 0), so that a call waits
// on each connection for a stream it is never given, until the test sends
// that connection a GOAWAY. grpc-go then retries the call transparently on
// a new connection, since no stream was created, and would do so without
// limit: nothing of the call reaches the server but a connection each
// time.
type draining struct {
	h2server
	goaways int
	headers int // HEADERS frames received: never, the settings allowing none
}

func (s *draining) dial(context.Context, string) (net.Conn, error) {
	return s.open([]byte{0, 3, 0, 0, 0, 0}, func(*h2conn, uint32) {
		s.mu.Lock()
		s.headers++
		s.mu.Unlock()
	}), nil
}

// goaway sends the newest connection a GOAWAY that says no stream was
// processed, and reports whether that connection had not had one yet.
func (s *draining) goaway() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.conns) != s.goaways+1 {
		return false
	}
	s.goaways++
	s.conns[len(s.conns)-1].write(7, 0, 0, make([]byte, 8))
	return true
}

// goawayed is how a call to a draining server went.
type goawayed struct {
	end     retry.End
	hidden  int // the observer's events whose Hidden is true
	err     error
	goaways int // the connections the call waited on for a stream
	conns   int // the connections it opened
	headers int
}

// goawayCall makes one Check through an interceptor of bounded(3) with
// opts, over a connection with WithHiddenResends, to a draining server,
// inside a synctest bubble. Each time the call has settled (waiting for a
// stream: nothing else in the bubble runs), the test sends the newest
// connection a GOAWAY; after most GOAWAYs it cancels the call instead.
func goawayCall(t *testing.T, most int, opts ...retry.Option) (g goawayed) {
	t.Helper()
	srv := &draining{}
	defer srv.close()
	unary, err := retrygrpc.UnaryClientInterceptor(bounded(3), append(opts, retrygrpc.WithSafeMethods(checkMethod),
		retry.WithEnd(func(e retry.End) { g.end = e }),
		retry.WithObserver(func(e retry.Event) {
			if e.Hidden {
				g.hidden++
			}
		}))...)
	require.NoError(t, err)
	cc, err := grpc.NewClient("passthrough:///draining", grpc.WithContextDialer(srv.dial),
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUnaryInterceptor(unary),
		grpc.WithDisableRetry(), retrygrpc.WithHiddenResends())
	require.NoError(t, err)
	defer cc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- check(ctx, cc) }()
	for {
		synctest.Wait()
		select {
		case g.err = <-done:
			srv.mu.Lock()
			g.goaways, g.conns, g.headers = srv.goaways, len(srv.conns), srv.headers
			srv.mu.Unlock()
			return g
		default:
		}
		if srv.goaways == most {
			cancel()
			continue
		}
		require.True(t, srv.goaway(), "the call settled waiting on its newest connection")
	}
}

// TestAGoAwayWhileACallWaitsForAStreamIsPaidFor: a server that lets no
// stream open and sends a GOAWAY to each connection a call waits on.
// grpc-go retries such a call transparently, retries disabled, without
// limit (no stream was created): without a budget, after 12 GOAWAYs the
// call was waiting on a thirteenth connection when the test cancelled it,
// and every resend reached the observer and End.HiddenResends: at least
// one a GOAWAY, and more when grpc-go, before its balancer has heard of
// the GOAWAY, picks the draining connection again and fails there at once
// (how often is the scheduler's: under -race on a loaded machine one
// GOAWAY in about 150 made more than a hundred). Under an empty budget
// the first resend is free and the second refused, before its stream's
// headers: the call waited on 2 connections at most (1 when the second
// resend came from the first GOAWAY), the refused resend's stream failed
// on the connection it picked (the next, dialled, or the draining one),
// and the loop gave up budget_exhausted; both resends were told and
// counted.
func TestAGoAwayWhileACallWaitsForAStreamIsPaidFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := goawayCall(t, 12, retry.WithoutBudget())
		assert.Equal(t, codes.Canceled, status.Code(g.err), "still waiting when cancelled")
		assert.Equal(t, 12, g.goaways)
		assert.Equal(t, 13, g.conns, "and waiting on a thirteenth")
		assert.Zero(t, g.headers, "no stream ever reached the server")
		assert.Equal(t, 1, g.end.Attempts)
		assert.True(t, g.end.HiddenSeen)
		assert.GreaterOrEqual(t, g.end.HiddenResends, 12, "a resend a GOAWAY at least")
		assert.Equal(t, g.end.HiddenResends, g.hidden, "each one told")
	})
	synctest.Test(t, func(t *testing.T) {
		b, err := retry.NewBudget(0, 1)
		require.NoError(t, err)
		require.True(t, b.Withdraw())
		g := goawayCall(t, 12, retry.WithBudget(b))
		var gu *retry.GiveUpError
		require.ErrorAs(t, g.err, &gu)
		assert.Equal(t, retry.BudgetExhausted, gu.Reason)
		assert.Contains(t, []int{1, 2}, g.goaways, "waited on two connections at most")
		assert.Contains(t, []int{g.goaways, g.goaways + 1}, g.conns, "none dialled past the one the refused resend picked")
		assert.Zero(t, g.headers)
		assert.Equal(t, 1, g.end.Attempts)
		assert.Equal(t, 2, g.end.HiddenResends, "the refused resend counted too")
		assert.Equal(t, 2, g.hidden)
	})
}
