package retryhttp_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

// testCert returns the certificate of httptest's TLS servers and a pool
// that trusts it, made outside any bubble.
func testCert(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	s := httptest.NewUnstartedServer(http.NotFoundHandler())
	s.EnableHTTP2 = true
	s.StartTLS()
	defer s.Close()
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	return s.TLS.Certificates[0], pool
}

// h2Server is an HTTP/2 server over TLS on in-memory pipes, written frame
// by frame, that answers every stream it is sent with a REFUSED_STREAM
// (or, goAway, a graceful GOAWAY that leaves it unprocessed, then closes
// the connection), and counts the streams that reached it.
type h2Server struct {
	ln      *pipeListener
	cert    tls.Certificate
	goAway  bool
	streams atomic.Int64
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn
	served  chan struct{} // closed when serve returned
}

// close closes the listener and every connection, and waits for their
// goroutines.
func (s *h2Server) close() {
	s.ln.Close()
	<-s.served
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *h2Server) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			s.conn(tls.Server(c, &tls.Config{Certificates: []tls.Certificate{s.cert}, NextProtos: []string{"h2"}}))
		}()
	}
}

// conn serves one connection: the preface, SETTINGS, then each frame.
// Its frames are written by a goroutine of their own, so that it never
// blocks reading on a pipe the client is writing.
func (s *h2Server) conn(conn net.Conn) {
	out := make(chan []byte, 64)
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for b := range out {
			if _, err := conn.Write(b); err != nil {
				break
			}
		}
		for range out {
		}
	}()
	defer func() { close(out); <-wrote }()
	c := chanWriter(out)
	r := bufio.NewReader(conn)
	if _, err := io.ReadFull(r, make([]byte, 24)); err != nil {
		return
	}
	frame(c, 4, 0, 0, nil) // SETTINGS
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
			frame(c, 4, 1, 0, nil) // SETTINGS ACK
		case kind == 6 && flags&1 == 0:
			frame(c, 6, 1, 0, payload) // PING ACK
		case kind == 1: // HEADERS: a request
			s.streams.Add(1)
			if s.goAway {
				// GOAWAY: last stream 0, NO_ERROR; reading on, so that the
				// client is never left writing to a pipe nobody reads.
				frame(c, 7, 0, 0, make([]byte, 8))
				continue
			}
			frame(c, 3, 0, id, []byte{0, 0, 0, 7}) // RST_STREAM REFUSED_STREAM
		}
	}
}

// chanWriter hands what is written to a writer goroutine.
type chanWriter chan []byte

func (w chanWriter) Write(b []byte) (int, error) { w <- b; return len(b), nil }

// frame writes one HTTP/2 frame.
func frame(w io.Writer, kind, flags byte, id uint32, payload []byte) {
	b := make([]byte, 9, 9+len(payload))
	b[0], b[1], b[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	b[3], b[4] = kind, flags
	binary.BigEndian.PutUint32(b[5:], id)
	_, _ = w.Write(append(b, payload...))
}

// newH2Server starts an h2Server and a transport to it, and closes both
// with the test.
func newH2Server(t *testing.T, cert tls.Certificate, pool *x509.CertPool, goAway bool) (*h2Server, *http.Transport) {
	s := &h2Server{ln: &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}, cert: cert, goAway: goAway}
	s.served = make(chan struct{})
	go func() { s.serve(); close(s.served) }()
	tr := &http.Transport{DialContext: s.ln.dial, ForceAttemptHTTP2: true,
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "example.com"}}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		s.close()
	})
	return s, tr
}

// emptyBudget returns a token budget with nothing left.
func emptyBudget(t *testing.T) *retry.Budget {
	b, err := retry.NewBudget(0, 1)
	require.NoError(t, err)
	require.True(t, b.Withdraw())
	return b
}

// hiddenGet sends a GET through tr and returns how the call ended.
func hiddenGet(t *testing.T, base http.RoundTripper, opts ...retry.Option) (retry.End, []retry.Event, error) {
	return hiddenGetUpTo(t, base, 0, opts...)
}

