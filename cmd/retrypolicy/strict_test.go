package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/front/report"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cli runs the command in process and returns its exit status and streams.
func cli(stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

const oneFailure = `"failures":["2026-11-02T15:00:00Z"],"now":"2026-11-02T15:00:01Z"`

// TestDecideLinesAnswersEachLineBeforeTheNextArrives: a caller that writes
// one request and waits reads its answer while the input stays open. In a
// synctest bubble, a command that held its answer back would leave every
// goroutine blocked, which the bubble reports as a deadlock.
func TestDecideLinesAnswersEachLineBeforeTheNextArrives(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		var stderr bytes.Buffer
		done := make(chan int, 1)
		go func() {
			code := run([]string{"decide", "--lines"}, inR, outW, &stderr)
			outW.Close()
			done <- code
		}()
		answers := bufio.NewReader(outR)
		for i, req := range []string{
			`{` + oneFailure + `}`,
			`{"retry_strategy":{"strategy":"none"},` + oneFailure + `}`,
			`not json`,
		} {
			_, err := io.WriteString(inW, req+"\n")
			require.NoError(t, err)
			answer, err := answers.ReadString('\n')
			require.NoError(t, err, "answer %d", i+1)
			switch i {
			case 0:
				assert.Contains(t, answer, `"action":"retry_now"`)
			case 1:
				assert.Contains(t, answer, `"reason":"strategy_none"`)
			case 2:
				assert.Contains(t, answer, `"error":"$: must be a request, one JSON object on one line (`)
			}
		}
		require.NoError(t, inW.Close())
		rest, err := io.ReadAll(answers)
		require.NoError(t, err)
		assert.Empty(t, rest)
		assert.Equal(t, 2, <-done, "a bad line makes the exit status 2")
		assert.Equal(t, "retrypolicy: 1 bad line (with --lines, each request is one JSON object on one line)\n", stderr.String())
	})
}

