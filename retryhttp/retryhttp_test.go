package retryhttp_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

// fixed100ms gives up at the fifth failure within an hour and waits 100 ms
// after each.
var fixed100ms = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5, Window: time.Hour,
	Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 100 * time.Millisecond}}

// step answers one attempt.
type step func(w http.ResponseWriter, r *http.Request)

// status answers code, with the headers given as name, value pairs and a
// body that names the attempt.
func status(code int, header ...string) step {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Add(header[i], header[i+1]) // a name given twice is sent twice
		}
		w.WriteHeader(code)
		fmt.Fprintf(w, "%d %s", code, r.Header.Get("X-Attempt"))
	}
}

// hangUp closes the connection without an answer.
func hangUp(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

// scripted answers the n-th attempt with its n-th step (the last step
// after the script ends), and records what each attempt sent.
type scripted struct {
	mu     sync.Mutex
	steps  []step
	bodies []string
	at     []time.Time
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.bodies)
	s.bodies = append(s.bodies, string(body))
	s.at = append(s.at, time.Now())
	st := s.steps[min(n, len(s.steps)-1)]
	s.mu.Unlock()
	r.Header.Set("X-Attempt", fmt.Sprint(n+1))
	st(w, r)
}

func (s *scripted) attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

// do sends a GET through a Transport over p, and returns the response's
// status and body, or the error.
func do(t *testing.T, tr *retryhttp.Transport, req *http.Request) (int, string, error) {
	t.Helper()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body), nil
}

func get(t *testing.T, url string) *http.Request {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	return req
}

// TestScriptedFailures: each case's server fails by script; the case
// checks the attempts it saw, how long the request took on the fake clock
// (the waits), and what the caller got.
func TestScriptedFailures(t *testing.T) {
	date := func(d time.Duration) string { return time.Now().Add(d).UTC().Format(http.TimeFormat) }
	for _, c := range []struct {
		name     string
		steps    func() []step // made inside the bubble, for its clock
		opts     []retry.Option
		attempts int
		took     time.Duration
		status   int
		body     string
	}{
		{name: "503 then 200", steps: func() []step { return []step{status(503), status(200)} },
			attempts: 2, took: 100 * time.Millisecond, status: 200, body: "200 2"},
		{name: "503 asking 3 s in delay-seconds", steps: func() []step { return []step{status(503, "Retry-After", "3"), status(200)} },
			attempts: 2, took: 3 * time.Second, status: 200, body: "200 2"},
		{name: "503 asking 5 s in an HTTP-date", steps: func() []step { return []step{status(503, "Retry-After", date(5*time.Second)), status(200)} },
			attempts: 2, took: 5 * time.Second, status: 200, body: "200 2"},
		{name: "Retry-After shorter than the backoff", steps: func() []step { return []step{status(503, "Retry-After", "0"), status(200)} },
			attempts: 2, took: 100 * time.Millisecond, status: 200, body: "200 2"},
		// Beyond the limit a server's wait is not cut short (until it was, a
		// retry came after 10 s and an hour): the 429 is the answer.
		{name: "429 asking a day, beyond a cap of 10 s", steps: func() []step { return []step{status(429, "Retry-After", "86400"), status(200)} },
			opts:     []retry.Option{retry.WithWaitLimit(10 * time.Second)},
			attempts: 1, took: 0, status: 429, body: "429 1"},
		// A fixed backoff's longest delay is its delay: the default limit of
		// a fixed 100 ms is a minute (until it was an hour, the transport
		// slept half an hour).
		{name: "429 asking a day, beyond the default limit of a minute", steps: func() []step { return []step{status(429, "Retry-After", "86400"), status(200)} },
			attempts: 1, took: 0, status: 429, body: "429 1"},
		{name: "429 asking half an hour, beyond the default limit of a minute", steps: func() []step { return []step{status(429, "Retry-After", "1800"), status(200)} },
			attempts: 1, took: 0, status: 429, body: "429 1"},
		{name: "429 asking 50 s, within the default limit", steps: func() []step { return []step{status(429, "Retry-After", "50"), status(200)} },
			attempts: 2, took: 50 * time.Second, status: 200, body: "200 2"},
		{name: "404 is the answer", steps: func() []step { return []step{status(404), status(200)} },
			attempts: 1, took: 0, status: 404, body: "404 1"},
		{name: "501 is the answer", steps: func() []step { return []step{status(501), status(200)} },
			attempts: 1, took: 0, status: 501, body: "501 1"},
		{name: "408, 500, 502, 504 are retried", steps: func() []step { return []step{status(408), status(500), status(502), status(504), status(200)} },
			attempts: 5, took: 400 * time.Millisecond, status: 200, body: "200 5"},
		{name: "always 503: the last response, unread", steps: func() []step { return []step{status(503)} },
			attempts: 5, took: 400 * time.Millisecond, status: 503, body: "503 5"},
		{name: "hung up on, then 200", steps: func() []step { return []step{hangUp, hangUp, status(200)} },
			attempts: 3, took: 200 * time.Millisecond, status: 200, body: "200 3"},
		{name: "a slow first byte, under an attempt timeout", steps: func() []step {
			return []step{func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-time.After(time.Minute):
				case <-r.Context().Done():
				}
			}, status(200)}
		}, opts: []retry.Option{retry.WithAttemptTimeout(2 * time.Second)},
			attempts: 2, took: 2*time.Second + 100*time.Millisecond, status: 200, body: "200 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &scripted{steps: c.steps()}
				p := newPipeServer(t, s)
				tr, err := retryhttp.NewTransport(p.Transport, fixed100ms, c.opts...)
				require.NoError(t, err)
				begin := time.Now()
				code, body, err := do(t, tr, get(t, p.URL))
				require.NoError(t, err)
				assert.Equal(t, c.took, time.Since(begin), "the waits")
				assert.Equal(t, c.attempts, s.attempts(), "attempts the server saw")
				assert.Equal(t, c.status, code)
				assert.Equal(t, c.body, body, "the caller reads the last response whole")
			})
		})
	}
}

