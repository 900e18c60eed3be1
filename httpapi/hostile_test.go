package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy/fleet"
	"github.com/retrypolicy/retrypolicy/internal/front/report"
)

// zeroDelay owes 1 s after the first failure and 0 ns after every later
// one: the strategy that once ran the server out of memory.
const zeroDelay = `{"strategy":"unless_stopped","backoff":{"kind":"exponential","base_delay_secs":1,"multiplier":1e-300}}`

// answer is a response read whole.
type answer struct {
	status int
	header http.Header
	body   string
}

// errorBody is the JSON error shape, decoded strictly.
type errorBody struct {
	Code    string `json:"error_code"`
	Message string `json:"error_message"`
	Errors  []struct {
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"errors"`
}

// send answers req with h, and fails the test if that takes more than
// ten seconds: every request is bounded, and one that hangs is the bug.
func send(t testing.TB, h http.Handler, req *http.Request) answer {
	t.Helper()
	done := make(chan answer, 1)
	go func() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		r := w.Result()
		b, _ := io.ReadAll(r.Body)
		done <- answer{r.StatusCode, r.Header, string(b)}
	}()
	select {
	case a := <-done:
		assert.Equal(t, "nosniff", a.header.Get("X-Content-Type-Options"), "every answer says nosniff")
		return a
	case <-time.After(10 * time.Second):
		t.Fatalf("%s %s: no answer within 10 s", req.Method, req.URL)
		return answer{}
	}
}

// post is a POST from a plain client on loopback.
func post(target, body string) *http.Request {
	return httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080"+target, strings.NewReader(body))
}

// decodeError decodes an error answer, checking its status, code and shape.
func decodeError(t testing.TB, a answer, status int, code string) errorBody {
	t.Helper()
	require.Equal(t, status, a.status, a.body)
	assert.Equal(t, "application/json", a.header.Get("Content-Type"))
	var e errorBody
	dec := json.NewDecoder(strings.NewReader(a.body))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&e), a.body)
	assert.Equal(t, code, e.Code, a.body)
	assert.NotEmpty(t, e.Message)
	require.NotNil(t, e.Errors, "errors is a list, [] when empty")
	return e
}

// simulated decodes a simulate answer's counts.
type simulated struct {
	Runs       int  `json:"runs"`
	Unfinished int  `json:"unfinished"`
	Succeeded  int  `json:"succeeded"`
	Truncated  bool `json:"truncated"`
}

func decodeSim(t testing.TB, a answer) simulated {
	t.Helper()
	require.Equal(t, 200, a.status, a.body)
	var s simulated
	require.NoError(t, json.Unmarshal([]byte(a.body), &s), a.body)
	return s
}

// TestZeroDelayIsBounded: the strategy that ran without end now ends, under
// the page's defaults (a one-minute tick: one retry a minute) and in the
// in-process loop (tick=0: cut at a job's bound, and said so).
func TestZeroDelayIsBounded(t *testing.T) {
	h := New(Options{})
	s := decodeSim(t, send(t, h, post("/v1/simulate", zeroDelay)))
	assert.False(t, s.Truncated)
	assert.Equal(t, 1000*31, s.Runs, "each job runs at t = 0 and each minute of the 30-minute outage, then succeeds")
	assert.Equal(t, 1000, s.Succeeded)

	s = decodeSim(t, send(t, h, post("/v1/simulate?tick=0", zeroDelay)))
	assert.True(t, s.Truncated)
	assert.Positive(t, s.Unfinished)

	a := send(t, h, post("/v1/lint", zeroDelay))
	require.Equal(t, 200, a.status)
	assert.Contains(t, a.body, `"code":"zero-delay"`)
}

// TestHeavyRequestsStopAtTheirBounds: requests inside the ranges that once
// ran for minutes or hours stop at the run bound, or answer 503 when the
// budget is spent first.
func TestHeavyRequestsStopAtTheirBounds(t *testing.T) {
	h := New(Options{MaxRuns: 50_000, MaxMessages: 100_000})
	s := decodeSim(t, send(t, h, post("/v1/simulate?jobs=100000&outage=720h", "null")))
	assert.True(t, s.Truncated)
	assert.Equal(t, 50_000, s.Runs)

	fixed := `{"strategy":"unless_stopped","backoff":{"kind":"fixed","base_delay_secs":1}}`
	s = decodeSim(t, send(t, h, post("/v1/simulate?tick=0&jobs=100000&outage=720h", fixed)))
	assert.True(t, s.Truncated)
	assert.Equal(t, 50_000, s.Runs)

	a := send(t, h, post("/v1/simulate?scenario=contention&clients=1000&runs=1000", "null"))
	require.Equal(t, 200, a.status, a.body)
	assert.Contains(t, a.body, `"truncated":true`)

	a = send(t, h, post("/v1/simulate?scenario=layers&rate=100000&duration=24h&outage=24h", zeroDelay))
	require.Equal(t, 200, a.status, a.body)
	assert.Contains(t, a.body, `"truncated":true`, "the chain stops at MaxRuns calls")

	a = send(t, h, post("/v1/simulate?max-runs=50001", "null"))
	decodeError(t, a, 400, "INVALID_PARAMETER")
	assert.Contains(t, a.body, "max-runs: must be between 1 and 50000")

	spent := New(Options{Budget: time.Nanosecond})
	for _, target := range []string{"/v1/simulate?jobs=100000&outage=720h", "/v1/simulate?scenario=contention&clients=1000&runs=1000", "/v1/simulate?scenario=layers&rate=100000", "/v1/lint", "/v1/plan"} {
		e := decodeError(t, send(t, spent, post(target, zeroDelay)), 503, "TIME_BUDGET_SPENT")
		assert.Contains(t, e.Message, "1ns", target)
	}
}

// TestCancelledWorkStops: a request whose context is done (its client
// gone, or the server stopping) stops its work and says so.
func TestCancelledWorkStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := post("/v1/simulate?jobs=100000&outage=720h", "null").WithContext(ctx)
	decodeError(t, send(t, New(Options{}), req), 503, "CANCELLED")
}

// TestExpensiveWorkIsShedNotQueued: with every slot for expensive work
// taken, plan, lint and simulate answer 503 with Retry-After at once, and
// the cheap endpoints still answer.
func TestExpensiveWorkIsShedNotQueued(t *testing.T) {
	h := New(Options{MaxExpensive: 2})
	h.expensive <- struct{}{}
	h.expensive <- struct{}{}
	for _, target := range []string{"/v1/plan", "/v1/lint", "/v1/simulate"} {
		a := send(t, h, post(target, "null"))
		decodeError(t, a, 503, "BUSY")
		assert.Equal(t, "1", a.header.Get("Retry-After"))
	}
	assert.Equal(t, 200, send(t, h, post("/v1/validate", "null")).status)
	assert.Equal(t, 200, send(t, h, post("/v1/decide", `{"failures":["2026-11-02T15:00:00Z"],"now":"2026-11-02T15:00:00Z"}`)).status)
	<-h.expensive
	assert.Equal(t, 200, send(t, h, post("/v1/lint", "null")).status, "a slot freed is taken")
}

// TestRequestsBeyondMaxInFlightAreShed: a request that would be one more
// than MaxInFlight is answered 503 at once, whatever its endpoint.
func TestRequestsBeyondMaxInFlightAreShed(t *testing.T) {
	h := New(Options{MaxInFlight: 1})
	h.inFlight <- struct{}{}
	a := send(t, h, post("/v1/validate", "null"))
	decodeError(t, a, 503, "BUSY")
	assert.Equal(t, "1", a.header.Get("Retry-After"))
	<-h.inFlight
	assert.Equal(t, 200, send(t, h, post("/v1/validate", "null")).status)
}

// TestMalformedQueriesAreRefused: a query string that does not parse is
// a 400, not an empty query; echoed names and values are cut, and at most
// 20 problems are listed, then how many more.
func TestMalformedQueriesAreRefused(t *testing.T) {
	h := New(Options{})
	for _, q := range []string{"jobs=999999999;x=1", "%zz", "jobs=5&%zz"} {
		e := decodeError(t, send(t, h, post("/v1/simulate?"+q, "null")), 400, "INVALID_PARAMETER")
		assert.Contains(t, e.Message, "the query string does not parse", q)
	}
	for _, target := range []string{"/v1/validate?%zz", "/v1/lint?x=1"} {
		decodeError(t, send(t, h, post(target, "null")), 400, "INVALID_PARAMETER")
	}

	many := "jobs=x"
	for i := range 5_000 {
		many += "&p" + strings.Repeat("q", i%7) + string(rune('a'+i%26)) + "=" + strings.Repeat("1", i%3)
	}
	e := decodeError(t, send(t, h, post("/v1/simulate?"+many, "null")), 400, "INVALID_PARAMETER")
	require.Len(t, e.Errors, 21, "20 problems and how many more")
	assert.Regexp(t, regexp.MustCompile(`^and \d+ more$`), e.Errors[20].Message)

	long := strings.Repeat("n", 1<<20)
	a := send(t, h, post("/v1/simulate?"+long+"=1&jobs="+long, "null"))
	e = decodeError(t, a, 400, "INVALID_PARAMETER")
	assert.Less(t, len(a.body), 2000, "a megabyte of name and value is echoed cut")
	for _, p := range e.Errors {
		assert.LessOrEqual(t, len(p.Field), 80)
	}

	e = decodeError(t, send(t, h, post("/v1/simulate?outage=720h1ns", "null")), 400, "INVALID_PARAMETER")
	assert.Equal(t, "outage: must be at most 720h, got 720h0m0.000000001s", e.Message)

	e = decodeError(t, send(t, h, post("/v1/simulate?scenario=contention&jobs=5", "null")), 400, "INVALID_PARAMETER")
	assert.Equal(t, "jobs: only the outage scenario takes it; in the contention scenario, clients plays its part", e.Message,
		"a parameter of the other scenario is named, not ignored")
}

// TestBatchesAreBounded: a decide batch holds at most MaxBatch requests,
// and its answer is an element for each.
func TestBatchesAreBounded(t *testing.T) {
	h := New(Options{MaxBatch: 3})
	e := decodeError(t, send(t, h, post("/v1/decide", "[1,1,1,1]")), 400, "INVALID_BODY")
	assert.Equal(t, "$: a batch holds at most 3 requests", e.Message)
	a := send(t, h, post("/v1/decide", `[1, {"failures":["2026-11-02T15:00:00Z"],"now":"2026-11-02T15:00:00Z"} ,[]]`))
	require.Equal(t, 200, a.status, a.body)
	var out []json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(a.body), &out))
	require.Len(t, out, 3)
	assert.Contains(t, string(out[0]), `"error_code":"INVALID_BODY"`)
	assert.Contains(t, string(out[1]), `"action":"wait"`)
	decodeError(t, send(t, h, post("/v1/decide", "[1,1")), 400, "INVALID_BODY")
	decodeError(t, send(t, h, post("/v1/decide", "[1,1] x")), 400, "INVALID_BODY")
}

// TestBrowsersOnOtherSitesAreRefused: a browser's cross-origin POST, and a
// request that names another host (DNS rebinding), are refused; a plain
// client, a same-origin browser and a host the server was told of pass.
func TestBrowsersOnOtherSitesAreRefused(t *testing.T) {
	h := New(Options{Hosts: []string{"retry.example:9000"}})
	req := post("/v1/simulate", zeroDelay)
	req.Header.Set("Origin", "http://evil.example")
	req.Header.Set("Content-Type", "text/plain")
	decodeError(t, send(t, h, req), 403, "CROSS_ORIGIN")

	req = post("/v1/validate", "null")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	decodeError(t, send(t, h, req), 403, "CROSS_ORIGIN")

	for _, host := range []string{"evil.example:8080", "evil.example", "127.0.0.1.evil.example", "10.0.0.1:8080"} {
		req = post("/v1/validate", "null")
		req.Host = host
		decodeError(t, send(t, h, req), 403, "FORBIDDEN_HOST")
	}

	for _, host := range []string{"127.0.0.1:8080", "localhost:8080", "LOCALHOST", "[::1]:8080", "127.0.0.2", "retry.example", "retry.example:1234"} {
		req = post("/v1/validate", "null")
		req.Host = host
		assert.Equal(t, 200, send(t, h, req).status, host)
	}
	req = post("/v1/validate", "null")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Origin", "http://127.0.0.1:8080")
	assert.Equal(t, 200, send(t, h, req).status, "the page's own requests")
}

// TestPageRunsOnlyItsOwnScript: the page has no inline script or handler,
// its policy allows only its own script file and no framing.
func TestPageRunsOnlyItsOwnScript(t *testing.T) {
	h := New(Options{})
	a := send(t, h, httptest.NewRequest(http.MethodGet, "http://localhost/", nil))
	require.Equal(t, 200, a.status)
	csp := a.header.Get("Content-Security-Policy")
	assert.Contains(t, csp, "script-src 'self';")
	assert.Contains(t, csp, "frame-ancestors 'none'")
	assert.NotRegexp(t, `script-src[^;]*unsafe`, csp)
	assert.Equal(t, "DENY", a.header.Get("X-Frame-Options"))
	assert.NotRegexp(t, `<script(?:\s[^>]*)?>\s*[^<\s]`, a.body, "no inline script")
	assert.NotRegexp(t, `(?i)\son[a-z]+\s*=`, a.body, "no inline handler")
	assert.Contains(t, a.body, `<script src="page.js"></script>`)

	js := send(t, h, httptest.NewRequest(http.MethodGet, "http://localhost/page.js", nil))
	require.Equal(t, 200, js.status)
	assert.Equal(t, "text/javascript; charset=utf-8", js.header.Get("Content-Type"))
	assert.Contains(t, js.body, `post("v1/validate"`, "relative paths: the page works under a prefix")
}

// TestMountedUnderAPrefix: the handler serves under http.StripPrefix on a
// scheduler's own mux.
func TestMountedUnderAPrefix(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/retrypolicy/", http.StripPrefix("/retrypolicy", New(Options{})))
	a := send(t, mux, post("/retrypolicy/v1/validate", `{"strategy":"none"}`))
	require.Equal(t, 200, a.status)
	assert.Equal(t, "{\"strategy\":\"none\"}\n", a.body)
	assert.Equal(t, 200, send(t, mux, httptest.NewRequest(http.MethodGet, "http://localhost/retrypolicy/", nil)).status)
}

// FuzzWhatIf: any body and query string to plan, lint and simulate is
// answered within its budget, in JSON: a result, a 4xx in the error shape,
// or 503 with it.
func FuzzWhatIf(f *testing.F) {
	paths := []string{"/v1/plan", "/v1/lint", "/v1/simulate"}
	for i, seed := range []struct{ query, body string }{
		{"", "null"}, {"failures=1000&uptime=5", zeroDelay}, {"tick=0", zeroDelay}, {"jobs=100000&outage=720h", "null"},
		{"scenario=contention&clients=1000&runs=1000", zeroDelay}, {"scenario=layers&rate=100000&duration=24h", zeroDelay}, {"%zz", "{"}, {"tick=1ns&spread=1h", `{"strategy":"bounded","max_attempts":1000000}`},
	} {
		f.Add(uint8(i), seed.query, []byte(seed.body))
	}
	h := New(Options{Budget: 200 * time.Millisecond, MaxRuns: 200_000, MaxMessages: 200_000})
	f.Fuzz(func(t *testing.T, which uint8, query string, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "http://localhost/", strings.NewReader(string(body)))
		req.URL.Path, req.URL.RawQuery = paths[int(which)%len(paths)], query
		a := send(t, h, req)
		switch {
		case a.status == 200:
			require.True(t, json.Valid([]byte(a.body)), a.body)
		case a.status >= 400 && a.status < 500, a.status == 503:
			var e errorBody
			require.NoError(t, json.Unmarshal([]byte(a.body), &e), a.body)
			require.NotEmpty(t, e.Code)
		default:
			t.Fatalf("%d for %q %q: %s", a.status, query, body, a.body)
		}
	})
}

// TestChartsAreBounded: a 40-byte request for the layers scenario through
// a 30-day outage had drawn a point a second (62 MB); a chart now draws at
// most MaxChartPoints points a line, whatever the run's length, and so do
// the outage's through the same 30 days (with its day of horizon, 44,640 minutes).
func TestChartsAreBounded(t *testing.T) {
	h := New(Options{})
	for _, target := range []string{"/v1/simulate?scenario=layers&outage=720h&duration=10s", "/v1/simulate?outage=720h&jobs=10"} {
		req := post(target, "null")
		req.Header.Set("Accept", "image/svg+xml")
		a := send(t, h, req)
		require.Equal(t, 200, a.status, a.body)
		assert.Less(t, len(a.body), 400_000, target)
		polylines := 0
		for _, line := range strings.Split(a.body, "\n") {
			if i := strings.Index(line, `points="`); i >= 0 {
				polylines++
				points := strings.Fields(line[i+len(`points="`) : strings.LastIndex(line, `"`)])
				assert.LessOrEqual(t, len(points), report.MaxChartPoints, target)
				assert.Greater(t, len(points), report.MaxChartPoints/2, "the whole span is drawn: %s", target)
			}
		}
		assert.Positive(t, polylines, target)
		assert.True(t, strings.Contains(a.body, "each point: the busiest"), "the chart says a point is a bucket: %s", target)
	}
}

