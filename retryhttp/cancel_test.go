package retryhttp_test

import (
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

// TestCancelledRequestSendsNoMoreAttempts: an http.Client with a Timeout
// cancels a request to a transport it does not know through req.Cancel, on
// a timer of its own beside the context's. When that channel closes first
// (it had, in 3 runs of 20, just before the deadline), no further attempt
// is sent, and the transport gives up as ContextDone: it had sent another
// attempt, which failed "request canceled" and was counted not retryable.
func TestCancelledRequestSendsNoMoreAttempts(t *testing.T) {
	t.Run("closed while the first retry is decided", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := &scripted{steps: []step{status(503), status(200)}}
			p := newPipeServer(t, s)
			cancel := make(chan struct{})
			var ends []retry.End
			tr, err := retryhttp.NewTransport(p.Transport, fixed100ms,
				retry.WithObserver(func(retry.Event) { close(cancel) }),
				retry.WithEnd(func(e retry.End) { ends = append(ends, e) }))
			require.NoError(t, err)
			req := get(t, p.URL)
			//lint:ignore SA1019 what http.Client sets for a transport it does not know
			req.Cancel = cancel
			_, err = tr.RoundTrip(req)
			var gu *retry.GiveUpError
			require.ErrorAs(t, err, &gu)
			assert.Equal(t, retry.ContextDone, gu.Reason)
			assert.ErrorContains(t, err, "the request was canceled")
			assert.Equal(t, 1, s.attempts(), "the server saw one attempt")
			require.Len(t, ends, 1)
			assert.Equal(t, 1, ends[0].Attempts, "and the end says one")
		})
	})
	t.Run("closed before the first attempt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := &scripted{steps: []step{status(200)}}
			p := newPipeServer(t, s)
			tr, err := retryhttp.NewTransport(p.Transport, fixed100ms)
			require.NoError(t, err)
			cancel := make(chan struct{})
			close(cancel)
			req := get(t, p.URL)
			//lint:ignore SA1019 as above
			req.Cancel = cancel
			_, err = tr.RoundTrip(req)
			var gu *retry.GiveUpError
			require.ErrorAs(t, err, &gu)
			assert.Equal(t, retry.ContextDone, gu.Reason)
			assert.Equal(t, 0, s.attempts())
		})
	})
	t.Run("a request without a Cancel channel is as before", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := &scripted{steps: []step{status(503), status(200)}}
			p := newPipeServer(t, s)
			tr, err := retryhttp.NewTransport(p.Transport, fixed100ms)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(get(t, p.URL))
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, 2, s.attempts())
		})
	})
}
