// Package httpapi serves the library over HTTP, as an http.Handler.
//
// It is for schedulers written in any language and for people choosing a
// strategy: what `retrypolicy serve` runs, as a handler a Go program mounts
// on its own mux.
//
//	mux := http.NewServeMux()
//	mux.Handle("/retrypolicy/", http.StripPrefix("/retrypolicy", httpapi.New(httpapi.Options{})))
//
// # Endpoints
//
// POST /v1/validate (a strategy descriptor: its canonical JSON), /v1/flags
// (the ampctl flags as a JSON array of strings), /v1/decide (a decide
// request, or an array of at most MaxBatch of them), /v1/plan, /v1/lint and
// /v1/simulate (a descriptor; the command's flags as query parameters),
// and GET / for a page that shows them. The answers are what the command's
// subcommands print with --json; every error is
//
//	{"error_code": "…", "error_message": "…", "errors": [{"field": "…", "message": "…"}]}
//
// A decide request, the wire format of /v1/decide, is
//
//	{"retry_strategy": {…}, "failures": ["RFC 3339", …], "last_uptime_secs": 12.5,
//	 "jitter_seed": "job-42", "now": "RFC 3339"}
//
// read as strictly as a descriptor.
//
// # Bounds
//
// Every request is bounded whatever it holds. Bodies are at most MaxBody
// bytes (a longer declared length is refused at once, 413), and each is
// read within BodyTimeout by one of MaxBodyReaders readers before its
// request takes one of the MaxInFlight slots that answer: clients that
// send their bodies a byte at a time hold readers, not the server. At most
// MaxExpensive plans, lints and simulations run at once. A request beyond
// any of these is answered 503 BUSY with Retry-After at once, never
// queued. A plan, lint or simulation stops when its Budget is spent
// (503 TIME_BUDGET_SPENT) or its request's context is done, and a
// simulation follows at most MaxRuns runs (an outage) or calls (a call
// chain, a collapse, a tail: each policy's run) or MaxMessages messages (a
// contention), saying "truncated" when it stops there. A
// batch's answer is written as it is decided, so its memory does not grow
// with the batch.
//
// Mount the handler on an http.Server with read and write timeouts: the
// command uses ReadHeaderTimeout 5 s, ReadTimeout 10 s and WriteTimeout of
// the Budget plus 10 s.
//
// # Browsers
//
// Cross-origin browser requests are refused ([http.CrossOriginProtection]),
// and so are requests whose Host is not a loopback name (localhost,
// 127.0.0.0/8, ::1) or one of Options.Hosts, against DNS rebinding. The
// page's policy allows only its own script, and no framing; every answer
// says X-Content-Type-Options: nosniff. Clients that are not browsers
// (curl, a scheduler's HTTP client) need no extra header.
package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/capped"
	"github.com/retrypolicy/retrypolicy/internal/echo"
	"github.com/retrypolicy/retrypolicy/internal/front/report"
)

// Options are the handler's limits. The zero Options are the safe
// defaults: every zero field means its default.
type Options struct {
	// Budget is how long one plan, lint or simulation may work; zero is 5
	// seconds.
	Budget time.Duration
	// MaxExpensive is how many plans, lints and simulations run at once;
	// zero is one less than GOMAXPROCS, and at least 1, so that a core
	// stays free for validate, flags and decide.
	MaxExpensive int
	// MaxInFlight is how many requests of every kind are answered at once,
	// their bodies read; zero is 64, which with 1 MiB bodies holds under
	// 100 MB.
	MaxInFlight int
	// MaxBody is the largest request body read, in bytes; zero is 1 MiB.
	// A request that declares a longer one is refused at once (413).
	MaxBody int64
	// MaxBodyReaders is how many request bodies are read at once, each
	// before its request takes an in-flight slot, so that clients that
	// send their bodies slowly hold readers, not the slots that answer;
	// zero is twice MaxInFlight. The bodies being read hold at most
	// MaxBodyReaders × MaxBody bytes.
	MaxBodyReaders int
	// BodyTimeout is how long a request's body may take to arrive once its
	// headers have; zero is 2 seconds. A body later than that is answered
	// 408 BODY_TIMEOUT.
	BodyTimeout time.Duration
	// MaxBatch is the most requests one /v1/decide array holds; zero is
	// 1,000.
	MaxBatch int
	// MaxJobs, MaxClients and MaxContentionRuns bound simulate's jobs,
	// clients and runs parameters; zero is 100,000, 1,000 and 1,000.
	MaxJobs, MaxClients, MaxContentionRuns int
	// MaxRuns is the most runs an outage follows in all (and the most its
	// max-runs parameter may ask for); zero is 2,000,000, under a second.
	MaxRuns int
	// MaxMessages is the most messages a contention follows in all; zero
	// is 10,000,000, about a second.
	MaxMessages int
	// Hosts are the names (with or without a port) that the Host header
	// may give beside the loopback ones, such as the name a server on
	// another interface is reached by.
	Hosts []string
}

