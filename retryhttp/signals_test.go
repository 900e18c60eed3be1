package retryhttp_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

// brisk is a newcomer's strategy for an API call: five attempts, from 1 ms
// doubling to at most a second. The limit on a server's wait is then a
// minute (its cap, but at least a minute).
var brisk = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5,
	Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: time.Millisecond, Multiplier: 2, MaxDelay: time.Second}}

// TestServerSignals: each header of another stack, valid and not, in any
// letter case, through a transport of the brisk strategy: the attempts the
// server saw, the time the request took on the fake clock, what the caller
// got, and why the transport gave up ("" when it did not).
func TestServerSignals(t *testing.T) {
	post := func(t *testing.T, url string) *http.Request {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader("order"))
		require.NoError(t, err)
		return req
	}
	for _, c := range []struct {
		name     string
		steps    []step
		opts     []retry.Option
		req      func(*testing.T, string) *http.Request
		attempts int
		took     time.Duration
		status   int
		gaveUp   string
		wait     time.Duration // the End's GaveUp.Wait
	}{
		{name: "Retry-After-Ms, before Retry-After", steps: []step{status(503, "Retry-After-Ms", "1500", "Retry-After", "3"), status(200)},
			attempts: 2, took: 1500 * time.Millisecond, status: 200},
		{name: "Retry-After-Ms, a fraction rounded up", steps: []step{status(503, "retry-after-ms", "20.001"), status(200)},
			attempts: 2, took: 21 * time.Millisecond, status: 200},
		{name: "X-Ms-Retry-After-Ms", steps: []step{status(429, "x-ms-retry-after-ms", "2000", "Retry-After", "3"), status(200)},
			attempts: 2, took: 2 * time.Second, status: 200},
		{name: "Retry-After-Ms negative: ignored", steps: []step{status(503, "Retry-After-Ms", "-5", "Retry-After", "3"), status(200)},
			attempts: 2, took: 3 * time.Second, status: 200},
		{name: "Retry-After-Ms in an exponent form: ignored", steps: []step{status(503, "Retry-After-Ms", "1e3"), status(200)},
			attempts: 2, took: time.Millisecond, status: 200},
		{name: "Retry-After-Ms not a number: ignored", steps: []step{status(503, "Retry-After-Ms", "soon", "X-Ms-Retry-After-Ms", "40"), status(200)},
			attempts: 2, took: 40 * time.Millisecond, status: 200},
		{name: "Retry-After-Ms on a status not retried: the answer", steps: []step{status(404, "Retry-After-Ms", "40"), status(200)},
			attempts: 1, took: 0, status: 404},
		{name: "a few seconds asked of a brisk strategy are waited", steps: []step{status(503, "Retry-After", "30"), status(200)},
			attempts: 2, took: 30 * time.Second, status: 200},
		{name: "Retry-After 600 beyond the limit: not cut, the 429 returned", steps: []step{status(429, "Retry-After", "600"), status(200)},
			attempts: 1, took: 0, status: 429, gaveUp: "retry_after_too_long", wait: 600 * time.Second},
		{name: "Retry-After-Ms beyond the limit", steps: []step{status(503, "Retry-After-Ms", "90000"), status(200)},
			attempts: 1, took: 0, status: 503, gaveUp: "retry_after_too_long", wait: 90 * time.Second},
		{name: "Retry-After-Ms saturates", steps: []step{status(503, "Retry-After-Ms", "99999999999999999999999"), status(200)},
			attempts: 1, took: 0, status: 503, gaveUp: "retry_after_too_long", wait: math.MaxInt64},
		{name: "X-Should-Retry: false", steps: []step{status(503, "X-Should-Retry", "false"), status(200)},
			attempts: 1, took: 0, status: 503, gaveUp: "not_retryable"},
		{name: "X-Should-Retry: FALSE", steps: []step{status(429, "x-should-retry", "FALSE", "Retry-After", "1"), status(200)},
			attempts: 1, took: 0, status: 429, gaveUp: "not_retryable"},
		{name: "X-Should-Retry: false on a success", steps: []step{status(200, "X-Should-Retry", "false")},
			attempts: 1, took: 0, status: 200},
		{name: "X-Should-Retry: true on a 409", steps: []step{status(409, "X-Should-Retry", "true"), status(200)},
			attempts: 2, took: time.Millisecond, status: 200},
		{name: "X-Should-Retry: True, with its wait", steps: []step{status(409, "X-Should-Retry", "True", "Retry-After-Ms", "250"), status(200)},
			attempts: 2, took: 250 * time.Millisecond, status: 200},
		{name: "X-Should-Retry: true on a 200", steps: []step{status(200, "X-Should-Retry", "true"), status(500)},
			attempts: 1, took: 0, status: 200},
		{name: "X-Should-Retry: true on an unsafe request: sent once, a failure", steps: []step{status(409, "X-Should-Retry", "true"), status(200)}, req: post,
			attempts: 1, took: 0, status: 409, gaveUp: "not_retryable"},
		{name: "X-Should-Retry: true never overrides Retried-Below", steps: []step{status(409, "X-Should-Retry", "true", "Retried-Below", "1"), status(200)},
			attempts: 1, took: 0, status: 409, gaveUp: "retried_below"},
		{name: "X-Should-Retry: maybe means nothing", steps: []step{status(409, "X-Should-Retry", "maybe"), status(200)},
			attempts: 1, took: 0, status: 409},
		{name: "X-Should-Retry: yes means nothing on a 503", steps: []step{status(503, "X-Should-Retry", "yes"), status(200)},
			attempts: 2, took: time.Millisecond, status: 200},
		{name: "X-Envoy-Overloaded", steps: []step{status(503, "x-envoy-overloaded", "true"), status(200)},
			attempts: 1, took: 0, status: 503, gaveUp: "not_retryable"},
		{name: "X-Envoy-Overloaded sent twice, the first empty: not retried", steps: []step{status(503, "X-Envoy-Overloaded", "", "X-Envoy-Overloaded", "1"), status(200)},
			attempts: 1, took: 0, status: 503, gaveUp: "not_retryable"},
		{name: "X-Should-Retry sent twice, true then false: not retried", steps: []step{status(503, "X-Should-Retry", "true", "X-Should-Retry", "false"), status(200)},
			attempts: 1, took: 0, status: 503, gaveUp: "not_retryable"},
		{name: "Retry-After-Ms sent thrice: the longest valid value", steps: []step{status(503, "Retry-After-Ms", "soon", "Retry-After-Ms", "200", "Retry-After-Ms", "50"), status(200)},
			attempts: 2, took: 200 * time.Millisecond, status: 200},
		{name: "Retry-After-Ms with a sign: ignored", steps: []step{status(503, "Retry-After-Ms", "+30"), status(200)},
			attempts: 2, took: time.Millisecond, status: 200},
		{name: "X-Envoy-Overloaded beside X-Should-Retry: true", steps: []step{status(503, "X-Envoy-Overloaded", "1", "X-Should-Retry", "true"), status(200)},
			attempts: 1, took: 0, status: 503, gaveUp: "not_retryable"},
		{name: "WithoutServerSignals: Retry-After alone", steps: []step{status(503, "Retry-After-Ms", "1500", "Retry-After", "3", "X-Should-Retry", "false"), status(200)},
			opts: []retry.Option{retryhttp.WithoutServerSignals()}, attempts: 2, took: 3 * time.Second, status: 200},
		{name: "WithoutServerSignals: X-Should-Retry: true ignored", steps: []step{status(409, "X-Should-Retry", "true"), status(200)},
			opts: []retry.Option{retryhttp.WithoutServerSignals()}, attempts: 1, took: 0, status: 409},
		{name: "WithoutServerSignals: Retry-After still never cut", steps: []step{status(503, "Retry-After", "600"), status(200)},
			opts: []retry.Option{retryhttp.WithoutServerSignals()}, attempts: 1, took: 0, status: 503, gaveUp: "retry_after_too_long", wait: 600 * time.Second},
		{name: "a classifier of one's own: the signals still apply", steps: []step{status(418, "X-Should-Retry", "false"), status(200)},
			opts:     []retry.Option{retryhttp.WithClassifier(func(resp *http.Response, err error) bool { return resp != nil && resp.StatusCode == 418 })},
			attempts: 1, took: 0, status: 418, gaveUp: "not_retryable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &scripted{steps: c.steps}
				p := newPipeServer(t, s)
				var ends []retry.End
				opts := append([]retry.Option{retry.WithEnd(func(e retry.End) { ends = append(ends, e) })}, c.opts...)
				tr, err := retryhttp.NewTransport(p.Transport, brisk, opts...)
				require.NoError(t, err)
				req := get(t, p.URL)
				if c.req != nil {
					req = c.req(t, p.URL)
				}
				ctx, attempt := retry.StartAttempt(context.Background())
				begin := time.Now()
				code, _, err := do(t, tr, req.WithContext(ctx))
				require.NoError(t, err)
				assert.Equal(t, c.took, time.Since(begin), "the waits")
				assert.Equal(t, c.attempts, s.attempts(), "attempts the server saw")
				assert.Equal(t, c.status, code)
				require.Len(t, ends, 1)
				var reason string
				var wait time.Duration
				if ends[0].GaveUp != nil {
					reason, wait = ends[0].GaveUp.Reason.String(), ends[0].GaveUp.Wait
				}
				assert.Equal(t, c.gaveUp, reason)
				assert.Equal(t, c.wait, wait, "the wait asked, in the end callback")
				// A layer that gave up reports when it retried, or met a
				// marked response: a server's refusal or a long wait, after
				// one attempt, is no report.
				assert.Equal(t, c.gaveUp == "retried_below", attempt.End(), "reported")
			})
		})
	}
}

