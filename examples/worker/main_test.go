package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWorkerOutput runs the worker against the service on loopback, on
// synctest's fake clock (no real sleeping), and checks what it prints: two
// backoff waits, the server's two seconds, the answer, and the 404 answered
// at once, never retried.
func TestWorkerOutput(t *testing.T) {
	srv := httptest.NewServer(newFlakyService())
	defer srv.Close()
	var out strings.Builder
	synctest.Test(t, func(t *testing.T) {
		begin := time.Now()
		require.NoError(t, worker{base: srv.URL, transport: &http.Transport{DisableKeepAlives: true}, out: &out}.run(context.Background()))
		assert.Equal(t, 2600*time.Millisecond, time.Since(begin), "200 ms, 400 ms, then the 2 s asked for")
	})
	assert.Equal(t, `job report:
  failure 1: retryhttp: HTTP 503; 1 in the window; waiting 200ms (the backoff after 1 failure)
  failure 2: retryhttp: HTTP 503; 2 in the window; waiting 400ms (the backoff after 2 failures)
  failure 3: retryhttp: HTTP 429; 3 in the window; waiting 2s (the server's Retry-After, longer than the backoff's 800ms)
  done: report 1 written
job missing:
  answered 404 Not Found: not a failure a retry fixes
`, out.String())
}
