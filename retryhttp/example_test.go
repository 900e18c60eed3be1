package retryhttp_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

// A client whose requests are retried under a strategy: the service
// answers 503 twice, asking for a 1 ms pause the second time, then
// answers.
func ExampleNewTransport() {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable)
		case 2:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			fmt.Fprint(w, "report ready")
		}
	}))
	defer srv.Close()

	strategy := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: time.Millisecond, MaxDelay: 100 * time.Millisecond}}
	t, err := retryhttp.NewTransport(nil, strategy, retry.WithObserver(func(e retry.Event) {
		fmt.Printf("failure %d: %v; retrying\n", e.Failures, e.Err)
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	client := &http.Client{Transport: t, Timeout: 10 * time.Second}

	resp, err := client.Get(srv.URL + "/report")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, string(body))
	// Output:
	// failure 1: retryhttp: HTTP 503; retrying
	// failure 2: retryhttp: HTTP 503; retrying
	// 200 OK report ready
}

// A request the transport gave up on for a network error: the error says
// why, and unwraps to the last attempt's error.
func ExampleTransport_RoundTrip_givingUp() {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more: every attempt is refused

	strategy := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}
	t, _ := retryhttp.NewTransport(nil, strategy)
	_, err := (&http.Client{Transport: t}).Get(url)

	var gu *retry.GiveUpError
	if errors.As(err, &gu) {
		fmt.Println(gu.Reason, gu.Failures, retryhttp.Transient(nil, gu.Err))
	}
	// Output:
	// attempts_exhausted 3 true
}

// A Retry-After header holds seconds or an HTTP date.
func ExampleParseRetryAfter() {
	now := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	for _, header := range []string{"120", "Mon, 02 Nov 2026 15:00:30 GMT", "Mon, 02 Nov 2026 14:00:00 GMT", "soon"} {
		wait, ok := retryhttp.ParseRetryAfter(header, now)
		fmt.Printf("%q: %v %v\n", header, wait, ok)
	}
	// Output:
	// "120": 2m0s true
	// "Mon, 02 Nov 2026 15:00:30 GMT": 30s true
	// "Mon, 02 Nov 2026 14:00:00 GMT": 0s true
	// "soon": 0s false
}
