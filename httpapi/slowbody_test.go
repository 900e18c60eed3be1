package httpapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stall opens a connection to srv and sends a POST's headers and the first
// byte of a body of length bytes, then sends nothing more: a client that
// trickles its body. The connection closes with the test.
func stall(t testing.TB, srv *httptest.Server, length int64) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second))) // the guard: no answer hangs the test
	_, err = fmt.Fprintf(conn, "POST /v1/validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", length)
	require.NoError(t, err)
	return conn
}

// readAnswer reads the answer on conn to the request sent on it.
func readAnswer(t testing.TB, conn net.Conn) (*http.Response, errorBody) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	var e errorBody
	b, _ := io.ReadAll(resp.Body)
	require.NoError(t, json.Unmarshal(b, &e), string(b))
	return resp, e
}

// waitReaders waits until n bodies are being read.
func waitReaders(t testing.TB, h *Handler, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(h.readers) < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d bodies being read, want %d", len(h.readers), n)
		}
	}
}

// TestTricklingClientsHoldReadersNotTheServer: 64 clients that send their
// bodies a byte at a time had held all 64 in-flight slots, so that
// /v1/validate answered 503 BUSY 88 times in 96; they now hold body
// readers, and every request of another client is answered.
func TestTricklingClientsHoldReadersNotTheServer(t *testing.T) {
	h := New(Options{BodyTimeout: time.Minute})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close) // after the stalled connections close: cleanups run last first
	for range 64 {
		stall(t, srv, 100)
	}
	waitReaders(t, h, 64)
	client := srv.Client()
	for range 40 {
		resp, err := client.Post(srv.URL+"/v1/validate", "application/json", strings.NewReader(`{"strategy":"none"}`))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	}
}

// TestBodyReadersAreBounded: once every body reader is taken, another
// POST is shed at once with 503 BUSY and Retry-After, while a GET, which
// has no body, is answered.
func TestBodyReadersAreBounded(t *testing.T) {
	h := New(Options{MaxBodyReaders: 4, BodyTimeout: time.Minute})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close) // after the stalled connections close: cleanups run last first
	for range 4 {
		stall(t, srv, 100)
	}
	waitReaders(t, h, 4)
	resp, e := readAnswer(t, stall(t, srv, 100))
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "BUSY", e.Code)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	page, err := srv.Client().Get(srv.URL + "/")
	require.NoError(t, err)
	page.Body.Close()
	assert.Equal(t, http.StatusOK, page.StatusCode)
}

// TestStalledBodyTimesOut: a body that stops arriving is answered 408
// BODY_TIMEOUT once BodyTimeout has passed, in the JSON error shape, and
// its reader is free again.
func TestStalledBodyTimesOut(t *testing.T) {
	h := New(Options{BodyTimeout: 50 * time.Millisecond})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close) // after the stalled connections close: cleanups run last first
	resp, e := readAnswer(t, stall(t, srv, 100))
	assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	assert.Equal(t, "BODY_TIMEOUT", e.Code)
	assert.Contains(t, e.Message, "50ms")
	assert.Empty(t, len(h.readers))
}

// TestDeclaredLengthOverMaxBodyRefusedAtOnce: a Content-Length of
// 99,999,999,999 with no body had been answered 400 after the 10 s read
// timeout; it is 413 before a byte of the body is read, and takes no
// reader.
func TestDeclaredLengthOverMaxBodyRefusedAtOnce(t *testing.T) {
	h := New(Options{BodyTimeout: time.Minute})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close) // after the stalled connections close: cleanups run last first
	resp, e := readAnswer(t, stall(t, srv, 99_999_999_999))
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.Equal(t, "PAYLOAD_TOO_LARGE", e.Code)
	assert.Empty(t, len(h.readers))
}

// BenchmarkValidateBesideTricklers: /v1/validate's latency while 64
// clients trickle their bodies (a byte every 100 ms); it reports the p95
// in ms and the share answered 200 within 100 ms (the target: 95%).
func BenchmarkValidateBesideTricklers(b *testing.B) {
	h := New(Options{})
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close) // after the stalled connections close: cleanups run last first
	stop := make(chan struct{})
	defer close(stop)
	for range 64 {
		conn := stall(b, srv, 1<<20)
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
					if _, err := conn.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		}()
	}
	waitReaders(b, h, 64)
	client := srv.Client()
	var took []time.Duration
	fast := 0
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		resp, err := client.Post(srv.URL+"/v1/validate", "application/json", strings.NewReader(`{"strategy":"none"}`))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		took = append(took, d)
		if resp.StatusCode == http.StatusOK && d <= 100*time.Millisecond {
			fast++
		}
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[(len(took)*95+99)/100-1])/1e6, "p95-ms")
	b.ReportMetric(100*float64(fast)/float64(len(took)), "%-200-within-100ms")
}