// hiddenGetUpTo is hiddenGet, the request cancelled at its limit's hidden
// resend (0: none).
func hiddenGetUpTo(t *testing.T, base http.RoundTripper, limit int, opts ...retry.Option) (retry.End, []retry.Event, error) {
	return hiddenSend(t, base, "https://service.test/", limit, opts...)
}

// hiddenSend sends a GET of url through a transport over base, cancelled
// at its limit's hidden resend (0: none), and returns how the call ended
// and the hidden resends told.
func hiddenSend(t *testing.T, base http.RoundTripper, url string, limit int, opts ...retry.Option) (retry.End, []retry.Event, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var end retry.End
	var hidden []retry.Event
	opts = append(opts, retry.WithEnd(func(e retry.End) { end = e }), retry.WithObserver(func(e retry.Event) {
		if e.Hidden {
			if hidden = append(hidden, e); len(hidden) == limit {
				cancel()
			}
		}
	}))
	tr, err := retryhttp.NewTransport(base, threeAttempts, opts...)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return end, hidden, err
}

// TestHTTP2ResendsAreSeenAndPaidFor: against an HTTP/2 server that
// refuses every stream (and one that sends GOAWAY on each), net/http's
// own resends of one attempt reach the observer and the end's count; with
// no budget the attempt is sent 8 times (7 resends, over Go's backoff of
// 63 s, on the bubble's clock), or without end for GOAWAY (each on a new
// connection, at once: the caller gives up at the 20th), and under an empty budget the first
// resend is free and the second is stopped at its connection: 2 streams
// reach the server, and the call gives up budget_exhausted after one
// attempt.
func TestHTTP2ResendsAreSeenAndPaidFor(t *testing.T) {
	cert, pool := testCert(t)
	for _, goAway := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			srv, base := newH2Server(t, cert, pool, goAway)
			if goAway {
				// A GOAWAY on every new connection: net/http sends again at
				// once, on a new connection each time, without end; the
				// caller gives up at the 20th.
				end, hidden, err := hiddenGetUpTo(t, base, 20, retry.WithoutBudget())
				require.ErrorIs(t, err, context.Canceled)
				// The 20th resend is told as it asks for its connection, and
				// cancelled there.
				assert.Equal(t, int64(20), srv.streams.Load())
				assert.Equal(t, 20, end.HiddenResends)
				assert.Len(t, hidden, 20)
				return
			}
			end, hidden, err := hiddenGet(t, base, retry.WithoutBudget())
			require.Error(t, err)
			assert.True(t, end.HiddenSeen)
			assert.Equal(t, 1, end.Attempts, "one attempt: the error net/http gives up with is not transient")
			assert.Equal(t, int64(8), srv.streams.Load(), "8 sends of one attempt: goAway %v", goAway)
			assert.Equal(t, 7, end.HiddenResends)
			assert.Len(t, hidden, 7)
		})
		synctest.Test(t, func(t *testing.T) {
			srv, base := newH2Server(t, cert, pool, goAway)
			start := time.Now()
			end, hidden, err := hiddenGet(t, base, retry.WithBudget(emptyBudget(t)))
			var gu *retry.GiveUpError
			require.ErrorAs(t, err, &gu)
			assert.Equal(t, retry.BudgetExhausted, gu.Reason)
			assert.ErrorIs(t, err, retry.ErrResendRefused)
			assert.Equal(t, 1, end.Attempts)
			assert.Equal(t, int64(2), srv.streams.Load(), "the first send and one free resend: goAway %v", goAway)
			assert.Equal(t, 2, end.HiddenResends, "the free one, and the one refused")
			assert.Len(t, hidden, 2)
			assert.LessOrEqual(t, time.Since(start), time.Second, "stopped before Go's second backoff ends")
		})
	}
}