// withDefaults returns o with its zero fields filled.
func (o Options) withDefaults() Options {
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	if o.Budget <= 0 {
		o.Budget = 5 * time.Second
	}
	set(&o.MaxExpensive, max(1, runtime.GOMAXPROCS(0)-1))
	set(&o.MaxInFlight, 64)
	set(&o.MaxBodyReaders, 2*o.MaxInFlight)
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = 2 * time.Second
	}
	if o.MaxBody <= 0 {
		o.MaxBody = 1 << 20
	}
	set(&o.MaxBatch, 1000)
	set(&o.MaxJobs, 100_000)
	set(&o.MaxClients, 1000)
	set(&o.MaxContentionRuns, 1000)
	set(&o.MaxRuns, 2_000_000)
	set(&o.MaxMessages, 10_000_000)
	return o
}

// Handler answers the HTTP API. It is safe for concurrent use.
type Handler struct {
	o         Options
	hosts     map[string]bool // Options.Hosts, without ports, lower case
	cop       *http.CrossOriginProtection
	readers   chan struct{} // a token per body being read
	inFlight  chan struct{} // a token per request being answered
	expensive chan struct{} // a token per plan, lint or simulation running
	deciders  sync.Pool
	routes    map[string]route
}

// route is a path's method, handler, and whether its work is expensive.
type route struct {
	method    string
	handle    func(w http.ResponseWriter, r *http.Request, body []byte) *apiError
	expensive bool
}

// New returns a handler with the limits of o.
func New(o Options) *Handler {
	h := &Handler{o: o.withDefaults(), hosts: map[string]bool{}, cop: http.NewCrossOriginProtection()}
	for _, name := range o.Hosts {
		h.hosts[hostname(name)] = true
	}
	h.readers = make(chan struct{}, h.o.MaxBodyReaders)
	h.inFlight = make(chan struct{}, h.o.MaxInFlight)
	h.expensive = make(chan struct{}, h.o.MaxExpensive)
	h.deciders.New = func() any { return report.NewDecider() }
	h.routes = map[string]route{
		"/":            {http.MethodGet, h.page, false},
		"/page.js":     {http.MethodGet, h.script, false},
		"/v1/validate": {http.MethodPost, h.validate, false},
		"/v1/flags":    {http.MethodPost, h.flags, false},
		"/v1/decide":   {http.MethodPost, h.decide, false},
		"/v1/plan":     {http.MethodPost, h.plan, true},
		"/v1/lint":     {http.MethodPost, h.lint, true},
		"/v1/simulate": {http.MethodPost, h.simulate, true},
		"/v1/replay":   {http.MethodPost, h.replay, true},
	}
	return h
}

// hostname returns the host of a Host header or an address, lower case,
// without its port or brackets.
func hostname(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return strings.ToLower(strings.Trim(host, "[]"))
}

// hostAllowed reports whether a request's Host names this server: a
// loopback name, or one of Options.Hosts. An empty Host (HTTP/1.0, which
// no browser sends) passes.
func (h *Handler) hostAllowed(host string) bool {
	if host == "" {
		return true
	}
	name := hostname(host)
	if name == "localhost" || h.hosts[name] {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// ServeHTTP answers one request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if aerr := h.serve(w, r); aerr != nil {
		writeError(w, aerr)
	}
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request) *apiError {
	if !h.hostAllowed(r.Host) {
		return &apiError{status: http.StatusForbidden, code: "FORBIDDEN_HOST",
			message: "the Host header must name this server (a loopback name, or a host it was told to answer to), got " + echo.Quote(r.Host)}
	}
	if err := h.cop.Check(r); err != nil {
		return &apiError{status: http.StatusForbidden, code: "CROSS_ORIGIN", message: "a browser request from another site is refused: " + err.Error()}
	}
	rt, ok := h.routes[r.URL.Path]
	switch {
	case !ok:
		return &apiError{status: http.StatusNotFound, code: "NOT_FOUND", message: "no such path: " + echo.Quote(r.URL.Path)}
	case r.Method != rt.method && !(rt.method == http.MethodGet && r.Method == http.MethodHead):
		w.Header().Set("Allow", rt.method)
		return &apiError{status: http.StatusMethodNotAllowed, code: "METHOD_NOT_ALLOWED", message: r.URL.Path + " takes " + rt.method}
	}
	body, aerr := h.readBody(w, r)
	if aerr != nil {
		return aerr
	}
	release, aerr := take(w, h.inFlight, "requests")
	if aerr != nil {
		return aerr
	}
	defer release()
	if rt.expensive {
		release, aerr := take(w, h.expensive, "plans, lints and simulations")
		if aerr != nil {
			return aerr
		}
		defer release()
	}
	return rt.handle(w, r, body)
}