// TestMistypedParameterIsSuggested: a parameter with two letters swapped
// gets its "did you mean" as one with a letter missing does (?jbos= had
// got none).
func TestMistypedParameterIsSuggested(t *testing.T) {
	h := New(Options{})
	for _, q := range []string{"jbos=10", "jos=10"} {
		e := decodeError(t, send(t, h, post("/v1/simulate?"+q, "null")), 400, "INVALID_PARAMETER")
		require.Len(t, e.Errors, 1)
		assert.Contains(t, e.Errors[0].Message, "did you mean jobs?", q)
	}
}

// TestACollapseCutShortIsNotJudged: a collapse run that the server's
// MaxRuns cuts before its trigger answers every policy unjudged, its
// verdicts null, never recovered, and says so in its picture.
func TestACollapseCutShortIsNotJudged(t *testing.T) {
	h := New(Options{MaxRuns: 1000})
	a := send(t, h, post("/v1/simulate?scenario=collapse", "null"))
	require.Equal(t, 200, a.status, a.body)
	var policies []struct {
		Policy    string `json:"policy"`
		Judged    bool   `json:"judged"`
		Recovered *bool  `json:"recovered"`
		Settled   *bool  `json:"settled"`
		Truncated bool   `json:"truncated"`
	}
	require.NoError(t, json.Unmarshal([]byte(a.body), &policies))
	require.Len(t, policies, len(fleet.CollapsePolicies()))
	for _, p := range policies {
		assert.False(t, p.Judged, p.Policy)
		assert.Nil(t, p.Recovered, p.Policy)
		assert.Nil(t, p.Settled, p.Policy)
		assert.True(t, p.Truncated, p.Policy)
	}
	req := post("/v1/simulate?scenario=collapse", "null")
	req.Header.Set("Accept", "image/svg+xml")
	svg := send(t, h, req)
	require.Equal(t, 200, svg.status, svg.body)
	assert.Equal(t, len(fleet.CollapsePolicies()), strings.Count(svg.body, ">not judged:</text>"))
	assert.Equal(t, len(fleet.CollapsePolicies()), strings.Count(svg.body, ">cut short</text>"), "why, on the legend's next line")
}

