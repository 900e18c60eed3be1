package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/retrypolicy/retrypolicy/fleet"
	"github.com/retrypolicy/retrypolicy/httpapi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// call sends one request to a fresh server and returns the response.
func call(t testing.TB, method, target, body, accept string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, "http://localhost"+target, strings.NewReader(body))
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	w := httptest.NewRecorder()
	httpapi.New(httpapi.Options{}).ServeHTTP(w, req)
	return w.Result()
}

func bodyOf(t testing.TB, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	require.NoError(t, err)
	return string(b)
}

// fieldProblem is one problem of an error response.
type fieldProblem struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// apiErr decodes an error response, checking its shape.
func apiErr(t testing.TB, r *http.Response, status int, code string) []fieldProblem {
	t.Helper()
	text := bodyOf(t, r)
	require.Equal(t, status, r.StatusCode, text)
	assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
	var e struct {
		Code    string         `json:"error_code"`
		Message string         `json:"error_message"`
		Errors  []fieldProblem `json:"errors"`
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&e), text)
	assert.Equal(t, code, e.Code)
	assert.NotEmpty(t, e.Message)
	require.NotNil(t, e.Errors, "errors is a list, [] when empty: %s", text)
	return e.Errors
}

// cliOut runs the command and returns what it printed on stdout.
func cliOut(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	run(args, strings.NewReader(stdin), &stdout, &stderr)
	return stdout.String()
}

func TestServeValidate(t *testing.T) {
	r := call(t, "POST", "/v1/validate", `{"strategy":"bounded","max_attempts":5}`, "")
	require.Equal(t, 200, r.StatusCode)
	assert.Equal(t, cliOut(t, `{"strategy":"bounded","max_attempts":5}`, "validate"), bodyOf(t, r), "the canonical JSON, as validate prints it")

	doc := `{"strategy":"bounded","max_attempts":0,"window_secs":1.5,"backoff":{"kind":"fixed","multiplier":2},"extra":true}`
	probs := apiErr(t, call(t, "POST", "/v1/validate", doc, ""), 400, "INVALID_BODY")
	var stderr bytes.Buffer
	run([]string{"validate"}, strings.NewReader(doc), io.Discard, &stderr)
	var lines []string
	for _, p := range probs {
		lines = append(lines, p.Message)
		assert.True(t, strings.HasPrefix(p.Message, p.Field), "%+v: the message starts with its field", p)
	}
	assert.Equal(t, strings.TrimSpace(stderr.String()), strings.Join(lines, "\n"), "every problem, as validate prints them")

	for _, bad := range []string{`{strategy: none}`, `[]`, `"none"`, ``, `{"strategy":7}`} {
		apiErr(t, call(t, "POST", "/v1/validate", bad, ""), 400, "INVALID_BODY")
	}
}

func TestServeFlags(t *testing.T) {
	r := call(t, "POST", "/v1/flags", `["--retry-strategy","bounded","--retry-max-attempts","5"]`, "")
	require.Equal(t, 200, r.StatusCode)
	assert.Equal(t, cliOut(t, "", "flags", "--retry-strategy", "bounded", "--retry-max-attempts", "5"), bodyOf(t, r))
	probs := apiErr(t, call(t, "POST", "/v1/flags", `["--retry-strategy","unless_stopped","--retry-max-attempts","5"]`, ""), 400, "INVALID_BODY")
	assert.Equal(t, []fieldProblem{{"--retry-max-attempts", "--retry-max-attempts is only valid when --retry-strategy=bounded"}}, probs)
	for _, bad := range []string{`"--retry-strategy bounded"`, `[1]`, `{}`} {
		apiErr(t, call(t, "POST", "/v1/flags", bad, ""), 400, "INVALID_BODY")
	}
}