// TestFailedResponsesAreDrained: the bodies of the retried responses are
// read and closed, so that every attempt goes over one connection.
func TestFailedResponsesAreDrained(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		big := strings.Repeat("x", 8<<10)
		fail := func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, big)
		}
		s := &scripted{steps: []step{fail, fail, fail, status(200)}}
		p := newPipeServer(t, s)
		tr, err := retryhttp.NewTransport(p.Transport, fixed100ms)
		require.NoError(t, err)
		code, _, err := do(t, tr, get(t, p.URL))
		require.NoError(t, err)
		assert.Equal(t, 200, code)
		assert.Equal(t, 4, s.attempts())
		assert.EqualValues(t, 1, p.conns.Load(), "one connection, reused by every attempt")
	})
}

// TestUptimeCredit: an attempt that ran 10 s before its 503 pays the
// backoff it owes with its uptime, as a job's run does: the fourth
// failure owes 8 s, and 10 s of uptime pays the 8 s step, leaving 4 s.
func TestUptimeCredit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(10 * time.Second)
			status(503)(w, r)
		}
		s := &scripted{steps: []step{status(503), status(503), status(503), slow, status(200)}}
		p := newPipeServer(t, s)
		exp := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 10, Window: time.Hour,
			Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: time.Second, Multiplier: 2}}
		tr, err := retryhttp.NewTransport(p.Transport, exp)
		require.NoError(t, err)
		code, _, err := do(t, tr, get(t, p.URL))
		require.NoError(t, err)
		assert.Equal(t, 200, code)
		require.Len(t, s.at, 5)
		assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 10*time.Second + 4*time.Second},
			[]time.Duration{s.at[1].Sub(s.at[0]), s.at[2].Sub(s.at[1]), s.at[3].Sub(s.at[2]), s.at[4].Sub(s.at[3])})
	})
}