// TestAHedgedRequestsResendsAreSeenAndPaidFor: a hedged GET's attempts
// are watched as an unhedged one's: against an HTTP/2 server that refuses
// every stream, under an empty budget, the first attempt's first resend
// is free and its second is stopped at its connection (2 streams, not
// Go's 8), and no hedge is sent, the budget being empty.
func TestAHedgedRequestsResendsAreSeenAndPaidFor(t *testing.T) {
	cert, pool := testCert(t)
	synctest.Test(t, func(t *testing.T) {
		srv, base := newH2Server(t, cert, pool, false)
		end, hidden, err := hiddenGet(t, base, retry.WithBudget(emptyBudget(t)), retry.WithHedging(retry.Hedging{Attempts: 2, Delay: time.Hour}))
		var gu *retry.GiveUpError
		require.ErrorAs(t, err, &gu)
		assert.Equal(t, retry.BudgetExhausted, gu.Reason)
		assert.True(t, end.HiddenSeen)
		assert.Equal(t, 0, end.Hedges)
		assert.Equal(t, int64(2), srv.streams.Load(), "the first send and one free resend")
		assert.Equal(t, 2, end.HiddenResends, "the free one, and the one refused")
		assert.Len(t, hidden, 2)
	})
}

// h1Server is an HTTP/1.1 server on in-memory pipes that answers the
// first request of each connection, keeping it alive, once idle conns
// connections are open, and drops a connection when it is sent a second
// request (it closed it as the request arrived): the connections a client
// holds idle are all dead. It counts the requests that reached it. The
// second request holdAt names is held instead: read, never answered.
type h1Server struct {
	ln       *pipeListener
	idle     int
	holdAt   int           // the second request, counted over connections, that is read and held, not dropped (0: none)
	seconds  atomic.Int64  // second requests read
	ready    chan struct{} // closed when idle first requests arrived
	mu       sync.Mutex
	firsts   int
	conns    []net.Conn
	requests atomic.Int64
	wg       sync.WaitGroup
	served   chan struct{}
}

func newH1Server(t *testing.T, idle int) (*h1Server, *http.Transport) {
	s := &h1Server{ln: &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}, idle: idle, ready: make(chan struct{}), served: make(chan struct{})}
	go func() { s.serve(); close(s.served) }()
	tr := &http.Transport{DialContext: s.ln.dial, MaxIdleConnsPerHost: idle}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		s.ln.Close()
		<-s.served
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s, tr
}

func (s *h1Server) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			r := bufio.NewReader(c)
			for n := 0; ; n++ {
				req, err := http.ReadRequest(r)
				if err != nil {
					return
				}
				s.requests.Add(1)
				if n > 0 && s.seconds.Add(1) != int64(s.holdAt) {
					return // dropped as the request arrived
				}
				if n > 0 {
					continue // held: no answer, the connection kept open
				}
				s.mu.Lock()
				if s.firsts++; s.firsts == s.idle {
					close(s.ready)
				}
				s.mu.Unlock()
				<-s.ready
				io.Copy(io.Discard, req.Body)
				if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
					return
				}
			}
		}()
	}
}

