package retryhttp_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAHedgedRequestThatGivesUpHandsOverItsLastResponse: a hedged HEAD
// whose every attempt answers 503 gives up as an unhedged one does: the
// caller gets the last response, its body whole, not an error.
func TestAHedgedRequestThatGivesUpHandsOverItsLastResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{},
				Body: io.NopCloser(strings.NewReader("down")), Request: req}, nil
		})
		for _, hedged := range []bool{false, true} {
			opts := []retry.Option{retry.WithoutBudget()}
			if hedged {
				opts = append(opts, hedge20ms)
			}
			tr, err := retryhttp.NewTransport(base, hedgeStrategy, opts...)
			require.NoError(t, err)
			req, err := http.NewRequest(http.MethodHead, "http://service.test/", nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err, "hedged %v", hedged)
			assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, "down", string(body), "hedged %v", hedged)
			resp.Body.Close()
		}
	})
}

// TestARetriedResponseIsReadableUnderAClientTimeout: under an
// http.Client with a Timeout (which sets the request's Cancel channel),
// the response of an attempt after the first, and a hedge's, is read
// after RoundTrip returned: its request's context must still be live
// until the body is closed, and is ended then.
func TestARetriedResponseIsReadableUnderAClientTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var sent []*http.Request
		var n atomic.Int32
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			mu.Lock()
			sent = append(sent, req)
			mu.Unlock()
			if n.Add(1) == 1 {
				return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{},
					Body: http.NoBody, Request: req}, nil
			}
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{},
				Body: ctxBody{req.Context(), strings.NewReader("ok")}, Request: req}, nil
		})
		for _, hedged := range []bool{false, true} {
			n.Store(0)
			opts := []retry.Option{retry.WithoutBudget()}
			if hedged {
				opts = append(opts, hedge20ms)
			}
			tr, err := retryhttp.NewTransport(base, hedgeStrategy, opts...)
			require.NoError(t, err)
			resp, err := (&http.Client{Transport: tr, Timeout: time.Minute}).Get("http://service.test/")
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err, "hedged %v", hedged)
			assert.Equal(t, "ok", string(body))
			resp.Body.Close()
			mu.Lock()
			last := sent[len(sent)-1]
			mu.Unlock()
			assert.Error(t, last.Context().Err(), "the winner's context ended with its body: hedged %v", hedged)
		}
	})
}

// ctxBody is a body that fails once its request's context has ended, as
// net/http's does.
type ctxBody struct {
	ctx context.Context
	r   io.Reader
}

func (b ctxBody) Read(p []byte) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	return b.r.Read(p)
}

func (ctxBody) Close() error { return nil }

// TestAHedgedCallsAttemptsAllRunInHedge: every attempt of a hedged
// request, the first too, is sent under a context that says a hedged call
// runs (retry.InHedge), so that no layer below hedges it again.
func TestAHedgedCallsAttemptsAllRunInHedge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var in []bool
		var n atomic.Int32
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			mu.Lock()
			in = append(in, retry.InHedge(req.Context()))
			mu.Unlock()
			if n.Add(1) == 1 {
				<-req.Context().Done() // the first hangs: the hedge answers
				return nil, req.Context().Err()
			}
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
		})
		tr, err := retryhttp.NewTransport(base, hedgeStrategy, hedge20ms, retry.WithoutBudget())
		require.NoError(t, err)
		req, err := http.NewRequest(http.MethodGet, "http://service.test/", nil)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, []bool{true, true}, in)
	})
}

// switched is a protocol switch's body: a connection, read and written.
type switched struct {
	io.Reader
	io.Writer
	closed atomic.Bool
}

func (s *switched) Close() error { s.closed.Store(true); return nil }

// TestASwitchedProtocolsBodyStaysAWriterAndEndsItsContext: a 101
// response's body, a connection, is handed over still a writer, and
// closing it ends the attempt's own context (made here for the attempt
// timeout), as any body's close does.
func TestASwitchedProtocolsBodyStaysAWriterAndEndsItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sent *http.Request
		conn := &switched{Reader: strings.NewReader(""), Writer: io.Discard}
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			sent = req
			return &http.Response{StatusCode: http.StatusSwitchingProtocols, Header: http.Header{}, Body: conn, Request: req}, nil
		})
		tr, err := retryhttp.NewTransport(base, hedgeStrategy, retry.WithAttemptTimeout(time.Minute), retry.WithoutBudget())
		require.NoError(t, err)
		req, err := http.NewRequest(http.MethodGet, "http://service.test/", nil)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		rw, ok := resp.Body.(io.ReadWriteCloser)
		require.True(t, ok, "the body is still a writer")
		require.NoError(t, sent.Context().Err())
		require.NoError(t, rw.Close())
		assert.True(t, conn.closed.Load())
		assert.Error(t, sent.Context().Err(), "closing the body ended the attempt's context")
	})
}

// TestAPanicBelowEndsTheContextThatFollowsCancel: when the base transport
// panics under a request with a Cancel channel (an http.Client with a
// Timeout sets one), the context the loop ran under, which an attempt was
// sent under (a start hook's), still ends as RoundTrip unwinds, so that
// it does not stay registered under the caller's.
func TestAPanicBelowEndsTheContextThatFollowsCancel(t *testing.T) {
	var sent context.Context
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		sent = req.Context()
		panic("below")
	})
	tr, err := retryhttp.NewTransport(base, hedgeStrategy, retry.WithoutBudget(),
		retry.WithStart(func(ctx context.Context) context.Context { return ctx }))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://service.test/", nil)
	require.NoError(t, err)
	//lint:ignore SA1019 what an http.Client with a Timeout sets
	req.Cancel = make(chan struct{})
	assert.Panics(t, func() { _, _ = tr.RoundTrip(req) })
	require.NotNil(t, sent)
	assert.Error(t, sent.Err())
}