func TestServeDecide(t *testing.T) {
	one := `{"retry_strategy":` + seedBounded + `,` + fourFails + `,"last_uptime_secs":10,"jitter_seed":"job-42","now":"2026-11-02T15:00:01Z"}`
	other := `{` + fourFails + `,"now":"2026-11-02T15:00:09Z"}`
	r := call(t, "POST", "/v1/decide", one, "")
	require.Equal(t, 200, r.StatusCode)
	want := cliOut(t, one, "decide")
	assert.Equal(t, want, bodyOf(t, r), "the decision, as decide prints it")

	bad := `{"failures":[],"now":"2026-11-02T15:00:00Z","extra":1}`
	r = call(t, "POST", "/v1/decide", "[ "+one+",\n"+other+" ,"+bad+"]", "")
	require.Equal(t, 200, r.StatusCode)
	var items []json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(bodyOf(t, r)), &items))
	require.Len(t, items, 3)
	assert.JSONEq(t, want, string(items[0]))
	assert.JSONEq(t, cliOut(t, other, "decide"), string(items[1]))
	var e struct {
		Code   string         `json:"error_code"`
		Errors []fieldProblem `json:"errors"`
	}
	require.NoError(t, json.Unmarshal(items[2], &e))
	assert.Equal(t, "INVALID_BODY", e.Code)
	assert.Equal(t, []fieldProblem{{"failures", "failures: must hold at least one failure"}, {"extra", "extra: unknown field"}}, e.Errors)

	r = call(t, "POST", "/v1/decide", "[]", "")
	assert.Equal(t, "[]\n", bodyOf(t, r))
	probs := apiErr(t, call(t, "POST", "/v1/decide", bad, ""), 400, "INVALID_BODY")
	assert.Len(t, probs, 2)
	for _, doc := range []string{"[" + one, "[" + one + "]x", "[" + one + " " + one + "]", "not json", `{"failures": 7}`} {
		apiErr(t, call(t, "POST", "/v1/decide", doc, ""), 400, "INVALID_BODY")
	}
}

func TestServePlan(t *testing.T) {
	strategy, err := os.ReadFile(filepath.Join("testdata", "cli", "strategy-bounded.json"))
	require.NoError(t, err)
	r := call(t, "POST", "/v1/plan?uptime=5&failures=4", string(strategy), "")
	require.Equal(t, 200, r.StatusCode)
	assert.Equal(t, cliOut(t, "", "plan", "--json", "--uptime", "5", "--failures", "4", "testdata/cli/strategy-bounded.json"), bodyOf(t, r))

	svg := filepath.Join(t.TempDir(), "plan.svg")
	cliOut(t, "", "plan", "--svg", svg, "--uptime", "5", "testdata/cli/strategy-bounded.json")
	want, err := os.ReadFile(svg)
	require.NoError(t, err)
	r = call(t, "POST", "/v1/plan?uptime=5s", string(strategy), "image/svg+xml")
	assert.Equal(t, "image/svg+xml", r.Header.Get("Content-Type"))
	assert.Equal(t, string(want), bodyOf(t, r), "the picture plan --svg draws")

	for query, field := range map[string]string{"failures=0": "failures", "uptime=5x": "uptime", "uptim=5": "uptim", "failures=3&failures=4": "failures"} {
		probs := apiErr(t, call(t, "POST", "/v1/plan?"+query, "null", ""), 400, "INVALID_PARAMETER")
		assert.Equal(t, field, probs[0].Field, query)
	}
	probs := apiErr(t, call(t, "POST", "/v1/plan?uptim=5", "null", ""), 400, "INVALID_PARAMETER")
	assert.Contains(t, probs[0].Message, "did you mean uptime?")
	apiErr(t, call(t, "POST", "/v1/plan", `{"strategy":"bounded"}`, ""), 400, "INVALID_BODY")
}

func TestServeLint(t *testing.T) {
	r := call(t, "POST", "/v1/lint", `{"strategy":"bounded","max_attempts":5,"window_secs":60,"backoff":{"kind":"fixed","base_delay_secs":30}}`, "")
	require.Equal(t, 200, r.StatusCode)
	assert.Equal(t, cliOut(t, `{"strategy":"bounded","max_attempts":5,"window_secs":60,"backoff":{"kind":"fixed","base_delay_secs":30}}`, "lint", "--json"), bodyOf(t, r))
	apiErr(t, call(t, "POST", "/v1/lint?json=1", "null", ""), 400, "INVALID_PARAMETER")
	apiErr(t, call(t, "POST", "/v1/lint", `{"strategy":"sometimes"}`, ""), 400, "INVALID_BODY")
}

