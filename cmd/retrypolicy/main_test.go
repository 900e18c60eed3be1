package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/front/report"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	update    = flag.Bool("update", false, "rewrite the golden files under testdata/cli/")
	manyLines = flag.Int("lines", 10000, "how many requests TestDecideLinesMatchesTheLibrary streams (say 1000000 for a long run)")
)

type cliCase struct {
	name  string
	args  []string
	stdin string
}

const (
	seedBounded = `{"strategy":"bounded","max_attempts":5,"window_secs":3600,"backoff":{"kind":"exponential","base_delay_secs":1,"multiplier":2.0,"max_delay_secs":60}}`
	fourFails   = `"failures":["2026-11-02T15:00:00Z","2026-11-02T14:59:59Z","2026-11-02T14:59:58Z","2026-11-02T14:59:57Z"]`
)

// run runs the command in process on these streams and returns its exit
// status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return stdio{stdin, stdout, stderr}.run(args)
}

var cliCases = []cliCase{
	{"no-arguments", nil, ""},
	{"unknown-command", []string{"frobnicate"}, ""},
	{"mistyped-command", []string{"valdiate"}, ""},
	{"help", []string{"--help"}, ""},
	{"version", []string{"version"}, ""},

	{"validate-seed", []string{"validate"}, seedBounded},
	{"validate-defaults-from-stdin", []string{"validate", "-"}, `{"strategy":"bounded","max_attempts":3}`},
	{"validate-file", []string{"validate", "testdata/cli/strategy-jitter.json"}, ""},
	{"validate-every-problem", []string{"validate"}, `{"strategy":"bounded","max_attempts":0,"window_secs":1.5,"backoff":{"kind":"fixed","multiplier":2},"extra":true}`},
	{"validate-not-json", []string{"validate"}, `{strategy: none}`},
	{"validate-trailing-data", []string{"validate"}, `{"strategy":"none"} {"strategy":"none"}`},
	{"validate-missing-file", []string{"validate", "testdata/cli/no-such-file.json"}, ""},
	{"validate-help", []string{"validate", "--help"}, ""},

	{"flags-none-given", []string{"flags"}, ""},
	{"flags-bounded", []string{"flags", "--retry-strategy", "bounded", "--retry-max-attempts", "5", "--retry-max-delay-secs", "60"}, ""},
	{"flags-equals-form", []string{"flags", "--retry-strategy=unless_stopped", "--retry-backoff=exponential_with_jitter", "--retry-base-delay-secs=2", "--retry-max-delay-secs=300"}, ""},
	{"flags-only-valid-with-bounded", []string{"flags", "--retry-strategy", "unless_stopped", "--retry-max-attempts", "5"}, ""},
	{"flags-not-an-integer", []string{"flags", "--retry-strategy", "bounded", "--retry-max-attempts", "x"}, ""},
	{"flags-without-strategy", []string{"flags", "--retry-max-attempts", "3", "--retry-window-secs", "60"}, ""},
	{"flags-fixed-with-multiplier", []string{"flags", "--retry-strategy=bounded", "--retry-max-attempts=3", "--retry-backoff=fixed", "--retry-multiplier=2", "--retry-max-delay-secs=9"}, ""},
	{"flags-help", []string{"flags", "--help"}, ""},

	{"decide-wait", []string{"decide"}, `{"retry_strategy":` + seedBounded + `,` + fourFails + `,"last_uptime_secs":10,"now":"2026-11-02T15:00:01Z"}`},
	{"decide-retry-now", []string{"decide"}, `{"retry_strategy":` + seedBounded + `,` + fourFails + `,"now":"2026-11-02T15:00:08Z"}`},
	{"decide-fatal", []string{"decide"}, `{"retry_strategy":{"strategy":"bounded","max_attempts":4},` + fourFails + `,"now":"2026-11-02T15:00:01Z"}`},
	{"decide-default-strategy-with-jitter-seed", []string{"decide"}, `{` + fourFails + `,"jitter_seed":"job-42","last_uptime_secs":15.5,"now":"2026-11-02T15:00:00Z"}`},
	{"decide-jitter", []string{"decide"}, `{"retry_strategy":{"strategy":"unless_stopped","backoff":{"kind":"exponential_with_jitter","base_delay_secs":60}},"failures":["2026-11-02T15:00:00+01:00"],"jitter_seed":"job-42","now":"2026-11-02T14:00:30Z"}`},
	{"decide-invalid", []string{"decide"}, `{"retry_strategy":{"strategy":"bounded"},"failures":["yesterday"],"last_uptime_secs":"10","surprise":1}`},
	{"decide-no-failures", []string{"decide"}, `{"failures":[],"now":"2026-11-02T15:00:00Z"}`},
	{"decide-lines", []string{"decide", "--lines"}, `{` + fourFails + `,"now":"2026-11-02T15:00:01Z"}
not json
{"retry_strategy":{"strategy":"none"},"failures":["2026-11-02T15:00:00Z"],"now":"2026-11-02T15:00:00Z"}

{"failures":["2026-11-02T15:00:00Z"],"now":"2026-11-02T15:00:00.5Z","extra":1}
{"failures":["2026-11-02T15:00:00Z"],"now":"2026-11-02T15:00:02Z"}`},
	{"decide-help", []string{"decide", "--help"}, ""},

	{"plan-default", []string{"plan"}, ""},
	{"plan-bounded-with-uptime", []string{"plan", "--uptime", "5", "testdata/cli/strategy-bounded.json"}, ""},
	{"plan-none", []string{"plan", "-"}, `{"strategy":"none"}`},
	{"plan-jitter", []string{"plan", "--failures", "3", "testdata/cli/strategy-jitter.json"}, ""},
	{"plan-json", []string{"plan", "--json", "--uptime", "5", "testdata/cli/strategy-bounded.json"}, ""},

	{"lint-default", []string{"lint"}, "null"},
	{"lint-never-fatal-json", []string{"lint", "--json", "-"}, `{"strategy":"bounded","max_attempts":5,"window_secs":60,"backoff":{"kind":"fixed","base_delay_secs":30}}`},
	{"lint-flags-no-cap", []string{"lint", "--retry-strategy", "bounded", "--retry-max-attempts", "30", "--retry-window-secs", "604800"}, ""},
	{"lint-storm", []string{"lint", "--retry-strategy=unless_stopped", "--retry-multiplier=1e-300"}, ""},
	{"lint-storm-no-tick", []string{"lint", "--tick", "0", "--retry-strategy=unless_stopped", "--retry-multiplier=1e-300"}, ""},
	{"lint-five-in-a-minute", []string{"lint", "-"}, `{"strategy":"bounded","max_attempts":5,"window_secs":60}`},
	{"lint-five-in-a-minute-no-tick", []string{"lint", "--tick", "0", "-"}, `{"strategy":"bounded","max_attempts":5,"window_secs":60}`},
	{"lint-five-in-a-minute-json", []string{"lint", "--json", "--tick", "30s", "-"}, `{"strategy":"bounded","max_attempts":5,"window_secs":60}`},
	{"lint-bad-tick", []string{"lint", "--tick", "25h"}, ""},
	{"plan-no-tick", []string{"plan", "--tick", "0", "--failures", "6"}, ""},
	{"plan-bad-tick", []string{"plan", "--tick", "-1s"}, ""},
	{"replay", []string{"replay", "testdata/cli/replay-log.jsonl"}, ""},
	{"replay-json", []string{"replay", "--json", "testdata/cli/replay-log.jsonl", "testdata/cli/strategy-jitter.json", "testdata/cli/strategy-bounded.json"}, ""},
	{"replay-no-tick", []string{"replay", "--tick", "0", "-", "testdata/cli/strategy-bounded.json"}, `{"job":"a","started_at":"2026-03-03T10:00:00Z","ended_at":"2026-03-03T10:00:01Z","outcome":"failed"}
{"job":"a","started_at":"2026-03-03T10:00:03Z","ended_at":"2026-03-03T10:00:04Z","outcome":"failed"}
{"job":"a","started_at":"2026-03-03T10:10:00Z","ended_at":"2026-03-03T10:10:01Z","outcome":"succeeded"}`},
	{"replay-bad-line", []string{"replay", "-"}, `{"job":"a","started_at":"2026-03-03T10:00:00Z","ended_at":"2026-03-03T10:00:01Z","outcome":"failed"}
{"job":"a","started_at":"2026-03-03T10:00:03Z","outcome":"failed"}`},
	{"replay-no-log", []string{"replay"}, ""},
	{"replay-help", []string{"replay", "--help"}, ""},
	{"simulate-log-of-two", []string{"simulate", "--log", "x.jsonl", "testdata/cli/strategy-jitter.json", "testdata/cli/strategy-bounded.json"}, ""},
	{"lint-invalid", []string{"lint"}, `{"strategy":"bounded","max_attempt":5}`},
	{"lint-file-and-flags", []string{"lint", "testdata/cli/strategy-bounded.json", "--retry-strategy", "none"}, ""},
	{"lint-help", []string{"lint", "--help"}, ""},

	{"simulate-outage", []string{"simulate"}, ""},
	{"simulate-outage-json", []string{"simulate", "--json", "--tick", "0", "--jobs", "200", "--spread", "1m", "--seed", "3", "testdata/cli/strategy-jitter.json", "testdata/cli/strategy-bounded.json"}, ""},
	{"simulate-capacity", []string{"simulate", "--capacity", "50", "--outage", "10m", "--fail-after", "2s", "testdata/cli/strategy-jitter.json"}, ""},
	{"simulate-contention", []string{"simulate", "--scenario", "contention", "--runs", "10"}, ""},
	{"simulate-contention-json", []string{"simulate", "--scenario=contention", "--json", "--clients", "20", "--runs", "5", "testdata/cli/strategy-bounded.json"}, ""},
	{"simulate-bad-jobs", []string{"simulate", "--jobs", "0"}, ""},
	{"simulate-bad-scenario", []string{"simulate", "--scenario", "storm"}, ""},
	{"simulate-missing-file", []string{"simulate", "testdata/cli/no-such-file.json"}, ""},
	{"simulate-help", []string{"simulate", "--help"}, ""},
	{"simulate-layers", []string{"simulate", "--scenario", "layers", "--duration", "2m"}, ""},
	{"simulate-collapse", []string{"simulate", "--scenario", "collapse", "--seed", "1"}, ""},
	{"simulate-collapse-deadlines", []string{"simulate", "--scenario", "collapse", "--seed", "1", "--check-deadlines"}, ""},
	{"simulate-collapse-json", []string{"simulate", "--scenario", "collapse", "--json", "--duration", "90s", "--trigger-at", "40s", "--seed", "2"}, ""},
	{"simulate-collapse-two", []string{"simulate", "--scenario", "collapse", "testdata/cli/strategy-bounded.json", "testdata/cli/strategy-bounded.json"}, ""},
	{"simulate-tail", []string{"simulate", "--scenario", "tail", "--seed", "1", "--duration", "10s"}, ""},
	{"simulate-tail-json", []string{"simulate", "--scenario", "tail", "--json", "--seed", "2", "--duration", "5s", "--delay", "12ms"}, ""},
	{"simulate-tail-strategy", []string{"simulate", "--scenario", "tail", "testdata/cli/strategy-bounded.json"}, ""},
	{"simulate-tail-bad", []string{"simulate", "--scenario", "tail", "--attempts", "9", "--spike", "2"}, ""},
	{"simulate-layers-json", []string{"simulate", "--scenario", "layers", "--json", "--rate", "10", "--duration", "20s", "--outage", "5s", "--capacity", "20", "testdata/cli/strategy-bounded.json", "testdata/cli/strategy-bounded.json"}, ""},
	{"serve-help", []string{"serve", "--help"}, ""},
	{"serve-bad-addr", []string{"serve", "--addr", "256.0.0.1:99999"}, ""},
	{"plan-long-runs", []string{"plan", "--uptime=3600", "--failures", "4"}, ""},
	{"plan-invalid-strategy", []string{"plan", "-"}, `{"strategy":"bounded"}`},
	{"plan-bad-option", []string{"plan", "--failures", "0"}, ""},
	{"plan-help", []string{"plan", "--help"}, ""},
}