// warm opens the server's idle connections from tr, each with an answered
// request, and leaves them idle in tr's pool.
func (s *h1Server) warm(t *testing.T, tr *http.Transport) {
	var wg sync.WaitGroup
	for range s.idle {
		wg.Go(func() {
			resp, err := tr.RoundTrip(httptest.NewRequest(http.MethodGet, "http://service.test/", nil).WithContext(context.Background()))
			if assert.NoError(t, err) {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	synctest.Wait()
	s.requests.Store(0)
}

// TestHTTP1ReplaysAreSeenAndPaidFor: a GET through a pool of 5 idle
// connections the server has dropped is replayed by net/http on each,
// then sent on a new one that answers: 6 sends, 5 hidden resends seen
// and told, one attempt. Under an empty budget the first replay is free
// and the second is stopped as it asks for its connection: the request is
// sent once more, and the call gives up budget_exhausted.
func TestHTTP1ReplaysAreSeenAndPaidFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, base := newH1Server(t, 5)
		srv.warm(t, base)
		end, hidden, err := hiddenGetHTTP(t, base, retry.WithoutBudget())
		require.NoError(t, err)
		assert.Equal(t, int64(6), srv.requests.Load())
		assert.Equal(t, 1, end.Attempts)
		assert.True(t, end.HiddenSeen)
		assert.Equal(t, 5, end.HiddenResends)
		assert.Len(t, hidden, 5)
	})
	synctest.Test(t, func(t *testing.T) {
		srv, base := newH1Server(t, 5)
		srv.warm(t, base)
		end, hidden, err := hiddenGetHTTP(t, base, retry.WithBudget(emptyBudget(t)))
		var gu *retry.GiveUpError
		require.ErrorAs(t, err, &gu)
		assert.Equal(t, retry.BudgetExhausted, gu.Reason)
		assert.Equal(t, int64(2), srv.requests.Load(), "sent once more, no more")
		assert.Equal(t, 1, end.Attempts)
		assert.Equal(t, 2, end.HiddenResends, "the free one, and the one refused")
		assert.Len(t, hidden, 2)
	})
}

// hiddenGetHTTP is hiddenGet of an http URL.
func hiddenGetHTTP(t *testing.T, base http.RoundTripper, opts ...retry.Option) (retry.End, []retry.Event, error) {
	return hiddenSend(t, base, "http://service.test/", 0, opts...)
}

// TestTheCallersTraceStillFires: the transport's trace is composed with
// the one the caller put in the request's context, whose hooks still see
// every connection: 6 GotConns for the request replayed on 5 dead
// connections.
func TestTheCallersTraceStillFires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, base := newH1Server(t, 5)
		srv.warm(t, base)
		var got int
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { got++ }})
		var end retry.End
		tr, err := retryhttp.NewTransport(base, threeAttempts, retry.WithEnd(func(e retry.End) { end = e }))
		require.NoError(t, err)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://service.test/", nil)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 6, got)
		assert.Equal(t, 5, end.HiddenResends)
	})
}

// TestALoopAboveSeesOneCall: a retry.Do of 3 attempts around a request
// through a transport whose budget is empty, to an HTTP/2 server that
// refuses every stream: the transport's one attempt is sent twice (its
// free resend) and given up budget_exhausted, which reports, so the loop
// above gives up retried_below after one call. 2 streams in all, where
// without the transport's stop each of the loop's attempts would be 8.
func TestALoopAboveSeesOneCall(t *testing.T) {
	cert, pool := testCert(t)
	synctest.Test(t, func(t *testing.T) {
		srv, base := newH2Server(t, cert, pool, false)
		tr, err := retryhttp.NewTransport(base, threeAttempts, retry.WithBudget(emptyBudget(t)))
		require.NoError(t, err)
		client := &http.Client{Transport: tr}
		calls := 0
		_, err = retry.Do(context.Background(), threeAttempts, func(ctx context.Context) (int, error) {
			calls++
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://service.test/", nil)
			if err != nil {
				return 0, err
			}
			resp, err := client.Do(req)
			if err != nil {
				return 0, err
			}
			resp.Body.Close()
			return resp.StatusCode, nil
		})
		var gu *retry.GiveUpError
		require.ErrorAs(t, err, &gu)
		assert.Equal(t, retry.RetriedBelow, gu.Reason)
		assert.Equal(t, 1, calls)
		assert.Equal(t, int64(2), srv.streams.Load())
	})
}

// TestWatchesUnderConcurrency: requests from several goroutines at once,
// each with a trace of its own that counts its connections and the
// connections it puts back idle (as the body is closed, after the
// attempt returned), see one each and no resend, without a data race (go
// test -race): a watch handed to another request never changes a trace
// net/http may still read.
func TestWatchesUnderConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
		var resends atomic.Int64
		var seen atomic.Int64
		tr, err := retryhttp.NewTransport(p.Transport, threeAttempts, retry.WithEnd(func(e retry.End) {
			resends.Add(int64(e.HiddenResends))
			if e.HiddenSeen {
				seen.Add(1)
			}
		}))
		require.NoError(t, err)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 25 {
					var got, idle int
					ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
						GotConn:     func(httptrace.GotConnInfo) { got++ },
						PutIdleConn: func(error) { idle++ },
					})
					req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL, nil)
					require.NoError(t, err)
					resp, err := tr.RoundTrip(req)
					require.NoError(t, err)
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					assert.Equal(t, 1, got)
					assert.LessOrEqual(t, idle, 1)
				}
			})
		}
		wg.Wait()
		assert.Zero(t, resends.Load())
		assert.Equal(t, int64(100), seen.Load())
	})
}

