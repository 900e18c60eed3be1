package retryhttp_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

// roundTripFunc is a base transport in memory.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestRequestProperties: over methods, idempotency keys, body kinds,
// strategies and scripts of outcomes, with a base transport in memory:
//   - a request that is not safe (a method that is not idempotent without a
//     key, or a body that cannot be rewound) is sent exactly once;
//   - a safe one is sent until an outcome the default table does not retry,
//     and at most max_attempts times;
//   - every attempt carries the same body bytes;
//   - the caller gets the last attempt's response, unread, or an error that
//     unwraps to its network error; every other response is closed.
func TestRequestProperties(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rapid.Check(inBubble{t}, func(t *rapid.T) {
			method := rapid.SampledFrom([]string{"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "POST", "PATCH"}).Draw(t, "method")
			key := rapid.Bool().Draw(t, "idempotency key")
			bodyKind := rapid.SampledFrom([]string{"none", "NoBody", "rewindable", "one-shot"}).Draw(t, "body")
			script := rapid.SliceOfN(rapid.SampledFrom([]int{200, 404, 408, 429, 500, 501, 503, 505, -1}), 1, 8).Draw(t, "outcomes (-1: connection closed)")
			maxAttempts := rapid.IntRange(1, 6).Draw(t, "max_attempts")

			payload := "payload of " + method
			var req *http.Request
			switch bodyKind {
			case "none":
				req, _ = http.NewRequest(method, "http://service.test/", nil)
			case "NoBody":
				req, _ = http.NewRequest(method, "http://service.test/", http.NoBody)
			case "rewindable":
				req, _ = http.NewRequest(method, "http://service.test/", strings.NewReader(payload))
			case "one-shot":
				req, _ = http.NewRequest(method, "http://service.test/", io.NopCloser(strings.NewReader(payload)))
			}
			if key {
				req.Header.Set("Idempotency-Key", "k")
			}

			var sent []string
			var bodies []*closeCounter
			base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				var got []byte
				if r.Body != nil {
					got, _ = io.ReadAll(r.Body)
					r.Body.Close()
				}
				sent = append(sent, string(got))
				outcome := script[min(len(sent), len(script))-1]
				if outcome < 0 {
					return nil, io.EOF
				}
				b := &closeCounter{Reader: strings.NewReader(fmt.Sprint("attempt ", len(sent)))}
				bodies = append(bodies, b)
				return &http.Response{StatusCode: outcome, Header: http.Header{}, Body: b, Request: r}, nil
			})
			s := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: maxAttempts, Window: time.Hour,
				Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}
			tr, err := retryhttp.NewTransport(base, s)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)

			// The expected attempts, from the rules as the package doc states them.
			idempotent := map[string]bool{"GET": true, "HEAD": true, "PUT": true, "DELETE": true, "OPTIONS": true}[method]
			safe := (idempotent || key) && bodyKind != "one-shot"
			want := 1
			if safe {
				for want < maxAttempts {
					o := script[min(want, len(script))-1]
					if o >= 0 && o != 408 && o != 429 && o != 500 && o != 502 && o != 503 && o != 504 {
						break
					}
					want++
				}
			}
			require.Len(t, sent, want, "attempts")
			for i, b := range sent {
				if bodyKind == "rewindable" || bodyKind == "one-shot" {
					require.Equal(t, payload, b, "attempt %d's body", i+1)
				} else {
					require.Empty(t, b)
				}
			}
			last := script[min(want, len(script))-1]
			if last < 0 {
				require.Nil(t, resp)
				require.ErrorIs(t, err, io.EOF)
				var gu *retry.GiveUpError
				require.ErrorAs(t, err, &gu)
			} else {
				require.NoError(t, err)
				require.Equal(t, last, resp.StatusCode)
				got, _ := io.ReadAll(resp.Body)
				require.Equal(t, fmt.Sprint("attempt ", want), string(got), "the last response, unread")
				resp.Body.Close()
			}
			for i, b := range bodies {
				require.Equal(t, 1, b.closed, "response %d closed once", i+1)
			}
		})
	})
}

// inBubble hides the *testing.T of a synctest bubble from rapid, which
// would ask it for the test's deadline, a question a bubble refuses.
type inBubble struct{ *testing.T }
