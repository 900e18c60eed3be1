package retryhttp_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

// FuzzRetryAfter: whatever a server's Retry-After says (seconds, dates in
// any of the three forms, garbage, huge numbers) on whatever status, the
// transport ends: it retries a transient status within the limit (two
// waits of at most the limit's minute), answers one whose wait is beyond
// the limit at once (never sooner than asked), and any other status at
// once.
func FuzzRetryAfter(f *testing.F) {
	for _, seed := range []struct {
		value  string
		status uint16
	}{{"5", 503}, {"0", 429}, {"99999999999999999999", 503}, {"Sun, 06 Nov 1994 08:49:37 GMT", 503},
		{"Sunday, 06-Nov-94 08:49:37 GMT", 502}, {"Sun Nov  6 08:49:37 1994", 500}, {"-1", 503}, {"soon", 200}, {"", 404},
		// The status is 100 + status%500: these answer 429 and 503.
		{"600", 329}, {"30", 403}, {"99999999999999999999", 403}} {
		f.Add(seed.value, seed.status)
	}
	f.Fuzz(func(t *testing.T, value string, status uint16) {
		code := 100 + int(status)%500
		if wait, ok := retryhttp.ParseRetryAfter(value, time.Now()); ok && wait < 0 {
			t.Fatalf("%q: a wait of %v", value, wait)
		}
		synctest.Test(t, func(t *testing.T) {
			attempts := 0
			base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				attempts++
				resp := &http.Response{StatusCode: code, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("x")), Request: r}
				if attempts == 3 {
					resp.StatusCode = http.StatusOK
				} else {
					resp.Header["Retry-After"] = []string{value}
				}
				return resp, nil
			})
			tr, err := retryhttp.NewTransport(base, fixed100ms, retry.WithWaitLimit(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodGet, "http://example.test/", nil)
			begin := time.Now()
			asked, ok := retryhttp.ParseRetryAfter(value, begin) // the first answer comes at begin
			tooLong := ok && asked > time.Minute
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatalf("%q on %d: %v", value, code, err)
			}
			resp.Body.Close()
			took := time.Since(begin)
			transient := retryhttp.Transient(&http.Response{StatusCode: code}, nil)
			switch {
			case transient && tooLong && (attempts != 1 || resp.StatusCode != code || took != 0):
				t.Fatalf("%q on %d, beyond the limit: %d attempts in %v, answered %d", value, code, attempts, took, resp.StatusCode)
			case transient && !tooLong && (attempts != 3 || resp.StatusCode != http.StatusOK || took > 2*time.Minute):
				t.Fatalf("%q on %d: %d attempts in %v, answered %d", value, code, attempts, took, resp.StatusCode)
			case !transient && (attempts != 1 || resp.StatusCode != code || took != 0):
				t.Fatalf("%q on %d: %d attempts in %v, answered %d", value, code, attempts, took, resp.StatusCode)
			}
		})
	})
}

// FuzzTransient: the classifier holds to its documented table for every
// status, and for errors of each kind it names however deeply wrapped.
func FuzzTransient(f *testing.F) {
	f.Add(503, uint8(0), uint8(0))
	f.Add(200, uint8(3), uint8(2))
	f.Add(-1, uint8(7), uint8(9))
	f.Fuzz(func(t *testing.T, status int, kind, depth uint8) {
		retried := map[int]bool{408: true, 429: true, 500: true, 502: true, 503: true, 504: true}
		if got := retryhttp.Transient(&http.Response{StatusCode: status}, nil); got != retried[status] {
			t.Fatalf("status %d: transient %v", status, got)
		}
		if retryhttp.Transient(nil, nil) {
			t.Fatal("no response and no error is not transient")
		}
		err, want := classified(kind)
		for range depth % 4 {
			err = fmt.Errorf("wrapped: %w", err)
		}
		if got := retryhttp.Transient(nil, err); got != want {
			t.Fatalf("%v: transient %v, want %v", err, got, want)
		}
	})
}

// classified returns an error of one of the kinds the classifier's table
// names, and whether the table retries it.
func classified(kind uint8) (error, bool) {
	op := func(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Err: err} }
	switch kind % 10 {
	case 0:
		return op(syscall.ECONNREFUSED), true
	case 1:
		return op(syscall.ECONNRESET), true
	case 2:
		return io.ErrUnexpectedEOF, true
	case 3:
		return context.Canceled, false
	case 4:
		return &net.DNSError{Err: "no such host", Name: "x.test", IsNotFound: true}, false
	case 5:
		return &net.DNSError{Err: "server misbehaving", Name: "x.test"}, true
	case 6:
		return x509.UnknownAuthorityError{}, false
	case 7:
		return op(errors.New("something else")), true
	case 8:
		return errors.New("unsupported protocol scheme"), false
	}
	return op(syscall.EPIPE), true
}
