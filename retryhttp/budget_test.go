package retryhttp_test

import (
	"context"
	"crypto/x509"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

// TestWhatEndsARequestWell pins which requests refill a token budget: one
// answered with a success or a status the classifier would not retry for
// any request (a 404); not one answered with a transient failure, retried
// or not (a GET's 503, an unsafe POST's 503, a connection reset), a
// server's refusal, or the caller's own cancellation. An error of the base
// transport that is not transient (a certificate refused) is an answer. Each request runs once (the
// strategy none), on a budget of (0.5, 1) whose one token is spent: a good
// end leaves 0.5.
func TestWhatEndsARequestWell(t *testing.T) {
	answer := func(code int, header ...string) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp := &http.Response{StatusCode: code, Header: http.Header{}, Body: http.NoBody, Request: req}
			for i := 0; i+1 < len(header); i += 2 {
				resp.Header.Add(header[i], header[i+1])
			}
			return resp, nil
		})
	}
	broken := roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, syscall.ECONNRESET })
	unknownCA := roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, x509.UnknownAuthorityError{} })
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name   string
		base   http.RoundTripper
		method string
		ctx    context.Context
		well   bool
	}{
		{"a 200", answer(200), http.MethodGet, context.Background(), true},
		{"a 404", answer(404), http.MethodGet, context.Background(), true},
		{"a 404 to a POST", answer(404), http.MethodPost, context.Background(), true},
		{"a 503", answer(503), http.MethodGet, context.Background(), false},
		{"a 503 to a POST, sent once", answer(503), http.MethodPost, context.Background(), false},
		{"a network error", broken, http.MethodGet, context.Background(), false},
		{"a network error of a POST, sent once", broken, http.MethodPost, context.Background(), false},
		{"a certificate refused, not transient", unknownCA, http.MethodGet, context.Background(), true},
		{"X-Should-Retry: false", answer(503, "X-Should-Retry", "false"), http.MethodGet, context.Background(), false},
		{"X-Envoy-Overloaded", answer(503, "X-Envoy-Overloaded", "1"), http.MethodGet, context.Background(), false},
		{"the caller's cancellation", answer(200), http.MethodGet, canceled, false},
	} {
		b, err := retry.NewBudget(0.5, 1)
		require.NoError(t, err)
		require.True(t, b.Withdraw())
		tr, err := retryhttp.NewTransport(c.base, retrypolicy.Strategy{Kind: retrypolicy.None}, retry.WithBudget(b))
		require.NoError(t, err)
		req, err := http.NewRequestWithContext(c.ctx, c.method, "http://svc.test/", strings.NewReader("x"))
		require.NoError(t, err)
		if resp, err := tr.RoundTrip(req); err == nil {
			resp.Body.Close()
		}
		want := 0.0
		if c.well {
			want = 0.5
		}
		assert.Equal(t, want, b.Tokens(), c.name)
	}
}

// TestEachHostHasABudgetByDefault: a transport given no budget gives each
// host a token budget of (0.1, 10): against a host that always answers
// 503, 50 requests of 3 attempts make 10 retries in all (the burst; no
// request ends well), while another host still gets its own 10. Told
// retry.WithoutBudget, the same requests make 100 retries.
func TestEachHostHasABudgetByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sent := map[string]int{}
		down := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			sent[req.URL.Host]++
			return &http.Response{StatusCode: 503, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
		})
		send := func(tr http.RoundTripper, host string, n int) {
			for range n {
				req, _ := http.NewRequest(http.MethodGet, "http://"+host+"/", nil)
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				resp.Body.Close()
			}
		}
		tr, err := retryhttp.NewTransport(down, threeAttempts)
		require.NoError(t, err)
		send(tr, "a.test", 50)
		send(tr, "b.test", 50)
		assert.Equal(t, map[string]int{"a.test": 60, "b.test": 60}, sent, "50 requests and the burst of 10 retries, each host")

		clear(sent)
		none, err := retryhttp.NewTransport(down, threeAttempts, retry.WithoutBudget())
		require.NoError(t, err)
		send(none, "a.test", 50)
		assert.Equal(t, map[string]int{"a.test": 150}, sent, "3 attempts each, unbounded")
	})
}