// TestOnlySafeRequestsAreRetried: a POST is sent once, unless it carries
// an idempotency key that is not blank; a body that cannot be rewound is sent once; a
// rewound body is the same bytes on every attempt.
func TestOnlySafeRequestsAreRetried(t *testing.T) {
	for _, c := range []struct {
		name     string
		req      func(url string) *http.Request
		attempts int
	}{
		{"POST", func(url string) *http.Request {
			r, _ := http.NewRequest(http.MethodPost, url, strings.NewReader("payload"))
			return r
		}, 1},
		{"POST with an Idempotency-Key", func(url string) *http.Request {
			r, _ := http.NewRequest(http.MethodPost, url, strings.NewReader("payload"))
			r.Header.Set("Idempotency-Key", "job-1")
			return r
		}, 3},
		{"POST with an empty Idempotency-Key", func(url string) *http.Request {
			r, _ := http.NewRequest(http.MethodPost, url, strings.NewReader("payload"))
			r.Header.Set("Idempotency-Key", "")
			return r
		}, 1},
		{"POST with a blank X-Idempotency-Key", func(url string) *http.Request {
			r, _ := http.NewRequest(http.MethodPost, url, strings.NewReader("payload"))
			r.Header.Set("X-Idempotency-Key", " \t")
			return r
		}, 1},
		{"POST with an Idempotency-Key header of no value", func(url string) *http.Request {
			r, _ := http.NewRequest(http.MethodPost, url, strings.NewReader("payload"))
			r.Header["Idempotency-Key"] = []string{}
			return r
		}, 1},
		{"PATCH with an X-Idempotency-Key", func(url string) *http.Request {
			r, _ := http.NewRequest(http.MethodPatch, url, strings.NewReader("payload"))
			r.Header.Set("X-Idempotency-Key", "job-1")
			return r
		}, 3},
		{"PUT", func(url string) *http.Request {
			r, _ := http.NewRequest(http.MethodPut, url, strings.NewReader("payload"))
			return r
		}, 3},
		{"PUT whose body cannot be rewound", func(url string) *http.Request {
			r, _ := http.NewRequest(http.MethodPut, url, io.NopCloser(strings.NewReader("payload")))
			return r
		}, 1},
		{"DELETE", func(url string) *http.Request {
			r, _ := http.NewRequest(http.MethodDelete, url, nil)
			return r
		}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &scripted{steps: []step{status(503), status(502), status(200)}}
				p := newPipeServer(t, s)
				tr, err := retryhttp.NewTransport(p.Transport, fixed100ms)
				require.NoError(t, err)
				code, _, err := do(t, tr, c.req(p.URL))
				require.NoError(t, err)
				assert.Equal(t, c.attempts, s.attempts())
				assert.Equal(t, map[int]int{1: 503, 3: 200}[c.attempts], code)
				for i, b := range s.bodies {
					if c.name != "DELETE" {
						assert.Equal(t, "payload", b, "attempt %d's body", i+1)
					}
				}
			})
		})
	}
}

