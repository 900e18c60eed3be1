package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// svgPost is a POST that asks for the picture.
func svgPost(target, body string) *http.Request {
	req := post(target, body)
	req.Header.Set("Accept", "image/svg+xml")
	return req
}

// TestSimulateComparesWithANamedStrategy: ?compare=NAME runs the named
// seed strategy beside the posted one, in the JSON (an array, posted
// first) and on the chart's shared axes; a name that is not one, or a
// comparison of the contention scenario, is refused naming the choices.
func TestSimulateComparesWithANamedStrategy(t *testing.T) {
	h := New(Options{})
	const bounded = `{"strategy":"bounded","max_attempts":3,"backoff":{"kind":"fixed","base_delay_secs":60}}`
	a := send(t, h, post("/v1/simulate?jobs=50&compare=bounded-hour", bounded))
	require.Equal(t, 200, a.status, a.body)
	var results []struct {
		Strategy   string          `json:"strategy"`
		Descriptor json.RawMessage `json:"descriptor"`
		Fatal      int             `json:"fatal"`
	}
	require.NoError(t, json.Unmarshal([]byte(a.body), &results), a.body)
	require.Len(t, results, 2)
	assert.Equal(t, "posted", results[0].Strategy)
	assert.Equal(t, "bounded-hour", results[1].Strategy)
	assert.JSONEq(t, `{"strategy":"bounded","max_attempts":5,"window_secs":3600,"backoff":{"kind":"exponential","base_delay_secs":1,"multiplier":2.0,"max_delay_secs":60}}`, string(results[1].Descriptor),
		"the compared strategy's descriptor, for the page's plan and lint of it")
	assert.Equal(t, 50, results[1].Fatal)

	a = send(t, h, svgPost("/v1/simulate?jobs=50&compare=jitter-5m", bounded))
	require.Equal(t, 200, a.status, a.body)
	assert.Equal(t, 2, strings.Count(a.body, `class="load"`), "both lines on one chart")
	assert.Contains(t, a.body, ">this strategy")
	assert.Contains(t, a.body, ">jitter-5m<")

	e := decodeError(t, send(t, h, post("/v1/simulate?compare=bounded-week", bounded)), 400, "INVALID_PARAMETER")
	assert.Equal(t, `compare: must be one of default, bounded-hour, bounded-day, jitter-5m, none, got "bounded-week"`, e.Message)
	e = decodeError(t, send(t, h, post("/v1/simulate?scenario=contention&compare=none", bounded)), 400, "INVALID_PARAMETER")
	assert.Equal(t, "compare: only the outage scenario compares", e.Message)
}

// TestPlanPictureSharesAnAxis: ?axis= draws a plan's picture on a longer
// time axis, so that two plans one above the other share it; a shorter
// one changes nothing.
func TestPlanPictureSharesAnAxis(t *testing.T) {
	h := New(Options{})
	const fixed = `{"strategy":"bounded","max_attempts":3,"backoff":{"kind":"fixed","base_delay_secs":5}}` // fatal at 10 s
	own := send(t, h, svgPost("/v1/plan?tick=0", fixed))
	require.Equal(t, 200, own.status, own.body)
	assert.Contains(t, own.body, ">+10s</text>")
	assert.NotContains(t, own.body, ">+1m</text>")

	long := send(t, h, svgPost("/v1/plan?tick=0&axis=600", fixed))
	require.Equal(t, 200, long.status, long.body)
	assert.Contains(t, long.body, ">+10m</text>", "the axis runs to 10 minutes")

	short := send(t, h, svgPost("/v1/plan?tick=0&axis=1", fixed))
	assert.Equal(t, own.body, short.body)

	e := decodeError(t, send(t, h, svgPost("/v1/plan?axis=-1", fixed)), 400, "INVALID_PARAMETER")
	assert.Contains(t, e.Message, "axis: must be between 0 and 100 years")
}