// take takes a token from tokens, or answers 503 BUSY with Retry-After at
// once when none is free: a request is never queued.
func take(w http.ResponseWriter, tokens chan struct{}, what string) (func(), *apiError) {
	select {
	case tokens <- struct{}{}:
		return func() { <-tokens }, nil
	default:
		w.Header().Set("Retry-After", "1")
		return nil, &apiError{status: http.StatusServiceUnavailable, code: "BUSY",
			message: fmt.Sprintf("the server is running as many %s as it takes at once (%d); try again after Retry-After", what, cap(tokens))}
	}
}

// readBody reads a POST's body, at most MaxBody bytes, into a buffer of
// the size the request announces: in one of the body readers, within
// BodyTimeout. A declared length over MaxBody is refused before anything
// is read.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	if r.Method != http.MethodPost {
		return nil, nil
	}
	limit := h.o.MaxBody
	tooLarge := &apiError{status: http.StatusRequestEntityTooLarge, code: "PAYLOAD_TOO_LARGE", message: fmt.Sprintf("the body must be at most %d bytes", limit)}
	if r.ContentLength > limit {
		w.Header().Set("Connection", "close") // the body is left unread: the connection cannot carry another request
		return nil, tooLarge
	}
	release, aerr := take(w, h.readers, "bodies being read")
	if aerr != nil {
		w.Header().Set("Connection", "close")
		return nil, aerr
	}
	defer release()
	// Where the writer cannot set a deadline (a handler under test), the
	// server's own read timeout is the only one.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(h.o.BodyTimeout))
	buf := bytes.NewBuffer(make([]byte, 0, min(max(r.ContentLength, 0), limit)+bytes.MinRead))
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	var over *http.MaxBytesError
	switch {
	case errors.As(err, &over):
		return nil, tooLarge
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, &apiError{status: http.StatusRequestTimeout, code: "BODY_TIMEOUT", message: fmt.Sprintf("the body did not arrive within %v", h.o.BodyTimeout)}
	case err != nil:
		return nil, &apiError{status: http.StatusBadRequest, code: "INVALID_BODY", message: "reading the body: " + err.Error()}
	}
	return buf.Bytes(), nil
}

// apiError is an error response: {"error_code", "error_message",
// "errors": [{"field", "message"}]}.
type apiError struct {
	status  int
	code    string
	message string
	errors  []fieldProblem
}

type fieldProblem struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// json is the error's body.
func (e *apiError) json() []byte {
	problems := e.errors
	if problems == nil {
		problems = []fieldProblem{}
	}
	b, _ := json.Marshal(struct {
		Code    string         `json:"error_code"`
		Message string         `json:"error_message"`
		Errors  []fieldProblem `json:"errors"`
	}{e.code, e.message, problems})
	return b
}

func writeError(w http.ResponseWriter, e *apiError) {
	b := e.json()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(e.status)
	w.Write(append(b, '\n'))
}

func writeJSON(w http.ResponseWriter, b []byte) *apiError {
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(b, '\n'))
	return nil
}

// invalid is the 400 for problems, each "FIELD: MESSAGE" or "FLAG …".
func invalid(code string, problems []fieldProblem) *apiError {
	msg := problems[0].Message
	if len(problems) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(problems)-1)
	}
	return &apiError{status: http.StatusBadRequest, code: code, message: msg, errors: problems}
}

// stopped answers work that its context stopped: its budget spent, or its
// request cancelled (the client gone, or the server stopping).
func (h *Handler) stopped(err error) *apiError {
	if errors.Is(err, context.DeadlineExceeded) {
		return &apiError{status: http.StatusServiceUnavailable, code: "TIME_BUDGET_SPENT",
			message: fmt.Sprintf("the work ran past its budget of %s: ask for less (fewer jobs or failures, a shorter outage, fewer runs)", h.o.Budget)}
	}
	return &apiError{status: http.StatusServiceUnavailable, code: "CANCELLED", message: "the request was cancelled: its client went away or the server is stopping"}
}

// strategyProblems are the problems of an invalid strategy, or of a body
// that could not be read as one.
func strategyProblems(err error) []fieldProblem {
	var ve *retrypolicy.ValidationError
	if !errors.As(err, &ve) {
		return []fieldProblem{{"$", "$: " + err.Error()}}
	}
	out := make([]fieldProblem, 0, len(ve.Errors)+1)
	for _, fe := range ve.Errors {
		out = append(out, fieldProblem{fe.Field, fe.Error()})
	}
	if ve.Omitted > 0 {
		out = append(out, fieldProblem{"$", capped.AndMore(ve.Omitted)})
	}
	return out
}

// strategyBody reads the body as a strategy descriptor.
func strategyBody(body []byte) (retrypolicy.Strategy, *apiError) {
	s, err := retrypolicy.Parse(body)
	if err != nil {
		return s, invalid("INVALID_BODY", strategyProblems(err))
	}
	return s, nil
}