// TestCLIGolden runs each case and compares its exit status, standard
// output and standard error with testdata/cli/NAME.golden (-update rewrites).
func TestCLIGolden(t *testing.T) {
	for _, c := range cliCases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(c.args, strings.NewReader(c.stdin), &stdout, &stderr)
			got := fmt.Sprintf("# retrypolicy %s\n-- exit --\n%d\n-- stdout --\n%s-- stderr --\n%s", strings.Join(c.args, " "), code, stdout.String(), stderr.String())
			path := filepath.Join("testdata", "cli", c.name+".golden")
			if *update {
				require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
				return
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run with -update to create it")
			assert.Equal(t, string(want), got)
		})
	}
}

// TestCLIContracts pins the contracts other tools script against, apart
// from the golden files' exact text.
func TestCLIContracts(t *testing.T) {
	exec := func(stdin string, args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(args, strings.NewReader(stdin), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	code, out, _ := exec(`{"strategy":"none"}`, "validate")
	assert.Equal(t, 0, code)
	assert.Equal(t, "{\"strategy\":\"none\"}\n", out)

	code, _, errOut := exec(`{"strategy":"unless_stopped","backoff":{"kind":"exponential","multiplier":-1}}`, "validate")
	assert.Equal(t, 2, code)
	assert.Equal(t, "backoff.multiplier: must be greater than 0, got -1\n", errOut)

	code, _, errOut = exec("", "flags", "--retry-strategy", "unless_stopped", "--retry-max-attempts", "5")
	assert.Equal(t, 2, code)
	assert.Equal(t, "--retry-max-attempts is only valid when --retry-strategy=bounded\n", errOut)
	code, _, errOut = exec("", "flags", "--retry-strategy", "bounded", "--retry-max-attempts", "x")
	assert.Equal(t, 2, code)
	assert.Equal(t, "--retry-max-attempts: \"x\" is not an integer\n", errOut)

	code, out, _ = exec(`{"retry_strategy":{"strategy":"none"},"failures":["2026-11-02T15:00:00Z"],"now":"2026-11-02T15:00:00Z"}`, "decide")
	assert.Equal(t, 0, code, "a fatal decision exits 0")
	assert.JSONEq(t, `{"action":"fatal","reason":"strategy_none","failures_in_window":1}`, out)

	code, _, _ = exec("", "validate", "testdata/cli/no-such-file.json")
	assert.Equal(t, 1, code, "I/O errors exit 1")
}

// TestDecideLinesMatchesTheLibrary streams generated requests (10,000, or
// -lines) through decide --lines and checks every output line against the
// library's decision for the same request.
func TestDecideLinesMatchesTheLibrary(t *testing.T) {
	n := *manyLines
	strategies := []string{
		"", `{"strategy":"none"}`, seedBounded,
		`{"strategy":"unless_stopped","backoff":{"kind":"exponential_with_jitter","base_delay_secs":2,"multiplier":1.5,"max_delay_secs":300}}`,
		`{"strategy":"bounded","max_attempts":3,"window_secs":600,"backoff":{"kind":"fixed","base_delay_secs":30}}`,
	}
	base := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	type want struct {
		s        retrypolicy.Strategy
		failures []time.Time
		uptime   time.Duration
		seed     uint64
		now      time.Time
	}
	var input bytes.Buffer
	wants := make([]want, n)
	x := uint64(88172645463325252)
	rnd := func(m uint64) uint64 { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return x % m }
	for i := range wants {
		si := int(rnd(uint64(len(strategies))))
		s := retrypolicy.Default()
		if strategies[si] != "" {
			var err error
			s, err = retrypolicy.Parse([]byte(strategies[si]))
			require.NoError(t, err)
		}
		count := 1 + int(rnd(12))
		failures := make([]time.Time, count)
		texts := make([]string, count)
		for k := range failures {
			failures[k] = base.Add(-time.Duration(rnd(5400e9)))
			texts[k] = strconv.Quote(failures[k].Format(time.RFC3339Nano))
		}
		uptimeMs := rnd(200000)
		seed := "job-" + strconv.Itoa(i)
		now := base.Add(time.Duration(rnd(600e9)))
		wants[i] = want{s, failures, time.Duration(uptimeMs) * time.Millisecond, retrypolicy.SeedFromString(seed), now}
		input.WriteString("{")
		if strategies[si] != "" {
			input.WriteString(`"retry_strategy":` + strategies[si] + ",")
		}
		fmt.Fprintf(&input, `"failures":[%s],"last_uptime_secs":%d.%03d,"jitter_seed":%q,"now":%q}`+"\n",
			strings.Join(texts, ","), uptimeMs/1000, uptimeMs%1000, seed, now.Format(time.RFC3339Nano))
	}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"decide", "--lines"}, &input, &stdout, &stderr), stderr.String())

	sc := bufio.NewScanner(&stdout)
	i := 0
	for sc.Scan() {
		require.Less(t, i, n)
		w := wants[i]
		d, err := retrypolicy.Decide(w.s, w.failures, w.uptime, w.seed, w.now)
		require.NoError(t, err)
		exp, err := json.Marshal(d)
		require.NoError(t, err)
		if got := sc.Text(); got != string(exp) {
			t.Fatalf("line %d: decide --lines wrote %s, the library decides %s", i+1, got, exp)
		}
		i++
	}
	assert.Equal(t, n, i, "one output line per input line")
}