// TestSimulateLayers: scenario=layers runs the posted strategy at every
// layer of the chain of four layers of four and at the client alone, and answers
// both, in JSON and on one chart; an option of another scenario is named.
func TestSimulateLayers(t *testing.T) {
	h := New(Options{})
	const three = `{"strategy":"bounded","max_attempts":3,"backoff":{"kind":"fixed","base_delay_secs":1}}`
	a := send(t, h, post("/v1/simulate?scenario=layers&rate=20&duration=1m&outage=30s", three))
	require.Equal(t, 200, a.status, a.body)
	var results []struct {
		Chain         string  `json:"chain"`
		Requests      int     `json:"requests"`
		Amplification float64 `json:"amplification"`
		Attempts      []int   `json:"attempts"`
	}
	require.NoError(t, json.Unmarshal([]byte(a.body), &results), a.body)
	require.Len(t, results, 2)
	assert.Equal(t, "every layer", results[0].Chain)
	assert.Equal(t, "client only", results[1].Chain)
	assert.Equal(t, 1200, results[0].Requests)
	assert.Greater(t, results[0].Amplification, results[1].Amplification, "retrying at every layer multiplies the bottom's load")
	assert.Len(t, results[0].Attempts, 4)

	a = send(t, h, svgPost("/v1/simulate?scenario=layers&rate=20&duration=1m", three))
	require.Equal(t, 200, a.status, a.body)
	assert.Equal(t, 2, strings.Count(a.body, `class="load"`))
	assert.Contains(t, a.body, `class="capacity"`)

	e := decodeError(t, send(t, h, post("/v1/simulate?scenario=layers&jobs=5", three)), 400, "INVALID_PARAMETER")
	assert.Equal(t, "jobs: only the outage scenario takes it; in the layers scenario, rate plays its part", e.Message)
}

// TestSimulateLayersBudgets: the budget options give each layer a token
// budget and a windowed one, side by side, after a healthy stretch; each
// chain's retries are told by the second; a budget out of range is named.
func TestSimulateLayersBudgets(t *testing.T) {
	h := New(Options{})
	const three = `{"strategy":"bounded","max_attempts":3,"backoff":{"kind":"fixed","base_delay_secs":1}}`
	a := send(t, h, post("/v1/simulate?scenario=layers&rate=20&duration=1m&outage=20s&outage-at=30s&budget-burst=5&budget-percent=20&budget-min-retries=0", three))
	require.Equal(t, 200, a.status, a.body)
	var results []struct {
		Chain   string `json:"chain"`
		Retries []int  `json:"retries_per_sec"`
	}
	require.NoError(t, json.Unmarshal([]byte(a.body), &results), a.body)
	var names []string
	for _, r := range results {
		names = append(names, r.Chain)
		for s := range min(29, len(r.Retries)) {
			assert.Zero(t, r.Retries[s], "%s: no retry in second %d, before the outage", r.Chain, s)
		}
	}
	assert.Equal(t, []string{"every layer, token budget", "every layer, windowed budget", "client only, token budget", "client only, windowed budget"}, names)

	e := decodeError(t, send(t, h, post("/v1/simulate?scenario=layers&budget-percent=101&budget-interval=2h", three)), 400, "INVALID_PARAMETER")
	assert.Contains(t, e.Message, "budget-percent: must be between 0 and 100, got 101")
	assert.Contains(t, e.Message, "(and 1 more)", "budget-interval too")
	e = decodeError(t, send(t, h, post("/v1/simulate?budget-burst=5", three)), 400, "INVALID_PARAMETER")
	assert.Contains(t, e.Message, "budget-burst: only the layers and collapse scenarios take it")
}