func TestServeSimulate(t *testing.T) {
	strategy, err := os.ReadFile(filepath.Join("testdata", "cli", "strategy-jitter.json"))
	require.NoError(t, err)
	r := call(t, "POST", "/v1/simulate?jobs=200&tick=0&seed=3&spread=1m", string(strategy), "")
	require.Equal(t, 200, r.StatusCode)
	want := cliOut(t, "", "simulate", "--json", "--jobs", "200", "--tick", "0", "--seed", "3", "--spread", "1m", "testdata/cli/strategy-jitter.json")
	assert.Equal(t, strings.Replace(want, `"strategy":"strategy-jitter"`, `"strategy":"posted"`, 1), bodyOf(t, r))

	r = call(t, "POST", "/v1/simulate?scenario=contention&clients=20&runs=5", string(strategy), "")
	require.Equal(t, 200, r.StatusCode)
	want = cliOut(t, "", "simulate", "--json", "--scenario", "contention", "--clients", "20", "--runs", "5", "testdata/cli/strategy-jitter.json")
	assert.Equal(t, strings.Replace(want, `"strategy":"strategy-jitter"`, `"strategy":"posted"`, 1), bodyOf(t, r))

	// The collapse: an array of the policies the command prints a line each.
	r = call(t, "POST", "/v1/simulate?scenario=collapse&duration=90s&trigger-at=40s&seed=2", string(strategy), "")
	require.Equal(t, 200, r.StatusCode)
	want = cliOut(t, "", "simulate", "--json", "--scenario", "collapse", "--duration", "90s", "--trigger-at", "40s", "--seed", "2", "testdata/cli/strategy-jitter.json")
	var fromServer, fromCLI []map[string]any
	require.NoError(t, json.Unmarshal([]byte(bodyOf(t, r)), &fromServer))
	for _, line := range strings.Split(strings.TrimSpace(want), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		fromCLI = append(fromCLI, m)
	}
	assert.Equal(t, fromCLI, fromServer)
	assert.Len(t, fromServer, len(fleet.CollapsePolicies()))
	r = call(t, "POST", "/v1/simulate?scenario=collapse&duration=90s&trigger-at=40s", "null", "image/svg+xml")
	require.Equal(t, 200, r.StatusCode)
	assert.Equal(t, len(fleet.CollapsePolicies()), strings.Count(bodyOf(t, r), `class="load"`))
	probs := apiErr(t, call(t, "POST", "/v1/simulate?scenario=collapse&workers=0", "null", ""), 400, "INVALID_PARAMETER")
	assert.Equal(t, "workers", probs[0].Field)

	r = call(t, "POST", "/v1/simulate?jobs=50", "null", "image/svg+xml")
	require.Equal(t, 200, r.StatusCode)
	assert.Equal(t, "image/svg+xml", r.Header.Get("Content-Type"))
	assert.Equal(t, 1, strings.Count(bodyOf(t, r), `class="load"`))

	apiErr(t, call(t, "POST", "/v1/simulate?scenario=contention", "null", "image/svg+xml"), 406, "NOT_ACCEPTABLE")
	for query, field := range map[string]string{"jobs=200000": "jobs", "clients=2000&scenario=contention": "clients", "scenario=storm": "scenario", "outage=0": "outage", "tick=-1": "tick"} {
		probs := apiErr(t, call(t, "POST", "/v1/simulate?"+query, "null", ""), 400, "INVALID_PARAMETER")
		assert.Equal(t, field, probs[0].Field, query)
	}
}