// TestGivingUp: what the caller gets when the transport gives up, for each
// reason, and that the context ends a wait at once.
func TestGivingUp(t *testing.T) {
	t.Run("a retry due past the deadline is not waited for", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := &scripted{steps: []step{status(503, "Retry-After", "5"), status(200)}}
			p := newPipeServer(t, s)
			tr, err := retryhttp.NewTransport(p.Transport, fixed100ms)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			begin := time.Now()
			code, body, err := do(t, tr, get(t, p.URL).WithContext(ctx))
			require.NoError(t, err)
			assert.Equal(t, time.Duration(0), time.Since(begin))
			assert.Equal(t, 503, code)
			assert.Equal(t, "503 1", body)
		})
	})
	t.Run("cancelled while waiting", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := &scripted{steps: []step{status(503, "Retry-After", "60")}}
			p := newPipeServer(t, s)
			tr, err := retryhttp.NewTransport(p.Transport, fixed100ms)
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(time.Second, cancel)
			begin := time.Now()
			_, _, err = do(t, tr, get(t, p.URL).WithContext(ctx))
			assert.Equal(t, time.Second, time.Since(begin), "the wait ends with the context")
			var gu *retry.GiveUpError
			require.ErrorAs(t, err, &gu)
			assert.Equal(t, retry.ContextDone, gu.Reason)
			assert.ErrorIs(t, err, context.Canceled)
			var se *retryhttp.StatusError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, 503, se.StatusCode)
			assert.Equal(t, 1, s.attempts())
		})
	})
	t.Run("the context done before the first attempt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := &scripted{steps: []step{status(200)}}
			p := newPipeServer(t, s)
			tr, err := retryhttp.NewTransport(p.Transport, fixed100ms)
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			body := &closeCounter{Reader: strings.NewReader("payload")}
			req, err := http.NewRequestWithContext(ctx, http.MethodPut, p.URL, body)
			require.NoError(t, err)
			_, err = tr.RoundTrip(req)
			var gu *retry.GiveUpError
			require.ErrorAs(t, err, &gu)
			assert.Equal(t, retry.ContextDone, gu.Reason)
			assert.Equal(t, 0, s.attempts())
			assert.Equal(t, 1, body.closed, "the request's body is closed, as a RoundTripper must")
		})
	})
	t.Run("a spent budget", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := &scripted{steps: []step{status(503)}}
			p := newPipeServer(t, s)
			budget, err := retry.NewBudget(0, 2)
			require.NoError(t, err)
			tr, err := retryhttp.NewTransport(p.Transport, fixed100ms, retry.WithBudget(budget))
			require.NoError(t, err)
			code, body, err := do(t, tr, get(t, p.URL))
			require.NoError(t, err)
			assert.Equal(t, 503, code)
			assert.Equal(t, "503 3", body, "two retries, as the budget's burst allows")
			code, body, err = do(t, tr, get(t, p.URL))
			require.NoError(t, err)
			assert.Equal(t, 503, code)
			assert.Equal(t, "503 4", body, "no retry left for the next request")
		})
	})
	t.Run("the strategy's fatal decision, on a network error", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := &scripted{steps: []step{hangUp}}
			p := newPipeServer(t, s)
			tr, err := retryhttp.NewTransport(p.Transport, fixed100ms)
			require.NoError(t, err)
			_, _, err = do(t, tr, get(t, p.URL))
			var gu *retry.GiveUpError
			require.ErrorAs(t, err, &gu)
			assert.Equal(t, retry.AttemptsExhausted, gu.Reason)
			assert.Equal(t, 5, gu.Failures)
			assert.ErrorIs(t, err, io.EOF, "the last network error")
			assert.Equal(t, 5, s.attempts())
		})
	})
}

// closeCounter is a request body that counts its closes.
type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// TestObserverAndHostBudgets: the observer sees each retry with its
// status; a host whose budget is spent does not spend another's.
func TestObserverAndHostBudgets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{steps: []step{status(503)}}
		p := newPipeServer(t, s)
		var seen []string
		tr, err := retryhttp.NewTransport(p.Transport, fixed100ms, retryhttp.WithHostBudgets(func() (*retry.Budget, error) { return retry.NewBudget(0, 1) }),
			retry.WithObserver(func(e retry.Event) {
				var se *retryhttp.StatusError
				require.ErrorAs(t, e.Err, &se)
				seen = append(seen, fmt.Sprintf("%s after failure %d: wait %v", se, e.Failures, e.Wait))
			}))
		require.NoError(t, err)
		for _, host := range []string{"a.test", "a.test", "b.test"} {
			code, _, err := do(t, tr, get(t, "http://"+host))
			require.NoError(t, err)
			assert.Equal(t, 503, code)
		}
		assert.Equal(t, 5, s.attempts(), "a.test: 2 then 1; b.test: 2")
		assert.Equal(t, []string{
			"retryhttp: HTTP 503 after failure 1: wait 100ms",
			"retryhttp: HTTP 503 after failure 1: wait 100ms",
		}, seen)
	})
}