// TestLintAndPlanTakeTheTick: /v1/lint and /v1/plan assume the
// controller's minute as the command does, say so in tick_secs, take
// ?tick= (0: when due) and refuse a tick out of range.
func TestLintAndPlanTakeTheTick(t *testing.T) {
	h := New(Options{})
	const five = `{"strategy":"bounded","max_attempts":5,"window_secs":60}`
	var lint struct {
		Findings []struct{ Code string }
		Summary  struct {
			TickSecs        float64  `json:"tick_secs"`
			TimeToFatalSecs *float64 `json:"time_to_fatal_secs"`
		}
	}
	a := send(t, h, post("/v1/lint", five))
	require.Equal(t, 200, a.status, a.body)
	require.NoError(t, json.Unmarshal([]byte(a.body), &lint))
	assert.Equal(t, 60.0, lint.Summary.TickSecs)
	assert.Nil(t, lint.Summary.TimeToFatalSecs, "five failures a minute apart never fit in a minute")
	assert.Equal(t, "never-fatal", lint.Findings[0].Code)

	a = send(t, h, post("/v1/lint?tick=0", five))
	require.Equal(t, 200, a.status, a.body)
	require.NoError(t, json.Unmarshal([]byte(a.body), &lint))
	assert.Equal(t, 0.0, lint.Summary.TickSecs)
	require.NotNil(t, lint.Summary.TimeToFatalSecs)
	assert.Equal(t, 15.0, *lint.Summary.TimeToFatalSecs)

	var p struct {
		TickSecs float64 `json:"tick_secs"`
		Failures []struct {
			DueSecs     float64 `json:"due_secs"`
			RetryAtSecs float64 `json:"retry_at_secs"`
		}
	}
	a = send(t, h, post("/v1/plan?tick=30s&failures=2", five))
	require.Equal(t, 200, a.status, a.body)
	require.NoError(t, json.Unmarshal([]byte(a.body), &p))
	assert.Equal(t, 30.0, p.TickSecs)
	require.Len(t, p.Failures, 2)
	assert.Equal(t, 1.0, p.Failures[0].DueSecs)
	assert.Equal(t, 30.0, p.Failures[0].RetryAtSecs, "due at 1 s, run at the 30 s tick")

	for _, target := range []string{"/v1/lint?tick=25h", "/v1/plan?tick=25h"} {
		e := decodeError(t, send(t, h, post(target, five)), 400, "INVALID_PARAMETER")
		assert.Equal(t, "tick: must be from 0 to 24h, got 25h0m0s", e.Message, target)
	}
}

// TestReplayEndpoint: /v1/replay reads a log from its body and replays it
// under the posted strategy, or the documented ones; a bad line is a
// problem naming it, and a bad strategy one naming the parameter.
func TestReplayEndpoint(t *testing.T) {
	h := New(Options{})
	const log = `{"job":"a","started_at":"2026-03-03T10:00:00Z","ended_at":"2026-03-03T10:00:01Z","outcome":"failed"}
{"job":"a","started_at":"2026-03-03T10:00:03Z","ended_at":"2026-03-03T10:00:04Z","outcome":"failed"}
{"job":"a","started_at":"2026-03-03T10:10:00Z","ended_at":"2026-03-03T10:10:01Z","outcome":"succeeded"}
`
	var lines []struct {
		Strategy  string
		Attempts  int
		Fatal     int
		Completed int
	}
	a := send(t, h, post("/v1/replay", log))
	require.Equal(t, 200, a.status, a.body)
	require.NoError(t, json.Unmarshal([]byte(a.body), &lines))
	require.Len(t, lines, 6, "recorded and the five documented strategies")
	assert.Equal(t, "recorded", lines[0].Strategy)
	assert.Equal(t, 3, lines[0].Attempts)
	assert.Equal(t, "none", lines[5].Strategy)
	assert.Equal(t, 1, lines[5].Fatal)

	a = send(t, h, post("/v1/replay?tick=0&strategy="+url.QueryEscape(`{"strategy":"bounded","max_attempts":2}`), log))
	require.Equal(t, 200, a.status, a.body)
	require.NoError(t, json.Unmarshal([]byte(a.body), &lines))
	require.Len(t, lines, 2)
	assert.Equal(t, "posted", lines[1].Strategy)
	assert.Equal(t, 1, lines[1].Fatal, "fails at 10:00:01 and 10:00:03: fatal at the second")
	assert.Equal(t, 2, lines[1].Attempts)

	svg := send(t, h, svgPost("/v1/replay", log))
	require.Equal(t, 200, svg.status, svg.body)
	assert.Contains(t, svg.body, `class="load"`)

	e := decodeError(t, send(t, h, post("/v1/replay", log+`{"job":"a"}`+"\n")), 400, "INVALID_BODY")
	assert.Equal(t, "line 4: started_at: missing", e.Message)
	e = decodeError(t, send(t, h, post("/v1/replay?strategy="+url.QueryEscape(`{"strategy":"bounded"}`), log)), 400, "INVALID_PARAMETER")
	assert.Equal(t, "strategy", e.Errors[0].Field)
	assert.Contains(t, e.Message, "max_attempts: required when strategy is bounded")
}