// TestDecideEnvelopeIsStrict: duplicate keys, also written with escapes,
// and unknown keys are problems naming the field, as in a strategy.
func TestDecideEnvelopeIsStrict(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{` + oneFailure + `,"now":"2026-11-02T15:00:09Z"}`, "now: duplicate key\n"},
		{`{` + oneFailure + `,"f\u0061ilures":["2026-11-02T15:00:00Z"]}`, "failures: duplicate key\n"},
		{`{"retry_strategy":{"strategy":"bounded","max_attempts":3},` + oneFailure + `,"retry_strategy":{"strategy":"none"}}`, "retry_strategy: duplicate key\n"},
		{`{"jitter_seed":"a",` + oneFailure + `,"jitter_seed":"b"}`, "jitter_seed: duplicate key\n"},
		{`{` + oneFailure + `,"Now":"2026-11-02T15:00:09Z"}`, "Now: unknown field; did you mean now?\n"},
		{`{"failurs":["2026-11-02T15:00:00Z"],"now":"2026-11-02T15:00:09Z"}`, "failures: required\nfailurs: unknown field; did you mean failures?\n"},
		{`{"last_uptime":5,` + oneFailure + `}`, "last_uptime: unknown field; did you mean last_uptime_secs?\n"},
		{`{"retry_stratgy":null,` + oneFailure + `}`, "retry_stratgy: unknown field; did you mean retry_strategy?\n"},
		{`{"color":"red",` + oneFailure + `}`, "color: unknown field\n"},
		{`{"failures":[],"now":"2026-11-02T15:00:00Z"}`, "failures: must hold at least one failure\n"},
		{`{"now":"2026-11-02T15:00:00Z"}`, "failures: required\n"},
		{`{"failures":["2026-11-02T15:00:00Z"]}`, "now: required\n"},
		{`{"retry_strategy":{"strategy":"bounded","max_attempts":1e30},` + oneFailure + `}`, "retry_strategy.max_attempts: out of range: must be at most 9223372036854775807, got 1e30\n"},
		{`{"retry_strategy":{"strategy":"bounded","max_attempts":0},` + oneFailure + `}`, "retry_strategy.max_attempts: must be at least 1, got 0\n"},
		{`{"last_uptime_secs":"10",` + oneFailure + `}`, "last_uptime_secs: must be a number, got \"10\"\n"},
		{`{"jitter_seed":7,` + oneFailure + `}`, "jitter_seed: must be a string, got 7\n"},
		{`{"failures":["2026-11-02T15:00:00Z",3,"noon"],"now":"2026-11-02 15:00:00Z"}`,
			"failures[1]: must be an RFC 3339 time, got 3\nfailures[2]: must be an RFC 3339 time, got \"noon\"\nnow: must be an RFC 3339 time, got \"2026-11-02 15:00:00Z\"\n"},
		{`[]`, "$: must be a JSON object, got an array\n"},
		{``, "$: must be a JSON object, got an empty document\n"},
		{`{` + oneFailure + `} {}`, "$: must hold one JSON object and nothing after it\n"},
		{`{` + oneFailure, fmt.Sprintf("$: must be valid JSON (unexpected end of input at byte %d)\n", 1+len(oneFailure))},
	} {
		code, out, errOut := cli(tc.doc, "decide")
		assert.Equal(t, 2, code, tc.doc)
		assert.Empty(t, out, tc.doc)
		assert.Equal(t, tc.want, errOut, tc.doc)
	}
}

// TestByteOrderMarkIsSkipped: a document that starts with a UTF-8
// byte-order mark is read as the document after it, by every subcommand.
func TestByteOrderMarkIsSkipped(t *testing.T) {
	const bom = "\xef\xbb\xbf"
	code, out, _ := cli(bom+`{"strategy":"none"}`, "validate")
	assert.Equal(t, 0, code)
	assert.Equal(t, "{\"strategy\":\"none\"}\n", out)

	code, withBOM, _ := cli(bom+`{`+oneFailure+`}`, "decide")
	assert.Equal(t, 0, code)
	_, without, _ := cli(`{`+oneFailure+`}`, "decide")
	assert.Equal(t, without, withBOM)

	code, out, _ = cli(bom+`{`+oneFailure+"}\n"+bom+`{`+oneFailure+"}\n", "decide", "--lines")
	assert.Equal(t, 0, code)
	assert.Equal(t, without+without, out, "each line may start with a byte-order mark")
}

// TestDocumentProblemsAlike: the same bad document gets the same problem
// with the document as a whole ("$"), at the same byte, from validate and
// from decide.
func TestDocumentProblemsAlike(t *testing.T) {
	for _, doc := range []string{
		`{"strategy" "none"}`,
		"\xef\xbb\xbf{\"strategy\" \"none\"}",
		`{"strategy":"none",}`,
		`{"a":[1,2,}`,
		`{"a":tru}`,
		`{"a":"\x"}`,
		"{\"a\":\"tab\there\"}",
		`{"a":01}`,
		`{"a":1.}`,
		`{"a":-}`,
		`{"a"`,
		`{"a":[`,
		`{`,
		`nul`,
		` `,
		`"text"`,
		`{"strategy":"none"}]`,
		`{"strategy":"none"} {}`,
		strings.Repeat("[", 40) + strings.Repeat("]", 40),
	} {
		_, _, fromValidate := cli(doc, "validate")
		_, _, fromDecide := cli(doc, "decide")
		first := func(s string) string { return strings.SplitN(s, "\n", 2)[0] }
		require.True(t, strings.HasPrefix(fromValidate, "$: "), "%q: %s", doc, fromValidate)
		assert.Equal(t, first(fromValidate), first(fromDecide), "%q", doc)
	}
}

// TestDecideDueReadsBack: a decision whose due time is past year 9999
// prints the last RFC 3339 time, which reads back as a time.
func TestDecideDueReadsBack(t *testing.T) {
	code, out, errOut := cli(`{"retry_strategy":{"strategy":"unless_stopped","backoff":{"kind":"fixed","base_delay_secs":3153600000}},`+
		`"failures":["9999-12-31T23:00:00Z"],"now":"9999-12-31T23:00:00Z"}`, "decide")
	require.Equal(t, 0, code, errOut)
	var d struct {
		Action string `json:"action"`
		Due    string `json:"due"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	assert.Equal(t, "wait", d.Action)
	due, err := time.Parse(time.RFC3339Nano, d.Due)
	require.NoError(t, err, "due %q must read back", d.Due)
	assert.True(t, due.Equal(time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)), "due %v", due)

	var back retrypolicy.Decision
	require.NoError(t, json.Unmarshal([]byte(out), &back), "the library reads the command's decision back")
	assert.True(t, back.Due.Equal(due))
}

// TestJitterSeedIsTheStringsBytes: the seed is hashed from the string's
// bytes, so that strings that differ only in bytes which are not UTF-8
// give distinct seeds, each the library's SeedFromString of those bytes.
func TestJitterSeedIsTheStringsBytes(t *testing.T) {
	strategy := `{"strategy":"unless_stopped","backoff":{"kind":"exponential_with_jitter","base_delay_secs":1000}}`
	s, err := retrypolicy.Parse([]byte(strategy))
	require.NoError(t, err)
	now := time.Date(2026, 11, 2, 15, 0, 1, 0, time.UTC)
	failures := []time.Time{time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)}
	seen := map[string]string{}
	for _, seed := range []string{"\xff", "\xfe", "\xff\xfe", "\ufffd", `\u00e9`, "\u00e9", `\ud800`} {
		code, out, errOut := cli(`{"retry_strategy":`+strategy+`,`+oneFailure+`,"jitter_seed":"`+seed+`"}`, "decide")
		require.Equal(t, 0, code, errOut)
		var decoded string // the seed as JSON decodes it where it is valid
		raw := seed
		if strings.HasPrefix(seed, `\u`) {
			require.NoError(t, json.Unmarshal([]byte(`"`+seed+`"`), &decoded))
			raw = decoded
		}
		want, err := retrypolicy.Decide(s, failures, 0, retrypolicy.SeedFromString(raw), now)
		require.NoError(t, err)
		text, _ := want.MarshalJSON()
		assert.Equal(t, string(text)+"\n", out, "seed %q", seed)
		if seed != `\u00e9` && seed != `\ud800` { // as JSON decodes them: "é" and U+FFFD
			if prev, ok := seen[out]; ok {
				t.Errorf("seeds %q and %q give the same decision", prev, seed)
			}
			seen[out] = seed
		}
	}
}

// TestEchoedInputCannotForgeLines: a key or value echoed in a message is
// escaped and cut, so that one problem is one line however it is written.
func TestEchoedInputCannotForgeLines(t *testing.T) {
	forged := `x\nretrypolicy: backoff.kind: forged\u001b[31m`
	for _, args := range [][]string{{"validate"}, {"decide"}} {
		doc := `{"` + forged + `":1}`
		if args[0] == "decide" {
			doc = `{` + oneFailure + `,"` + forged + `":1}`
		}
		code, _, errOut := cli(doc, args...)
		assert.Equal(t, 2, code)
		problems := 1 // the unknown key
		if args[0] == "validate" {
			problems++ // and strategy: required
		}
		assert.Equal(t, problems, strings.Count(errOut, "\n"), "%v: %q", args, errOut)
		assert.NotContains(t, "\n"+errOut, "\nretrypolicy:", "%v", args)
		assert.NotContains(t, errOut, "\x1b", "%v", args)
		assert.Contains(t, errOut, `\n`, "%v", args)
		assert.Contains(t, errOut, `\u001b`, "%v", args)
	}

	huge := strings.Repeat("k", 900_000)
	for _, args := range [][]string{{"validate"}, {"decide"}} {
		code, _, errOut := cli(`{"`+huge+`":1}`, args...)
		assert.Equal(t, 2, code)
		assert.Less(t, len(errOut), 1000, "%v: a 900 KB key is cut", args)
	}
}

// TestProblemsAreBounded: a request with half a million bad entries gets
// at most 20 problems and a count of the others, from every subcommand.
func TestProblemsAreBounded(t *testing.T) {
	var failures strings.Builder
	for i := range 520_000 {
		if i > 0 {
			failures.WriteByte(',')
		}
		failures.WriteByte('1')
	}
	doc := `{"failures":[` + failures.String() + `],"now":"2026-11-02T15:00:00Z"}`
	require.Less(t, len(doc), 1<<20)
	code, _, errOut := cli(doc, "decide")
	assert.Equal(t, 2, code)
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	require.Len(t, lines, 21)
	assert.Equal(t, "failures[19]: must be an RFC 3339 time, got 1", lines[19])
	assert.Equal(t, "and 519980 more", lines[20])

	code, out, _ := cli(doc+"\n", "decide", "--lines")
	assert.Equal(t, 2, code)
	assert.Less(t, len(out), 2000)
	assert.True(t, strings.HasSuffix(out, "; and 519980 more\"}\n"), out[max(0, len(out)-80):])

	var keys strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&keys, `"k%04d":1,`, i)
	}
	code, _, errOut = cli(`{`+keys.String()+`"strategy":"none"}`, "validate")
	assert.Equal(t, 2, code)
	assert.LessOrEqual(t, strings.Count(errOut, "\n"), 21)
	assert.True(t, strings.HasSuffix(errOut, " more\n"), errOut)
}

// TestOversizedInputSaysTheLimit: a document past the limit is refused
// with the limit named.
func TestOversizedInputSaysTheLimit(t *testing.T) {
	big := strings.Repeat(" ", report.MaxLine+1)
	code, _, errOut := cli(big, "decide")
	assert.Equal(t, 2, code)
	assert.Equal(t, "$: must be at most 1048576 bytes\n", errOut)
	code, out, _ := cli(big+"\n", "decide", "--lines")
	assert.Equal(t, 2, code)
	assert.Equal(t, "{\"error\":\"$: must be at most 1048576 bytes\"}\n", out)
	code, _, errOut = cli(big, "validate")
	assert.Equal(t, 2, code)
	assert.Regexp(t, `^\$: must be at most \d+ bytes\n$`, errOut)
}

// TestUsage: usage errors exit 2, help exits 0 on standard output, flags
// are named with two dashes, and every problem with flags is reported.
func TestUsage(t *testing.T) {
	code, _, errOut := cli("", "validate", "a", "b")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "validate takes at most 1 argument(s), got 2")

	code, _, errOut = cli("", "decide", "--bogus")
	assert.Equal(t, 2, code)
	assert.Equal(t, "retrypolicy: decide: --bogus: unknown flag (see retrypolicy decide --help)\n", errOut, "one line, two dashes")

	code, out, _ := cli("", "version", "--help")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(out, "usage: retrypolicy version"), out)

	code, _, errOut = cli("", "version", "extra")
	assert.Equal(t, 2, code)
	assert.NotEmpty(t, errOut)

	code, _, errOut = cli("", "flags", "--bogus", "1", "--retry-max-attempts", "3")
	assert.Equal(t, 2, code)
	assert.Equal(t, "--bogus: unknown flag\n--retry-max-attempts requires --retry-strategy\n", errOut)

	code, _, errOut = cli("", "plan", "--failures", "0")
	assert.Equal(t, 2, code)
	assert.Equal(t, "retrypolicy: plan: --failures: must be between 1 and 1000, got 0 (see retrypolicy plan --help)\n", errOut)
	for args, want := range map[string]string{
		"--uptime 5x":     "retrypolicy: plan: --uptime: must be seconds (90, 1.5) or a duration (1m30s), got \"5x\" (see retrypolicy plan --help)\n",
		"--failures 12.5": "retrypolicy: plan: --failures: must be a whole number, got \"12.5\" (see retrypolicy plan --help)\n",
		"--uptim 5":       "retrypolicy: plan: --uptim: unknown flag; did you mean --uptime? (see retrypolicy plan --help)\n",
		"--uptime":        "retrypolicy: plan: --uptime: needs a value (see retrypolicy plan --help)\n",
	} {
		code, out, errOut := cli("", append([]string{"plan"}, strings.Fields(args)...)...)
		assert.Equal(t, 2, code, args)
		assert.Empty(t, out, args)
		assert.Equal(t, want, errOut, args)
	}
	// Durations where seconds are taken: the three forms plan the same.
	_, want, _ := cli("", "plan", "--uptime", "90")
	for _, form := range []string{"90.0", "1m30s", "90s"} {
		_, out, _ := cli("", "plan", "--uptime", form)
		assert.Equal(t, want, out, form)
	}
	code, _, errOut = cli("", "plan", "--failures", "1001", "--uptime", "-1")
	assert.Equal(t, 2, code)
	assert.Equal(t, 2, strings.Count(errOut, "\n"), errOut)

	for _, sub := range []string{"validate", "flags", "decide", "plan"} {
		code, out, _ := cli("", sub, "--help")
		assert.Equal(t, 0, code, sub)
		assert.NotRegexp(t, `(?m)^  -[a-z]`, out, "%s --help names its options with two dashes", sub)
		if sub != "validate" {
			assert.Regexp(t, `(?m)^  --[a-z]`, out, sub)
		}
	}
}