// TestTheTailIsServedWithinMaxRuns: /v1/simulate?scenario=tail answers a
// line a policy, with the fields the command's --json gives, and its
// picture; the server's MaxRuns bounds each policy's calls, and a run cut
// there says so.
func TestTheTailIsServedWithinMaxRuns(t *testing.T) {
	h := New(Options{MaxRuns: 1000})
	a := send(t, h, post("/v1/simulate?scenario=tail&duration=5s", "null"))
	require.Equal(t, 200, a.status, a.body)
	var policies []struct {
		Policy      string   `json:"policy"`
		P99         *float64 `json:"p99_ms"`
		ExtraLoad   *float64 `json:"extra_load"`
		Calls       int      `json:"calls"`
		Truncated   bool     `json:"truncated"`
		TruncatedBy string   `json:"truncated_by"`
	}
	require.NoError(t, json.Unmarshal([]byte(a.body), &policies))
	require.Len(t, policies, len(fleet.TailPolicies()))
	for i, p := range policies {
		assert.Equal(t, fleet.TailPolicies()[i].String(), p.Policy)
		assert.NotNil(t, p.P99, p.Policy)
		assert.NotNil(t, p.ExtraLoad, p.Policy)
		assert.True(t, p.Truncated, p.Policy)
		assert.Equal(t, "MaxCalls", p.TruncatedBy, p.Policy)
		assert.LessOrEqual(t, p.Calls, 1000, p.Policy)
	}
	req := post("/v1/simulate?scenario=tail&duration=5s", "null")
	req.Header.Set("Accept", "image/svg+xml")
	svg := send(t, h, req)
	require.Equal(t, 200, svg.status, svg.body)
	assert.Equal(t, 3*len(fleet.TailPolicies()), strings.Count(svg.body, `class="quantile"`))
}