func TestDecideLinesSurvivesBadAndLongLines(t *testing.T) {
	long := `{"failures":["2026-11-02T15:00:00Z"],"jitter_seed":"` + strings.Repeat("x", report.MaxLine) + `","now":"2026-11-02T15:00:00Z"}`
	in := "{\"failures\":[\"2026-11-02T15:00:00Z\"],\"now\":\"2026-11-02T15:00:00Z\"}\r\n" + long + "\n[]\n"
	var stdout, stderr bytes.Buffer
	code := run([]string{"decide", "--lines"}, strings.NewReader(in), &stdout, &stderr)
	assert.Equal(t, 2, code)
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	require.Len(t, lines, 3)
	assert.True(t, strings.HasPrefix(lines[0], `{"action":"wait"`), lines[0])
	assert.Equal(t, `{"error":"$: must be at most 1048576 bytes"}`, lines[1])
	assert.Equal(t, `{"error":"$: must be a JSON object, got an array"}`, lines[2])
	assert.Equal(t, "retrypolicy: 2 bad lines (with --lines, each request is one JSON object on one line)\n", stderr.String())
}

// TestPlanSVG: the chart is well-formed XML with one failure mark and one
// run per failure in the plan, a fatal mark when the plan ends fatal, the
// window band, and a table row per failure.
func TestPlanSVG(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		failures int
		fatal    bool
	}{
		{[]string{"--tick", "0", "--uptime", "5", "testdata/cli/strategy-bounded.json"}, 5, true},
		{[]string{"--uptime", "5", "testdata/cli/strategy-bounded.json"}, 12, false}, // never fatal under the minute's tick
		{[]string{"--failures", "7"}, 7, false},
		{[]string{"--uptime", "30", "testdata/cli/strategy-jitter.json"}, 12, false},
	} {
		_, elements := planPicture(t, tc.args...)
		classes := map[string]int{}
		for _, el := range elements {
			classes[el.attrs["class"]]++
		}
		assert.Equal(t, tc.failures, classes["failure"], "%v", tc.args)
		assert.Equal(t, tc.failures, classes["run"], "%v", tc.args)
		if tc.fatal {
			assert.Equal(t, 1, classes["fatal"])
		} else {
			assert.Equal(t, 0, classes["fatal"])
		}
		assert.Equal(t, 1, classes["window"])
		var stdout, stderr bytes.Buffer
		require.Equal(t, 0, run(append([]string{"plan"}, tc.args...), nil, &stdout, &stderr), stderr.String())
		assert.Len(t, tableRow.FindAllString(stdout.String(), -1), tc.failures, "one table row per failure")
	}
}