func TestServeErrors(t *testing.T) {
	apiErr(t, call(t, "GET", "/v2/decide", "", ""), 404, "NOT_FOUND")
	r := call(t, "GET", "/v1/validate", "", "")
	apiErr(t, r, 405, "METHOD_NOT_ALLOWED")
	assert.Equal(t, "POST", r.Header.Get("Allow"))
	r = call(t, "POST", "/", "", "")
	apiErr(t, r, 405, "METHOD_NOT_ALLOWED")
	assert.Equal(t, "GET", r.Header.Get("Allow"))
	huge := `{"strategy":"none","x":"` + strings.Repeat("x", 1<<20) + `"}`
	for _, path := range []string{"/v1/validate", "/v1/decide", "/v1/plan", "/v1/lint", "/v1/simulate", "/v1/flags"} {
		apiErr(t, call(t, "POST", path, huge, ""), 413, "PAYLOAD_TOO_LARGE")
	}
}

func TestServePage(t *testing.T) {
	r := call(t, "GET", "/", "", "")
	require.Equal(t, 200, r.StatusCode)
	assert.Equal(t, "text/html; charset=utf-8", r.Header.Get("Content-Type"))
	page := bodyOf(t, r)
	for _, id := range []string{"strategy", "max_attempts", "window_secs", "backoff_kind", "base_delay_secs", "multiplier", "max_delay_secs", "flags", "canonical", "plan-table", "plan-chart", "lint", "sim-chart"} {
		assert.Contains(t, page, `id="`+id+`"`)
	}
	assert.NotContains(t, page, "http://", "no external assets")
	assert.NotContains(t, page, "https://", "no external assets")
	r = call(t, "HEAD", "/", "", "")
	assert.Equal(t, 200, r.StatusCode)
	assert.Empty(t, bodyOf(t, r))
}

// FuzzServe: whatever the body, every endpoint answers 200 or a 4xx whose
// body is the error shape, never a 5xx or a panic.
func FuzzServe(f *testing.F) {
	paths := []string{"/v1/validate", "/v1/flags", "/v1/decide", "/v1/plan?failures=3", "/v1/lint", "/v1/simulate?jobs=20&outage=5m", "/v1/simulate?scenario=contention&clients=5&runs=2"}
	for i, seed := range []string{`null`, `{"strategy":"bounded","max_attempts":2}`, `["--retry-strategy","none"]`,
		`[{` + oneFailure + `}]`, `{` + oneFailure + `}`, `{"strategy":"unless_stopped","backoff":{"kind":"fixed","base_delay_secs":60}}`, `[`} {
		f.Add(uint8(i), []byte(seed))
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		r := call(t, "POST", paths[int(which)%len(paths)], string(body), "")
		text := bodyOf(t, r)
		if r.StatusCode >= 500 {
			t.Fatalf("%d for %q: %s", r.StatusCode, body, text)
		}
		if !json.Valid([]byte(text)) {
			t.Fatalf("not JSON for %q: %s", body, text)
		}
		if r.StatusCode != 200 && !strings.Contains(text, `"error_code"`) {
			t.Fatalf("%d without the error shape: %s", r.StatusCode, text)
		}
	})
}

