package otelretry_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

// answered is a base transport that answers every request 200 at once.
type answered struct{}

func (answered) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("ok")), Request: req}, nil
}

// TestAnAdaptersNoticesAreNotRetries: a retryhttp transport whose host
// budget, or host throttle, cannot be made for a new host tells its
// observers so (an Event of no failure, whose Err is a *HostBudgetError or
// a *HostThrottleError), and the request is answered at once. Nothing was
// retried: neither the retry counter nor the wait histogram records a
// point (each counted the notice as a retry of no wait).
func TestAnAdaptersNoticesAreNotRetries(t *testing.T) {
	broken := errors.New("no room")
	budgets := func(made *int) retry.Option {
		return retryhttp.WithHostBudgets(func() (*retry.Budget, error) {
			if *made++; *made > 1 {
				return nil, broken
			}
			return retry.DefaultBudget(), nil
		})
	}
	throttles := func(made *int) retry.Option {
		return retryhttp.WithHostThrottles(func() (*retry.Throttle, error) {
			if *made++; *made > 1 {
				return nil, broken
			}
			return retry.NewThrottle(2, time.Minute)
		})
	}
	var be *retryhttp.HostBudgetError
	var te *retryhttp.HostThrottleError
	for _, c := range []struct {
		option func(*int) retry.Option
		err    any
	}{{budgets, &be}, {throttles, &te}} {
		s := newSDK(t)
		var made int
		var notices []error
		tr, err := retryhttp.NewTransport(answered{}, oneSecond, append(s.in.Options("http", "fetch"), c.option(&made),
			retry.WithObserver(func(e retry.Event) { notices = append(notices, e.Err) }))...)
		require.NoError(t, err)
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://a.test/", nil)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()

		require.Len(t, notices, 1, "the notice")
		assert.ErrorAs(t, notices[0], c.err)
		m := s.metrics(t)
		_, retried := m["retrypolicy.retries"]
		assert.False(t, retried, "no retry recorded")
		_, waited := m["retrypolicy.wait.duration"]
		assert.False(t, waited, "no wait recorded")
	}
}