// lateConn is the client's end of an in-memory connection that counts the
// bytes written on it while it was open. Once settle is set, its close
// lets everything else in the bubble run first (a write already handed to
// it goes out, as bytes written to a socket before its close do): the
// order in which a connection's close loses the race with its writer.
type lateConn struct {
	net.Conn
	mu      sync.Mutex
	settle  bool
	closing bool
	closed  bool
	written int
}

func (c *lateConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return 0, net.ErrClosed
	}
	c.written += len(b)
	c.mu.Unlock()
	return c.Conn.Write(b)
}

func (c *lateConn) Close() error {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return nil
	}
	c.closing = true
	settle := c.settle
	c.mu.Unlock()
	if settle {
		synctest.Wait()
	}
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return c.Conn.Close()
}

// stoppedOnAnIdleConn is one GET through a transport over net/http's with
// an empty budget, over a pool of 3 idle connections the server has
// dropped but the third it is sent on (held: read, never answered). The
// first send and the first resend are dropped; the second resend is
// refused as it asks for its connection, and net/http, whose wait for a
// connection does not look at the request's context when an idle one is
// there, hands it the third about half the time. It returns the
// requests that reached the server, the bytes written on the connection
// handed to the refused resend (-1 when none was), and how the call ended.
func stoppedOnAnIdleConn(t *testing.T) (requests int64, written int, end retry.End, err error) {
	srv, base := newH1Server(t, 3)
	srv.holdAt = 3
	var dials atomic.Int64
	base.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := srv.ln.dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		dials.Add(1)
		return &lateConn{Conn: c}, nil
	}
	srv.warm(t, base)
	require.Equal(t, int64(3), dials.Load())
	written = -1
	var got, before int
	var stopped *lateConn
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if got++; got == 3 {
			stopped = info.Conn.(*lateConn)
			stopped.mu.Lock()
			stopped.settle, before = true, stopped.written
			stopped.mu.Unlock()
		}
	}})
	tr, err := retryhttp.NewTransport(base, threeAttempts, retry.WithBudget(emptyBudget(t)), retry.WithEnd(func(e retry.End) { end = e }))
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://service.test/", nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
	}
	synctest.Wait()
	if stopped != nil {
		stopped.mu.Lock()
		written = stopped.written - before
		stopped.mu.Unlock()
	}
	return srv.requests.Load(), written, end, err
}

// TestAStoppedHTTP1ResendWritesNothingOnAConnectionItGot: an HTTP/1.1
// resend the budget refused, which net/http hands an idle connection all
// the same, writes nothing on it, even when the connection's close would
// lose the race with its writer: the request reached the server twice
// (the first send and the free resend), and the call gave up
// budget_exhausted. Rounds run until the refused resend got a connection
// 3 times (net/http's choice between the connection and the cancelled
// context is random; 64 rounds miss it 3 times with a chance of about
// 1e-16), each in its own bubble, in about a millisecond.
func TestAStoppedHTTP1ResendWritesNothingOnAConnectionItGot(t *testing.T) {
	handed := 0
	for round := 0; round < 64 && handed < 3; round++ {
		synctest.Test(t, func(t *testing.T) {
			requests, written, end, err := stoppedOnAnIdleConn(t)
			var gu *retry.GiveUpError
			require.ErrorAs(t, err, &gu)
			assert.Equal(t, retry.BudgetExhausted, gu.Reason)
			assert.Equal(t, int64(2), requests, "sent once more, no more")
			assert.Equal(t, 2, end.HiddenResends)
			if written >= 0 {
				handed++
				assert.Zero(t, written, "nothing written on the refused resend's connection")
			}
		})
	}
	assert.Equal(t, 3, handed, "the refused resend got a connection")
}
