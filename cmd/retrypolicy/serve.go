package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/echo"
	"github.com/retrypolicy/retrypolicy/internal/jsonscan"
	"github.com/retrypolicy/retrypolicy/plan"
)

// maxBody is the largest request body the server reads.
const maxBody = 1 << 20

// The server's bounds on a simulation, so that one request takes seconds
// at most.
const (
	serveJobs    = 100_000
	serveClients = 1_000
	serveRuns    = 1_000
)

//go:embed page.html
var page []byte

func runServe(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("serve", "serve [--addr HOST:PORT]", `Serves the library over HTTP, and at / a page for choosing a strategy by looking at it:
POST /v1/validate, /v1/flags, /v1/decide (a request, or an array of them), /v1/plan,
/v1/lint and /v1/simulate, each answering what the subcommand's --json prints; an error is
{"error_code", "error_message", "errors": [{"field", "message"}]}. It stops gracefully on
SIGINT or SIGTERM.`, stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "the `HOST:PORT` to listen on; loopback unless it says otherwise (:0 picks a free port)")
	if _, stop := parseArgs(fs, args, stdout, stderr, 0); stop >= 0 {
		return stop
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(stderr, "retrypolicy: serve:", err)
		return exitIO
	}
	srv := &http.Server{
		Handler:           newServer(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
	}
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stderr, "retrypolicy: serving on http://%s (Ctrl-C stops it)\n", ln.Addr())
	select {
	case err := <-served:
		fmt.Fprintln(stderr, "retrypolicy: serve:", err)
		return exitIO
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		fmt.Fprintln(stderr, "retrypolicy: serve: stopping:", err)
		return exitIO
	}
	fmt.Fprintln(stderr, "retrypolicy: stopped")
	return exitOK
}

// server answers the HTTP API. It is safe for concurrent use: each
// request takes a decider of its own from the pool.
type server struct {
	deciders sync.Pool
	routes   map[string]route
}

// route is a path's method and handler.
type route struct {
	method string
	handle func(w http.ResponseWriter, r *http.Request, body []byte) *apiError
}

func newServer() http.Handler {
	s := &server{}
	s.deciders.New = func() any { return newDecider() }
	s.routes = map[string]route{
		"/":            {http.MethodGet, s.page},
		"/v1/validate": {http.MethodPost, s.validate},
		"/v1/flags":    {http.MethodPost, s.flags},
		"/v1/decide":   {http.MethodPost, s.decide},
		"/v1/plan":     {http.MethodPost, s.plan},
		"/v1/lint":     {http.MethodPost, s.lint},
		"/v1/simulate": {http.MethodPost, s.simulate},
	}
	return s
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

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt, ok := s.routes[r.URL.Path]
	var aerr *apiError
	switch {
	case !ok:
		aerr = &apiError{status: http.StatusNotFound, code: "NOT_FOUND", message: "no such path: " + echo.Quote(r.URL.Path)}
	case r.Method != rt.method && !(rt.method == http.MethodGet && r.Method == http.MethodHead):
		w.Header().Set("Allow", rt.method)
		aerr = &apiError{status: http.StatusMethodNotAllowed, code: "METHOD_NOT_ALLOWED", message: r.URL.Path + " takes " + rt.method}
	default:
		body, err := readBody(w, r)
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			aerr = &apiError{status: http.StatusRequestEntityTooLarge, code: "PAYLOAD_TOO_LARGE", message: fmt.Sprintf("the body must be at most %d bytes", maxBody)}
		case err != nil:
			aerr = &apiError{status: http.StatusBadRequest, code: "INVALID_BODY", message: "reading the body: " + err.Error()}
		default:
			aerr = rt.handle(w, r, body)
		}
	}
	if aerr != nil {
		writeError(w, aerr)
	}
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

// readBody reads the body, at most maxBody bytes, into a buffer of the
// size the request announces.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, min(max(r.ContentLength, 0), maxBody)+bytes.MinRead))
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, maxBody))
	return buf.Bytes(), err
}

func writeError(w http.ResponseWriter, e *apiError) {
	b := e.json()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	w.Write(append(b, '\n'))
}

func writeJSON(w http.ResponseWriter, b []byte) *apiError {
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
	w.Write([]byte{'\n'})
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
		out = append(out, fieldProblem{"$", fmt.Sprintf("and %d more", ve.Omitted)})
	}
	return out
}

