package retryhttp

import (
	"net/http"

	"github.com/retrypolicy/retrypolicy/retry"
)

// RetriedBelowHeader is the response header that says a request was
// retried below, in the server: its value is "1". [Handler] sets it on a
// response with a status the transport retries (408, 429, 500, 502, 503,
// 504) when a retry layer that served the request gave up after retrying.
// A transport does not retry such a response: it returns it as received,
// so that retries happen at one layer, the one closest to the failure.
//
// A server of another stack takes part by setting "Retried-Below: 1" on
// such a response when it retried the request's work itself; a handler of
// this package's that retries with code of its own calls
// retry.Report(r.Context()), or sets the header itself. The header on a
// request, or on a status that is not retried, means nothing.
const RetriedBelowHeader = "Retried-Below"

// Handler wraps a server's handler so that the retry layers it runs with
// the request's context (a retryhttp transport, retry.Do) report to the
// request: a response with a status the transport retries is then marked
// with [RetriedBelowHeader], and the client's transport does not retry it.
// Each request is one attempt of a layer: reports made after the handler
// returned count for nothing.
func Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, attempt := retry.StartAttempt(r.Context())
		defer attempt.End()
		next.ServeHTTP(&markingWriter{ResponseWriter: w, attempt: attempt}, r.WithContext(ctx))
	})
}

// markingWriter marks the response's header as the status is written.
type markingWriter struct {
	http.ResponseWriter
	attempt *retry.Attempt
	wrote   bool
}

// WriteHeader marks a retried status of an attempt retried below, then
// writes the header.
func (m *markingWriter) WriteHeader(code int) {
	if !m.wrote && code >= 200 {
		m.wrote = true
		if retriedStatus(code) && m.attempt.Reported() {
			m.Header().Set(RetriedBelowHeader, "1")
		}
	}
	m.ResponseWriter.WriteHeader(code)
}

// Write writes the header first, as a 200, when the handler has not.
func (m *markingWriter) Write(b []byte) (int, error) {
	if !m.wrote {
		m.WriteHeader(http.StatusOK)
	}
	return m.ResponseWriter.Write(b)
}

// Flush flushes the response, when the writer underneath can.
func (m *markingWriter) Flush() {
	if !m.wrote {
		m.WriteHeader(http.StatusOK)
	}
	if f, ok := m.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap returns the writer underneath, for http.ResponseController.
func (m *markingWriter) Unwrap() http.ResponseWriter { return m.ResponseWriter }