// TestHostWindowBudgets: each host has a windowed budget of its own: at 0%
// with a minimum of one retry in the window, a host's second request gets
// no retry, another host's first does, and the first host's budget allows
// one again once its window has passed.
func TestHostWindowBudgets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{steps: []step{status(503)}}
		p := newPipeServer(t, s)
		tr, err := retryhttp.NewTransport(p.Transport, fixed100ms, retryhttp.WithHostBudgets(func() (*retry.Budget, error) { return retry.NewWindowBudget(0, 10*time.Second, 1) }))
		require.NoError(t, err)
		attempts := func(host string) int {
			before := s.attempts()
			code, _, err := do(t, tr, get(t, "http://"+host))
			require.NoError(t, err)
			assert.Equal(t, 503, code)
			return s.attempts() - before
		}
		assert.Equal(t, 2, attempts("a.test"), "one retry: the minimum")
		assert.Equal(t, 1, attempts("a.test"), "its window holds that retry")
		assert.Equal(t, 2, attempts("b.test"), "a host of its own")
		time.Sleep(10 * time.Second)
		assert.Equal(t, 2, attempts("a.test"), "the retry aged out of the window")
	})
}

// TestNewTransportRefuses: an invalid strategy or option is an error at
// construction, naming what is wrong.
func TestNewTransportRefuses(t *testing.T) {
	_, err := retryhttp.NewTransport(nil, retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: -1})
	assert.ErrorIs(t, err, retrypolicy.ErrInvalid)
	budget, _ := retry.NewBudget(0.1, 10)
	for _, c := range []struct {
		opt  []retry.Option
		want string
	}{
		{[]retry.Option{retry.WithWaitLimit(-time.Second)}, "retryhttp: retry.WithWaitLimit: must be positive, got -1s"},
		{[]retry.Option{retry.WithAttemptTimeout(-time.Second)}, "retryhttp: retry.WithAttemptTimeout: must be positive, got -1s"},
		{[]retry.Option{retryhttp.WithClassifier(nil)}, "retryhttp: retryhttp.WithClassifier: the function is nil"},
		{[]retry.Option{retry.WithBudget(budget), retryhttp.WithHostBudgets(func() (*retry.Budget, error) { return retry.NewBudget(0.1, 10) })},
			"retryhttp: retryhttp.WithHostBudgets and retry.WithBudget: choose one"},
		{[]retry.Option{retryhttp.WithHostBudgets(func() (*retry.Budget, error) { return retry.NewBudget(0.1, 10) }), retry.WithoutBudget()},
			"retryhttp: retryhttp.WithHostBudgets and retry.WithoutBudget: choose one"},
		{[]retry.Option{retry.WithBudget(budget), retry.WithoutBudget()}, "retryhttp: retry.WithBudget and retry.WithoutBudget: choose one"},
		{[]retry.Option{retryhttp.WithHostBudgets(func() (*retry.Budget, error) { return retry.NewBudget(-1, 10) })},
			"retryhttp: retryhttp.WithHostBudgets: retrypolicy: NewBudget: ratio must be between 0 and 1000, got -1"},
		{[]retry.Option{retryhttp.WithHostBudgets(func() (*retry.Budget, error) { return retry.NewWindowBudget(20, 0, 100) })},
			"retryhttp: retryhttp.WithHostBudgets: retrypolicy: NewWindowBudget: interval must be between 1ms and 1h, got 0s"},
		{[]retry.Option{retryhttp.WithHostBudgets(func() (*retry.Budget, error) { return nil, nil })}, "retryhttp: retryhttp.WithHostBudgets: the function made no budget"},
		{[]retry.Option{retry.NewAdapterSetting[struct{}]("othermod.WithThing").Option(func(*struct{}) {})}, "retryhttp: othermod.WithThing is an option of othermod, not of this one"},
	} {
		_, err := retryhttp.NewTransport(nil, fixed100ms, c.opt...)
		assert.EqualError(t, err, c.want)
	}
}