// tableRow matches a row of plan's table: the failure's number, then when.
var tableRow = regexp.MustCompile(`(?m)^ +[0-9]+ +\+`)

// BenchmarkDecideLines measures decide --lines per input line, on a stream
// of requests that repeat a few strategies as a scheduler's would, and
// fails when a line costs more than two allocations in steady state.
func BenchmarkDecideLines(b *testing.B) {
	lines := []string{
		`{"retry_strategy":` + seedBounded + `,` + fourFails + `,"last_uptime_secs":10,"jitter_seed":"job-1","now":"2026-11-02T15:00:01Z"}`,
		`{` + fourFails + `,"now":"2026-11-02T15:00:09Z"}`,
		`{"retry_strategy":{"strategy":"unless_stopped","backoff":{"kind":"exponential_with_jitter","base_delay_secs":2}},"failures":["2026-11-02T15:00:00+01:00"],"last_uptime_secs":0.25,"jitter_seed":"job-2","now":"2026-11-02T15:00:01.5Z"}`,
	}
	const perOp = 30000
	var input bytes.Buffer
	for i := range perOp {
		input.WriteString(lines[i%len(lines)])
		input.WriteByte('\n')
	}
	data := input.Bytes()
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		if code := run([]string{"decide", "--lines"}, bytes.NewReader(data), io.Discard, io.Discard); code != 0 {
			b.Fatal(code)
		}
	}
	runtime.ReadMemStats(&after)
	perLine := float64(after.Mallocs-before.Mallocs) / float64(b.N) / perOp
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/perOp, "ns/line")
	b.ReportMetric(perLine, "allocs/line")
	if perLine > 2 {
		b.Errorf("decide --lines allocates %.2f times a line, more than 2", perLine)
	}
}