// lineProblems are decide's problems, each a line "FIELD: MESSAGE".
func lineProblems(lines []string) []fieldProblem {
	out := make([]fieldProblem, len(lines))
	for i, line := range lines {
		field, _, ok := strings.Cut(line, ": ")
		if !ok {
			field = "$"
		}
		out[i] = fieldProblem{field, line}
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

// noQuery refuses query parameters where an endpoint takes none.
func noQuery(r *http.Request) *apiError {
	return setQuery(flag.NewFlagSet("", flag.ContinueOnError), r.URL.Query())
}

// setQuery sets fs's flags from the query's parameters, named as the
// flags are, each at most once.
func setQuery(fs *flag.FlagSet, q url.Values) *apiError {
	var probs []fieldProblem
	for _, name := range slices.Sorted(maps.Keys(q)) {
		values := q[name]
		switch {
		case fs.Lookup(name) == nil:
			var names []string
			fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
			probs = append(probs, fieldProblem{name, echo.Text(name) + ": unknown parameter" + echo.SuggestFrom(name, names)})
		case len(values) > 1:
			probs = append(probs, fieldProblem{name, name + ": given more than once"})
		default:
			if err := fs.Set(name, values[0]); err != nil {
				probs = append(probs, fieldProblem{name, name + ": " + err.Error() + ", got " + echo.Quote(values[0])})
			}
		}
	}
	if probs != nil {
		return invalid("INVALID_PARAMETER", probs)
	}
	return nil
}

// optionProblems are options out of range, as parameters.
func optionProblems(errs []option) *apiError {
	probs := make([]fieldProblem, len(errs))
	for i, e := range errs {
		probs[i] = fieldProblem{e.name, e.Error()}
	}
	return invalid("INVALID_PARAMETER", probs)
}

// wantsSVG reports whether the request asks for a picture.
func wantsSVG(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "image/svg+xml")
}

func writeSVG(w http.ResponseWriter, svg []byte) *apiError {
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Write(svg)
	return nil
}

func (s *server) page(w http.ResponseWriter, r *http.Request, _ []byte) *apiError {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data: blob:")
	if r.Method != http.MethodHead {
		w.Write(page)
	}
	return nil
}

func (s *server) validate(w http.ResponseWriter, r *http.Request, body []byte) *apiError {
	if e := noQuery(r); e != nil {
		return e
	}
	st, e := strategyBody(body)
	if e != nil {
		return e
	}
	canonical, _ := st.MarshalJSON()
	return writeJSON(w, canonical)
}

func (s *server) flags(w http.ResponseWriter, r *http.Request, body []byte) *apiError {
	if e := noQuery(r); e != nil {
		return e
	}
	var args []string
	if err := json.Unmarshal(body, &args); err != nil {
		return invalid("INVALID_BODY", []fieldProblem{{"$", `$: must be a JSON array of strings, the flags as a shell splits them: ["--retry-strategy", "bounded"]`}})
	}
	st, err := retrypolicy.ParseFlags(args)
	if err != nil {
		return invalid("INVALID_BODY", strategyProblems(err))
	}
	canonical, _ := st.MarshalJSON()
	return writeJSON(w, canonical)
}

// decide answers one request with its decision, or an array of them with
// an array: each element a decision, or the error object of its problems.
func (s *server) decide(w http.ResponseWriter, r *http.Request, body []byte) *apiError {
	if e := noQuery(r); e != nil {
		return e
	}
	d := s.deciders.Get().(*decider)
	defer s.deciders.Put(d)
	var sc jsonscan.Scanner
	sc.Reset(body)
	if sc.Peek() != '[' {
		out, probs := d.decide(body, nil)
		if probs != nil {
			return invalid("INVALID_BODY", lineProblems(probs))
		}
		return writeJSON(w, out)
	}
	// One pass: each element is found by its brackets alone and read, and
	// so checked, by the decider; the array's own syntax is checked here.
	sc.Next()
	out := make([]byte, 0, len(body)+2) // a decision is about as long as its request
	out = append(out, '[')
	for n := 0; !sc.Bad() && sc.Peek() != ']'; n++ {
		if n > 0 && !sc.Consume(',') {
			break
		}
		item := sc.Skip()
		if sc.Bad() {
			break
		}
		if n > 0 {
			out = append(out, ',')
		}
		var probs []string
		if out, probs = d.decide(item, out); probs != nil {
			out = append(out, invalid("INVALID_BODY", lineProblems(probs)).json()...)
		}
	}
	if sc.Bad() || !sc.Consume(']') || sc.Peek() != 0 {
		return invalid("INVALID_BODY", []fieldProblem{{"$", syntaxProblem(body, 0)}})
	}
	return writeJSON(w, append(out, ']'))
}

func (s *server) plan(w http.ResponseWriter, r *http.Request, body []byte) *apiError {
	var o planOptions
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	o.define(fs)
	if e := setQuery(fs, r.URL.Query()); e != nil {
		return e
	}
	if errs := o.check(); errs != nil {
		return optionProblems(errs)
	}
	st, e := strategyBody(body)
	if e != nil {
		return e
	}
	steps, report, err := o.run(st)
	if err != nil {
		return invalid("INVALID_BODY", strategyProblems(err))
	}
	if wantsSVG(r) {
		return writeSVG(w, timeline(st, time.Duration(o.uptime), steps))
	}
	return writeJSON(w, planJSON(st, time.Duration(o.uptime), steps, report))
}

func (s *server) lint(w http.ResponseWriter, r *http.Request, body []byte) *apiError {
	if e := noQuery(r); e != nil {
		return e
	}
	st, e := strategyBody(body)
	if e != nil {
		return e
	}
	report, err := plan.Lint(st)
	if err != nil {
		return invalid("INVALID_BODY", strategyProblems(err))
	}
	b, _ := json.Marshal(report)
	return writeJSON(w, b)
}

func (s *server) simulate(w http.ResponseWriter, r *http.Request, body []byte) *apiError {
	var o simulateOptions
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	o.define(fs)
	if e := setQuery(fs, r.URL.Query()); e != nil {
		return e
	}
	if errs := o.check(serveJobs, serveClients, serveRuns); errs != nil {
		return optionProblems(errs)
	}
	st, e := strategyBody(body)
	if e != nil {
		return e
	}
	if o.scenario == "contention" {
		if wantsSVG(r) {
			return &apiError{status: http.StatusNotAcceptable, code: "NOT_ACCEPTABLE", message: "only the outage scenario draws a picture"}
		}
		res, err := o.contention().Run(plan.Contender{Name: "posted", Strategy: st})
		if err != nil {
			return invalid("INVALID_BODY", strategyProblems(err))
		}
		return writeJSON(w, contentionJSON(res))
	}
	out := o.outage()
	res, err := out.Run(st)
	if err != nil {
		return invalid("INVALID_BODY", strategyProblems(err))
	}
	if wantsSVG(r) {
		return writeSVG(w, loadChart(out, []named{{"this strategy", st}}, []plan.OutageResult{res}))
	}
	return writeJSON(w, outageJSON("posted", res))
}