// TestALongWaitInsideAJobIsDeferredWhateverTheThreshold: inside a queue's
// job a wait asked beyond the limit is given up Deferred with the wait
// asked, even under a threshold longer than it, after one call; the
// caller gets the error that carries it, not the response.
func TestALongWaitInsideAJobIsDeferredWhateverTheThreshold(t *testing.T) {
	for _, threshold := range []time.Duration{5 * time.Second, 24 * time.Hour} {
		synctest.Test(t, func(t *testing.T) {
			s := &scripted{steps: []step{status(429, "Retry-After", "600"), status(200)}}
			p := newPipeServer(t, s)
			tr, err := retryhttp.NewTransport(p.Transport, brisk)
			require.NoError(t, err)
			req := get(t, p.URL).WithContext(retry.DeferAfter(context.Background(), threshold))
			_, _, err = do(t, tr, req)
			var gu *retry.GiveUpError
			require.True(t, errors.As(err, &gu), "%v", err)
			assert.Equal(t, retry.Deferred, gu.Reason)
			assert.Equal(t, 600*time.Second, gu.Wait)
			wait, ok := retry.DeferredWait(err)
			assert.True(t, ok)
			assert.Equal(t, 600*time.Second, wait)
			assert.Equal(t, 1, s.attempts())
		})
	}
}

// TestParseRetryAfterMs: the forms a wait in milliseconds takes, and those
// it does not.
func TestParseRetryAfterMs(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"0": 0, "1500": 1500 * time.Millisecond, "0.0": 0, "0.1": time.Millisecond,
		"2.000": 2 * time.Millisecond, "2.5": 3 * time.Millisecond, "9223372036854": 9223372036854 * time.Millisecond,
		"9223372036855": math.MaxInt64, "18446744073709551615.5": math.MaxInt64, "99999999999999999999999": math.MaxInt64,
	} {
		got, ok := retryhttp.ParseRetryAfterMs(in)
		assert.True(t, ok, "%q", in)
		assert.Equal(t, want, got, "%q", in)
	}
	for _, in := range []string{"", " ", " 7 ", "7 ", "-1", "+1", "+30", "99999999999999999999x", "1e3", "1.", ".5", "1.2.3", "0x10", "1 000", "١٢", "NaN", "inf"} {
		_, ok := retryhttp.ParseRetryAfterMs(in)
		assert.False(t, ok, "%q", in)
	}
}
