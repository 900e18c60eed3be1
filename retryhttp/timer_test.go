package retryhttp

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
)

// TestDiscardedResponseStopsItsTimer: a retried response, read and closed
// by the transport, stops its attempt's timer: it had stayed queued until
// the attempt timeout passed (about 390 bytes a retry, 3.9 MB over 10,000
// retries under retry.WithAttemptTimeout(time.Hour)).
func TestDiscardedResponseStopsItsTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := 0
		base := roundTrip(func(r *http.Request) (*http.Response, error) {
			n++
			code := http.StatusServiceUnavailable
			if n == 4 {
				code = http.StatusOK
			}
			return &http.Response{StatusCode: code, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("x")), Request: r}, nil
		})
		var retried []*StatusError
		s := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}
		tr, err := NewTransport(base, s, retry.WithAttemptTimeout(time.Hour), retry.WithObserver(func(e retry.Event) {
			var se *StatusError
			if errors.As(e.Err, &se) {
				retried = append(retried, se)
			}
		}))
		require.NoError(t, err)
		req, _ := http.NewRequest(http.MethodGet, "http://example.test/", nil)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Len(t, retried, 3)
		for i, se := range retried {
			assert.False(t, se.own.timer.Stop(), "retry %d's timer was still set", i+1)
		}
	})
}

// roundTrip is a base transport in memory.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