// TestARepeatedSettingIsRefused: a setting of one value, the
// transport's or the loop's, given twice in one list is refused at
// construction, naming it; hooks given twice are both called.
func TestARepeatedSettingIsRefused(t *testing.T) {
	hosts := retryhttp.WithHostBudgets(func() (*retry.Budget, error) { return retry.NewBudget(0.1, 10) })
	for _, c := range []struct {
		opts []retry.Option
		want string
	}{
		{[]retry.Option{retryhttp.WithClassifier(retryhttp.Transient), retryhttp.WithClassifier(retryhttp.Transient)}, "retryhttp: retryhttp.WithClassifier: given twice; give each setting once"},
		{[]retry.Option{retryhttp.WithoutServerSignals(), retry.WithFullJitter(), retryhttp.WithoutServerSignals()}, "retryhttp: retryhttp.WithoutServerSignals: given twice; give each setting once"},
		{[]retry.Option{hosts, hosts}, "retryhttp: retryhttp.WithHostBudgets: given twice; give each setting once"},
		{[]retry.Option{retry.WithAttemptTimeout(time.Second), retry.WithAttemptTimeout(time.Minute)}, "retryhttp: retry.WithAttemptTimeout: given twice; give each setting once"},
		{[]retry.Option{retry.WithWaitLimit(time.Second), retry.WithWaitLimit(time.Second)}, "retryhttp: retry.WithWaitLimit: given twice; give each setting once"},
	} {
		_, err := retryhttp.NewTransport(nil, fixed100ms, c.opts...)
		assert.EqualError(t, err, c.want)
	}
	var seen []int
	tr, err := retryhttp.NewTransport(roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	}), fixed100ms, retry.WithEnd(func(retry.End) { seen = append(seen, 1) }), retry.WithEnd(func(retry.End) { seen = append(seen, 2) }))
	require.NoError(t, err)
	resp, err := tr.RoundTrip(httptest.NewRequest(http.MethodGet, "http://a.test/", nil))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, []int{1, 2}, seen, "both end callbacks, in the order given")
}

// TestOnLoopback: what only a real network shows. A connection reset (the
// server closes with SO_LINGER 0, so the client reads RST) is retried;
// a response cut in the middle of its body reaches the caller, whose read
// fails (the transport has returned by then); a certificate the client
// does not trust is never retried. The strategy waits 1 ms: these cases
// check attempts and outcomes, not time.
func TestOnLoopback(t *testing.T) {
	quick := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5, Window: time.Hour,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}
	reset := func(w http.ResponseWriter, _ *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.(*net.TCPConn).SetLinger(0)
			conn.Close()
		}
	}
	t.Run("reset", func(t *testing.T) {
		s := &scripted{steps: []step{reset, reset, status(200)}}
		srv := httptest.NewServer(s)
		defer srv.Close()
		var errs []error
		tr, err := retryhttp.NewTransport(srv.Client().Transport, quick,
			retry.WithObserver(func(e retry.Event) { errs = append(errs, e.Err) }))
		require.NoError(t, err)
		code, _, err := do(t, tr, get(t, srv.URL))
		require.NoError(t, err)
		assert.Equal(t, 200, code)
		assert.Equal(t, 3, s.attempts())
		require.Len(t, errs, 2)
		for _, e := range errs {
			assert.True(t, retryhttp.Transient(nil, e), "%v", e)
		}
	})
	t.Run("cut mid-body", func(t *testing.T) {
		cut := func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(200)
			io.WriteString(w, "first ten.")
			w.(http.Flusher).Flush()
			reset(w, nil)
		}
		s := &scripted{steps: []step{cut}}
		srv := httptest.NewServer(s)
		defer srv.Close()
		tr, err := retryhttp.NewTransport(srv.Client().Transport, quick)
		require.NoError(t, err)
		resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		assert.Error(t, err, "the cut is the caller's to see")
		assert.Equal(t, "first ten.", string(body))
		assert.Equal(t, 1, s.attempts())
	})
	t.Run("untrusted certificate", func(t *testing.T) {
		s := &scripted{steps: []step{status(200)}}
		srv := httptest.NewTLSServer(s)
		defer srv.Close()
		srv.Config.ErrorLog = discardLog
		tr, err := retryhttp.NewTransport(&http.Transport{}, quick)
		require.NoError(t, err)
		_, _, err = do(t, tr, get(t, srv.URL))
		var gu *retry.GiveUpError
		require.ErrorAs(t, err, &gu)
		assert.Equal(t, retry.NotRetryable, gu.Reason)
		assert.Equal(t, 1, gu.Failures)
		var cert *tls.CertificateVerificationError
		assert.ErrorAs(t, err, &cert)
		assert.Equal(t, 0, s.attempts())
	})
}

