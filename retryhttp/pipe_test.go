package retryhttp_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
)

// pipeServer is an HTTP server and a transport that reach each other
// through in-memory pipes: the whole of net/http on both sides, inside a
// synctest bubble, where every wait is on the fake clock.
type pipeServer struct {
	URL       string
	Transport *http.Transport
	conns     atomic.Int64 // connections the server accepted
	srv       *http.Server
	ln        *pipeListener
}

// newPipeServer serves h; the test's cleanup closes both sides, so that no
// goroutine outlives the bubble.
func newPipeServer(t *testing.T, h http.Handler) *pipeServer {
	t.Helper()
	p := &pipeServer{URL: "http://service.test", ln: &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}}
	p.srv = &http.Server{Handler: h, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			p.conns.Add(1)
		}
	}}
	p.Transport = &http.Transport{DialContext: p.ln.dial}
	go p.srv.Serve(p.ln)
	t.Cleanup(func() {
		p.Transport.CloseIdleConnections()
		p.srv.Close()
	})
	return p
}

// pipeListener hands the server the far ends of the pipes dialled.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	near, far := net.Pipe()
	select {
	case l.conns <- far:
		return near, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "service.test:80" }
