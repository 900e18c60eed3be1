package retryhttp_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stallingBody is a 503's body that sends a few bytes, then stalls for
// 20 s unless its request's context ends first, as net/http's transport
// ends a body's read when its request's context does.
type stallingBody struct {
	ctx  context.Context
	sent bool
}

func (b *stallingBody) Read(p []byte) (int, error) {
	if !b.sent {
		b.sent = true
		return copy(p, "busy"), nil
	}
	select {
	case <-b.ctx.Done():
		return 0, b.ctx.Err()
	case <-time.After(20 * time.Second):
		return 0, io.EOF
	}
}

func (b *stallingBody) Close() error { return nil }

// TestTheAttemptTimeoutBoundsTheDrain (N9): with retry.WithAttemptTimeout of
// 200 ms, five 503s whose bodies stall take 5 × 200 ms and the waits
// between them, not 5 × 20 s: draining a retried response is part of its
// attempt.
func TestTheAttemptTimeoutBoundsTheDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{},
				Body: &stallingBody{ctx: req.Context()}, Request: req}, nil
		})
		s := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5,
			Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 10 * time.Millisecond}}
		tr, err := retryhttp.NewTransport(base, s, retry.WithAttemptTimeout(200*time.Millisecond))
		require.NoError(t, err)
		req, err := http.NewRequest(http.MethodGet, "http://example.test/", nil)
		require.NoError(t, err)
		start := time.Now()
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4))
		resp.Body.Close()
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "the last 503, handed over")
		assert.True(t, strings.HasPrefix(string(body), "busy"))
		took := time.Since(start)
		assert.LessOrEqual(t, took, 4*(200*time.Millisecond+10*time.Millisecond), "four drains and four waits before the last attempt")
	})
}