// BenchmarkServeDecide decides the same 30,000 requests through decide
// --lines (impl=lines) and through POST /v1/decide on a loopback server in
// batches of 1,000 (impl=http): ns/request side by side.
func BenchmarkServeDecide(b *testing.B) {
	lines := []string{
		`{"retry_strategy":` + seedBounded + `,` + fourFails + `,"last_uptime_secs":10,"jitter_seed":"job-1","now":"2026-11-02T15:00:01Z"}`,
		`{` + fourFails + `,"now":"2026-11-02T15:00:09Z"}`,
		`{"retry_strategy":{"strategy":"unless_stopped","backoff":{"kind":"exponential_with_jitter","base_delay_secs":2}},"failures":["2026-11-02T15:00:00+01:00"],"last_uptime_secs":0.25,"jitter_seed":"job-2","now":"2026-11-02T15:00:01.5Z"}`,
	}
	const requests, batch = 30000, 1000
	var stream bytes.Buffer
	var batches [][]byte
	var cur []string
	for i := range requests {
		stream.WriteString(lines[i%len(lines)])
		stream.WriteByte('\n')
		if cur = append(cur, lines[i%len(lines)]); len(cur) == batch {
			batches = append(batches, []byte("["+strings.Join(cur, ",")+"]"))
			cur = nil
		}
	}
	perRequest := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/requests, "ns/request")
	}
	b.Run("impl=lines", func(b *testing.B) {
		data := stream.Bytes()
		b.ReportAllocs()
		for b.Loop() {
			if code := run([]string{"decide", "--lines"}, bytes.NewReader(data), io.Discard, io.Discard); code != 0 {
				b.Fatal(code)
			}
		}
		perRequest(b)
	})
	b.Run("impl=http", func(b *testing.B) {
		srv := httptest.NewServer(httpapi.New(httpapi.Options{}))
		defer srv.Close()
		client := srv.Client()
		b.ReportAllocs()
		for b.Loop() {
			for _, body := range batches {
				r, err := client.Post(srv.URL+"/v1/decide", "application/json", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(io.Discard, r.Body)
				r.Body.Close()
				if err != nil || r.StatusCode != 200 || n < batch*100 {
					b.Fatal(err, r.StatusCode, n)
				}
			}
		}
		perRequest(b)
	})
}

// TestZeroDelaySimulationEnds: the strategy whose simulation once grew
// without end (8 GB in a minute with --tick 0) ends, cut at a job's bound
// and saying so; under the default tick it runs to the end.
func TestZeroDelaySimulationEnds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "zero.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"strategy":"unless_stopped","backoff":{"kind":"exponential","base_delay_secs":1,"multiplier":1e-300}}`), 0o644))
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"simulate", "--tick", "0", "--jobs", "10", path}, nil, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "zero: truncated at a job with 100000 failures in its window: after ")
	stdout.Reset()
	require.Equal(t, 0, run([]string{"simulate", "--json", "--jobs", "10", path}, nil, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), `"runs":310,`, "a run each minute of the outage, and the one that succeeds")
	assert.Contains(t, stdout.String(), `"truncated":false`)
}

// buildCommand builds the command into a temporary directory.
func buildCommand(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "retrypolicy")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// TestServeStopsUnderLoad: a server saturated with simulations stops on
// SIGTERM within its grace period: the work under way stops with it.
func TestServeStopsUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	cmd := exec.Command(buildCommand(t), "serve", "--addr", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	said := bufio.NewReader(stderr)
	line, err := said.ReadString('\n')
	require.NoError(t, err)
	base := regexp.MustCompile(`http://\S+`).FindString(line)
	require.NotEmpty(t, base, line)

	// Clients that send the heaviest simulation the limits allow, again
	// and again, until the server is gone.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	answered := make(chan int, 1000)
	for range 8 {
		go func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/simulate?jobs=100000&outage=720h&tick=0", strings.NewReader(`{"strategy":"unless_stopped","backoff":{"kind":"fixed","base_delay_secs":1}}`))
				r, err := http.DefaultClient.Do(req)
				if err != nil {
					return
				}
				io.Copy(io.Discard, r.Body)
				r.Body.Close()
				answered <- r.StatusCode
			}
		}()
	}
	for seen := 0; seen < 10; seen++ { // the work and the shedding under way
		select {
		case <-answered:
		case <-time.After(time.Minute):
			t.Fatal("no answer within a minute")
		}
	}
	var rest []byte
	stopped := make(chan error, 1)
	go func() {
		rest, _ = io.ReadAll(said) // to the end, before Wait closes the pipe
		stopped <- cmd.Wait()
	}()
	start := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-stopped:
		require.NoError(t, err, "a graceful stop exits 0")
		t.Logf("stopped %v after SIGTERM", time.Since(start).Round(time.Millisecond))
	case <-time.After(grace + 5*time.Second):
		cmd.Process.Kill()
		t.Fatalf("still running %s after SIGTERM", grace+5*time.Second)
	}
	assert.Contains(t, string(rest), "retrypolicy: stopped")
}