// TestTransient pins the default classifier's table.
func TestTransient(t *testing.T) {
	for code, want := range map[int]bool{200: false, 204: false, 301: false, 400: false, 401: false, 404: false,
		408: true, 409: false, 429: true, 500: true, 501: false, 502: true, 503: true, 504: true, 505: false} {
		assert.Equal(t, want, retryhttp.Transient(&http.Response{StatusCode: code}, nil), "status %d", code)
	}
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{dial, true},
		{fmt.Errorf("write: %w", &net.OpError{Op: "write", Err: errors.New("broken pipe")}), true},
		{io.EOF, true},
		{fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w", io.ErrUnexpectedEOF), true},
		{context.DeadlineExceeded, true},
		{context.Canceled, false},
		{&net.DNSError{Err: "no such host", Name: "nowhere.test", IsNotFound: true}, false},
		{&net.DNSError{Err: "server misbehaving", Name: "service.test", IsTemporary: true}, true},
		{&tls.CertificateVerificationError{Err: errors.New("x509: certificate signed by unknown authority")}, false},
		{tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, false},
		{errors.New(`unsupported protocol scheme "ftp"`), false},
		{errors.New("stopped after 10 redirects"), false},
	} {
		assert.Equal(t, c.want, retryhttp.Transient(nil, c.err), "%v", c.err)
	}
}

// discardLog drops a test server's log of the handshakes it refused.
var discardLog = log.New(io.Discard, "", 0)

// TestSharedBudgetUnderConcurrency: 20 goroutines share one transport and
// its budget against a service that always fails; the retries the service
// sees stay within the budget's bound, burst + ratio × requests.
func TestSharedBudgetUnderConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{steps: []step{status(503)}}
		p := newPipeServer(t, s)
		budget, err := retry.NewBudget(0.1, 5)
		require.NoError(t, err)
		tr, err := retryhttp.NewTransport(p.Transport, fixed100ms, retry.WithBudget(budget))
		require.NoError(t, err)
		const goroutines, each = 20, 10
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				client := &http.Client{Transport: tr}
				for range each {
					resp, err := client.Get(p.URL)
					if !assert.NoError(t, err) {
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					assert.Equal(t, 503, resp.StatusCode)
				}
			})
		}
		wg.Wait()
		requests := goroutines * each
		retries := s.attempts() - requests
		assert.LessOrEqual(t, retries, 5+requests/10, "burst 5 + 10%% of %d requests", requests)
		assert.Positive(t, retries)
	})
}

// TestAttemptAndEnd: a transport under the Transport reads which attempt
// it sends (1, 2, 3, with or without an attempt timeout); WithEnd says
// once how the request's retries ended, a give-up on a status included.
func TestAttemptAndEnd(t *testing.T) {
	for _, opts := range [][]retry.Option{nil, {retry.WithAttemptTimeout(time.Minute)}} {
		synctest.Test(t, func(t *testing.T) {
			var attempts []int
			base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				attempts = append(attempts, retryhttp.Attempt(r.Context()))
				return &http.Response{StatusCode: 503, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
			})
			var ends []retry.End
			s := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Second}}
			tr, err := retryhttp.NewTransport(base, s, append(opts, retry.WithEnd(func(e retry.End) { ends = append(ends, e) }))...)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(get(t, "http://service.test/"))
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, []int{1, 2, 3}, attempts)
			require.Len(t, ends, 1)
			assert.Equal(t, 3, ends[0].Attempts)
			require.NotNil(t, ends[0].GaveUp)
			assert.Equal(t, retry.AttemptsExhausted, ends[0].GaveUp.Reason)
			assert.Equal(t, 2*time.Second, ends[0].Took)
		})
	}
	assert.Equal(t, 1, retryhttp.Attempt(context.Background()))
}