// TestReadmeIsShort: the README is what a scheduler author reads first, at
// most 250 lines; the rest is in docs/.
func TestReadmeIsShort(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	assert.LessOrEqual(t, strings.Count(string(text), "\n"), 250)
}

// TestDocsLinksResolve: every relative link of the README and of the
// pages in docs/ names a file of the repository, and every page in docs/
// is linked from the README.
func TestDocsLinksResolve(t *testing.T) {
	root := filepath.Join("..", "..")
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, pages)
	readme := filepath.Join(root, "README.md")
	link := regexp.MustCompile(`\]\(([^)#]+)(#[^)]*)?\)|src="([^"]+)"`)
	// Code is no link: a fenced block or a span such as retry.New[T](s).
	code := regexp.MustCompile("(?s)```.*?```|`[^`\n]*`")
	linked := map[string]bool{}
	for _, page := range append(pages, readme) {
		text, err := os.ReadFile(page)
		require.NoError(t, err)
		for _, m := range link.FindAllStringSubmatch(code.ReplaceAllString(string(text), ""), -1) {
			target := m[1] + m[3]
			if strings.Contains(target, "://") {
				continue
			}
			path := filepath.Join(filepath.Dir(page), target)
			_, err := os.Stat(path)
			assert.NoError(t, err, "%s links to %s", filepath.Base(page), target)
			if page == readme {
				linked[filepath.Clean(path)] = true
			}
		}
	}
	for _, page := range pages {
		assert.True(t, linked[filepath.Clean(page)], "the README does not link to %s", page)
	}
}

