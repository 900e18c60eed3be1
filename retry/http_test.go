package retry_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

// statusError is an HTTP failure, as a worker's client would report it.
type statusError struct {
	code       int
	retryAfter string
}

func (e *statusError) Error() string { return "HTTP " + strconv.Itoa(e.code) }

// get calls url once; a 5xx or 429 is retryable (with its Retry-After), any
// other failure status is permanent.
func get(ctx context.Context, client *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", retry.Permanent(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return "", err
	case resp.StatusCode == http.StatusOK:
		return string(body), nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		serr := &statusError{resp.StatusCode, resp.Header.Get("Retry-After")}
		if d, ok := retryhttp.ParseRetryAfter(serr.retryAfter, time.Now()); ok {
			return "", retry.After(serr, d)
		}
		return "", serr
	}
	return "", retry.Permanent(&statusError{code: resp.StatusCode})
}

// TestRetryOverHTTP runs Retry against a real server on loopback that
// answers 503, 503, 429 with Retry-After: 2, then 200: three retries, the
// third waiting the two seconds the server asked for.
func TestRetryOverHTTP(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1, 2:
			w.WriteHeader(http.StatusServiceUnavailable)
		case 3:
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			fmt.Fprint(w, "ok")
		}
	}))
	defer srv.Close()
	synctest.Test(t, func(t *testing.T) {
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		s := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5, Window: time.Minute,
			Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: 100 * time.Millisecond, Multiplier: 2, MaxDelay: 10 * time.Second}}
		var waits []time.Duration
		body, err := retry.Do(context.Background(), s, func(ctx context.Context) (string, error) { return get(ctx, client, srv.URL) },
			retry.WithObserver(func(e retry.Event) { waits = append(waits, e.Wait) }))
		require.NoError(t, err)
		assert.Equal(t, "ok", body)
		assert.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 2 * time.Second}, waits)
	})
	assert.Equal(t, int32(4), calls.Load())
}

// TestRetryOverHTTPWithADate: a Retry-After HTTP-date counts from the
// moment of the response; a 404 ends the loop at once.
func TestRetryOverHTTPWithADate(t *testing.T) {
	var retryAt atomic.Value // the date the server sends, set from the test's clock
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			w.Header().Set("Retry-After", retryAt.Load().(string))
			w.WriteHeader(http.StatusServiceUnavailable)
		case 2:
			fmt.Fprint(w, "ok")
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	synctest.Test(t, func(t *testing.T) {
		retryAt.Store(time.Now().Add(7 * time.Second).UTC().Format("Mon, 02 Jan 2006 15:04:05 GMT"))
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		begin := time.Now()
		body, err := retry.Do(context.Background(), retrypolicy.Default(), func(ctx context.Context) (string, error) { return get(ctx, client, srv.URL) })
		require.NoError(t, err)
		assert.Equal(t, "ok", body)
		assert.Equal(t, 7*time.Second, time.Since(begin).Round(time.Second))

		_, err = retry.Do(context.Background(), retrypolicy.Default(), func(ctx context.Context) (string, error) { return get(ctx, client, srv.URL) })
		var gu *retry.GiveUpError
		require.ErrorAs(t, err, &gu)
		assert.Equal(t, retry.NotRetryable, gu.Reason)
		assert.Equal(t, 1, gu.Failures)
	})
}