// TestReadmeOutputIsCurrent runs each block of the README and of the
// pages in docs/ that starts with a "$ retrypolicy …" line and compares
// what follows with what the command prints; -update rewrites them.
func TestReadmeOutputIsCurrent(t *testing.T) {
	t.Chdir(filepath.Join("..", "..")) // the commands' files are named from the checkout's root
	pages, err := filepath.Glob(filepath.Join("docs", "*.md"))
	require.NoError(t, err)
	pages = append(pages, "README.md")
	block := regexp.MustCompile("(?s)```\n\\$ retrypolicy ([^\n]*)\n(.*?)```")
	total := 0
	for _, page := range pages {
		text, err := os.ReadFile(page)
		require.NoError(t, err)
		current := block.ReplaceAllStringFunc(string(text), func(b string) string {
			m := block.FindStringSubmatch(b)
			total++
			var stdout, stderr bytes.Buffer
			run(strings.Fields(m[1]), strings.NewReader(""), &stdout, &stderr)
			if !*update {
				assert.Equal(t, m[2], stdout.String(), "%s's block for retrypolicy %s is stale (go test -run TestReadmeOutputIsCurrent -update)", filepath.Base(page), m[1])
			}
			return "```\n$ retrypolicy " + m[1] + "\n" + stdout.String() + "```"
		})
		if *update {
			require.NoError(t, os.WriteFile(page, []byte(current), 0o644))
		}
	}
	assert.GreaterOrEqual(t, total, 5, "the plan and the four lints")
}
