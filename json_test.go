package retrypolicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// errorPaths returns the field paths of a validation error, in order.
func errorPaths(t require.TestingT, err error) []string {
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	paths := make([]string, len(ve.Errors))
	for i, fe := range ve.Errors {
		paths[i] = fe.Field
	}
	return paths
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.Fields(string(data))
}

// TestParseValidTestdata: each testdata/valid/X.json parses, encodes to the
// hand-written X.canonical, and that encoding parses back to the same value.
func TestParseValidTestdata(t *testing.T) {
	files, err := filepath.Glob("testdata/valid/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			doc, err := os.ReadFile(file)
			require.NoError(t, err)
			want, err := os.ReadFile(strings.TrimSuffix(file, ".json") + ".canonical")
			require.NoError(t, err)
			s, err := Parse(doc)
			require.NoError(t, err)
			got, err := json.Marshal(s)
			require.NoError(t, err)
			assert.Equal(t, strings.TrimSpace(string(want)), string(got))
			back, err := Parse(got)
			require.NoError(t, err)
			assert.Equal(t, s, back)
		})
	}
}

// TestParseInvalidTestdata: each testdata/invalid/X.json is rejected with
// errors naming exactly the paths in X.paths, in that order, by Parse and
// json.Unmarshal alike.
func TestParseInvalidTestdata(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.json")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 60)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			doc, err := os.ReadFile(file)
			require.NoError(t, err)
			want := readLines(t, strings.TrimSuffix(file, ".json")+".paths")
			s, err := Parse(doc)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalid)
			assert.Equal(t, Strategy{}, s)
			assert.Equal(t, want, errorPaths(t, err))
			for _, fe := range err.(*ValidationError).Errors {
				assert.True(t, strings.HasPrefix(fe.Error(), fe.Field+": "), fe.Error())
				assert.NotEmpty(t, fe.Rule)
			}

			held := Default()
			if uerr := held.UnmarshalJSON(doc); string(bytes.TrimSpace(doc)) != "null" {
				assert.ErrorIs(t, uerr, ErrInvalid)
				assert.Equal(t, Default(), held, "a failed UnmarshalJSON changes nothing")
			}
		})
	}
}

func TestParseMessages(t *testing.T) {
	tests := []struct{ doc, want string }{
		{`{"strategy":"bounded","max_attempts":0}`, "retrypolicy: max_attempts: must be at least 1, got 0"},
		{`{"strategy":"bounded"}`, "retrypolicy: max_attempts: required when strategy is bounded"},
		{`{"strategy":"none","max_attempts":5}`, "retrypolicy: max_attempts: only valid when strategy is bounded, got 5"},
		{`{"strategy":"unless_stopped","backoff":{"kind":"exponential","multiplier":-1}}`, "retrypolicy: backoff.multiplier: must be greater than 0, got -1"},
		{`{"strategy":"unless_stopped","backoff":{"kind":"fixed","multiplier":2}}`, "retrypolicy: backoff.multiplier: not allowed when backoff.kind is fixed, got 2"},
		{`{"strategy":"bounded","max_attempts":"5"}`, `retrypolicy: max_attempts: must be an integer, got "5"`},
		{`{"strategy":"bounded","max_attempts":5.5}`, `retrypolicy: max_attempts: must be a whole number, got 5.5`},
		{`{"strategy":"bounded","max_attempts":5,"window_secs":604801}`, `retrypolicy: window_secs: must be between 1 and 604800, got 604801`},
		{`{"strategy":"bounded","max_attempts":1e400}`, `retrypolicy: max_attempts: out of range: must be at most 9223372036854775807, got 1e400`},
		{`{"strategy":"bounded","max_attempts":-1e400}`, `retrypolicy: max_attempts: must be at least 1, got -1e400`},
		{`{"strategy":"unless_stopped","backoff":{"kind":"fixed","base_delay_secs":9223372037}}`, `retrypolicy: backoff.base_delay_secs: out of range: must be at most 9223372036, got 9223372037`},
		{`{"strategy":"bounded","max_attempts":1,"window_secs":1e30}`, `retrypolicy: window_secs: must be between 1 and 604800, got 1e30`},
		{"\xef\xbb\xbf{\"strategy\":\"none\"} x", `retrypolicy: $: must hold one JSON object and nothing after it`},
		{"\xef\xbb\xbf{\"strategy\" none}", `retrypolicy: $: must be valid JSON (invalid character 'n' after object key at byte 15)`},
		{`{"strategy":"none","x\nretrypolicy: backoff.kind: forged":1}`, `retrypolicy: "x\nretrypolicy: backoff.kind: forged": unknown field`},
		{`{"strategy":"\u001b[2J"}`, `retrypolicy: strategy: must be one of none, bounded, unless_stopped, got "\u001b[2J"`},
		{`{"strategy":"x"}`, `retrypolicy: strategy: must be one of none, bounded, unless_stopped, got "x"`},
		{`{"strategy":"none","a":1}`, `retrypolicy: a: unknown field`},
		{`{"strategy":"none","strategy":"none"}`, `retrypolicy: strategy: duplicate key`},
		{`{"strategy":"none"} x`, `retrypolicy: $: must hold one JSON object and nothing after it`},
		{`[1]`, `retrypolicy: $: must be a JSON object, got an array`},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.doc))
		require.Error(t, err, tt.doc)
		assert.Equal(t, tt.want, err.Error(), tt.doc)
	}
}

func TestParseRefusesLargeDocumentsBeforeReadingThem(t *testing.T) {
	big := bytes.Repeat([]byte(" "), 10<<20)
	copy(big, `{"strategy":"none"}`)
	_, err := Parse(big)
	assert.Equal(t, "retrypolicy: $: must be at most 65536 bytes", err.Error(), "the limit, not the size")
}

// TestProblemsAreBounded: a document with thousands of problems lists 20
// and counts the rest, so that an error stays small whatever the input.
func TestProblemsAreBounded(t *testing.T) {
	var doc strings.Builder
	doc.WriteString(`{"strategy":"none"`)
	for i := range 5000 {
		fmt.Fprintf(&doc, `,"k%d":1`, i)
	}
	doc.WriteString("}")
	_, err := Parse([]byte(doc.String()))
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Len(t, ve.Errors, 20)
	assert.Equal(t, 4980, ve.Omitted)
	lines := strings.Split(err.Error(), "\n")
	assert.Len(t, lines, 21)
	assert.Equal(t, "retrypolicy: and 4980 more", lines[20])
}

func TestUnmarshalInsideARequest(t *testing.T) {
	type request struct {
		Dataset       string   `json:"dataset"`
		RetryStrategy Strategy `json:"retry_strategy"`
	}
	req := request{RetryStrategy: Default()}
	require.NoError(t, json.Unmarshal([]byte(`{"dataset":"eth","retry_strategy":{"strategy":"none"}}`), &req))
	assert.Equal(t, Strategy{Kind: None}, req.RetryStrategy)

	req = request{RetryStrategy: Default()}
	require.NoError(t, json.Unmarshal([]byte(`{"dataset":"eth"}`), &req))
	assert.Equal(t, Default(), req.RetryStrategy, "no descriptor: the default strategy")

	req = request{RetryStrategy: Strategy{Kind: None}}
	require.NoError(t, json.Unmarshal([]byte(`{"retry_strategy":null}`), &req))
	assert.Equal(t, Strategy{Kind: None}, req.RetryStrategy, "null leaves the value as it was, as for any Go value")
	s, err := Parse([]byte(" null "))
	require.NoError(t, err)
	assert.Equal(t, Default(), s, "the document null: no descriptor, the default strategy")

	req = request{RetryStrategy: Default()}
	err = json.Unmarshal([]byte(`{"retry_strategy":{"strategy":"bounded","backoff":{"kind":"fixed","multiplier":2}}}`), &req)
	require.ErrorIs(t, err, ErrInvalid)
	assert.Equal(t, []string{"max_attempts", "backoff.multiplier"}, errorPaths(t, err))
	assert.Equal(t, Default(), req.RetryStrategy, "a failed decode changes nothing")
}

func TestMarshalRefusesInvalidStrategy(t *testing.T) {
	_, err := json.Marshal(Strategy{Kind: Bounded})
	assert.ErrorIs(t, err, ErrInvalid)
	// Go values may count milliseconds; the descriptor cannot.
	s := Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Exponential, BaseDelay: 250 * time.Millisecond, Multiplier: 2, MaxDelay: 1500 * time.Millisecond}}
	require.NoError(t, s.Validate())
	_, err = s.MarshalJSON()
	assert.Equal(t, "retrypolicy: backoff.base_delay_secs: must be a whole number of seconds, got 250ms\n"+
		"retrypolicy: backoff.max_delay_secs: must be a whole number of seconds, got 1.5s", err.Error())
}

// TestEveryValidStrategyRoundTrips pins the canonical encoding: any valid
// strategy encodes, deterministically, to JSON that decodes back to an equal
// strategy and encodes to the same bytes.
func TestEveryValidStrategyRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genStrategy(t)
		require.NoError(t, s.Validate())
		a, err := s.MarshalJSON()
		require.NoError(t, err)
		b, err := s.MarshalJSON()
		require.NoError(t, err)
		if !bytes.Equal(a, b) {
			t.Fatalf("encoding is not deterministic: %s vs %s", a, b)
		}
		back, err := Parse(a)
		if err != nil {
			t.Fatalf("%s does not parse: %v", a, err)
		}
		if back != s {
			t.Fatalf("%s decodes to %+v, want %+v", a, back, s)
		}
		again, err := back.MarshalJSON()
		require.NoError(t, err)
		if !bytes.Equal(a, again) {
			t.Fatalf("re-encoding changed %s into %s", a, again)
		}
	})
}

// breakage is one way to make a valid descriptor invalid, and the path the
// error must name.
type breakage struct {
	path  string
	apply func(doc map[string]any)
	// jsonOnly: the breakage is a JSON shape or type that a command line
	// cannot spell (flags carry text and have no objects), or an omission
	// that flags fill by design (--retry-backoff defaults to exponential).
	jsonOnly bool
}

func backoffOf(doc map[string]any) map[string]any {
	b, _ := doc["backoff"].(map[string]any)
	return b
}

func breakages(doc map[string]any) []breakage {
	out := []breakage{
		{"strategy", func(d map[string]any) { delete(d, "strategy") }, true},
		{"strategy", func(d map[string]any) { d["strategy"] = "Bounded" }, false},
		{"strategy", func(d map[string]any) { d["strategy"] = 3 }, true},
		{"extra", func(d map[string]any) { d["extra"] = true }, true},
	}
	switch doc["strategy"] {
	case "bounded":
		out = append(out,
			breakage{"max_attempts", func(d map[string]any) { delete(d, "max_attempts") }, false},
			breakage{"max_attempts", func(d map[string]any) { d["max_attempts"] = 0 }, false},
			breakage{"max_attempts", func(d map[string]any) { d["max_attempts"] = 2.5 }, false},
			breakage{"max_attempts", func(d map[string]any) { d["max_attempts"] = "3" }, true},
			breakage{"window_secs", func(d map[string]any) { d["window_secs"] = 604801 }, false},
			breakage{"window_secs", func(d map[string]any) { d["window_secs"] = 0 }, false},
			breakage{"window_secs", func(d map[string]any) { d["window_secs"] = 0.5 }, false},
		)
	default:
		out = append(out,
			breakage{"max_attempts", func(d map[string]any) { d["max_attempts"] = 3 }, false},
			breakage{"window_secs", func(d map[string]any) { d["window_secs"] = 60 }, false},
		)
	}
	if doc["strategy"] == "none" {
		return append(out, breakage{"backoff", func(d map[string]any) { d["backoff"] = map[string]any{"kind": "fixed"} }, true})
	}
	out = append(out,
		breakage{"backoff", func(d map[string]any) { d["backoff"] = []any{} }, true},
		breakage{"backoff.kind", func(d map[string]any) { delete(backoffOf(d), "kind") }, true},
		breakage{"backoff.kind", func(d map[string]any) { backoffOf(d)["kind"] = "linear" }, false},
		breakage{"backoff.base_delay_secs", func(d map[string]any) { backoffOf(d)["base_delay_secs"] = 0 }, false},
		breakage{"backoff.base_delay_secs", func(d map[string]any) { backoffOf(d)["base_delay_secs"] = 1.5 }, false},
		breakage{"backoff.base_delay_secs", func(d map[string]any) { backoffOf(d)["base_delay_secs"] = json.Number("1e100") }, false},
		breakage{"backoff.other", func(d map[string]any) { backoffOf(d)["other"] = 1 }, true},
	)
	if backoffOf(doc)["kind"] == "fixed" {
		return append(out,
			breakage{"backoff.multiplier", func(d map[string]any) { backoffOf(d)["multiplier"] = 2 }, false},
			breakage{"backoff.max_delay_secs", func(d map[string]any) { backoffOf(d)["max_delay_secs"] = 60 }, false},
		)
	}
	return append(out,
		breakage{"backoff.multiplier", func(d map[string]any) { backoffOf(d)["multiplier"] = 0 }, false},
		breakage{"backoff.multiplier", func(d map[string]any) { backoffOf(d)["multiplier"] = -1.5 }, false},
		breakage{"backoff.multiplier", func(d map[string]any) { backoffOf(d)["multiplier"] = json.Number("1e999") }, false},
		breakage{"backoff.max_delay_secs", func(d map[string]any) { backoffOf(d)["max_delay_secs"] = 0 }, false},
		breakage{"backoff.max_delay_secs", func(d map[string]any) {
			b := backoffOf(d)
			b["base_delay_secs"] = 100
			b["max_delay_secs"] = 99
		}, false},
	)
}

// TestEveryInvalidDescriptorIsRejectedNamingItsField pins the descriptor's strict
// decoding: a valid descriptor broken in any one way is rejected, and the
// error names the field that was broken.
func TestEveryInvalidDescriptorIsRejectedNamingItsField(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		doc := genCanonicalDoc(t)
		all := breakages(doc)
		br := all[rapid.IntRange(0, len(all)-1).Draw(t, "breakage")]
		br.apply(doc)
		broken, err := json.Marshal(doc)
		require.NoError(t, err)
		_, err = Parse(broken)
		if err == nil {
			t.Fatalf("%s accepted", broken)
		}
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("%v does not match ErrInvalid", err)
		}
		if paths := errorPaths(t, err); !contains(paths, br.path) {
			t.Fatalf("%s: errors name %v, not %s", broken, paths, br.path)
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestParseDefaultsPerSource(t *testing.T) {
	// An omitted backoff is the default one, capped at an hour; a backoff
	// given without max_delay_secs has no cap.
	s, err := Parse([]byte(`{"strategy":"unless_stopped"}`))
	require.NoError(t, err)
	assert.Equal(t, time.Hour, s.Backoff.MaxDelay)
	s, err = Parse([]byte(`{"strategy":"unless_stopped","backoff":{"kind":"exponential"}}`))
	require.NoError(t, err)
	assert.Equal(t, time.Duration(0), s.Backoff.MaxDelay)
	assert.Equal(t, 2.0, s.Backoff.Multiplier)
	assert.Equal(t, time.Second, s.Backoff.BaseDelay)
}

// TestUnknownKeysSuggestTheFieldMeant: a misspelled key or flag names the
// field it most likely meant; one far from every field does not.
func TestUnknownKeysSuggestTheFieldMeant(t *testing.T) {
	_, err := Parse([]byte(`{"strategy":"bounded","max_attempt":3,"backoff":{"kind":"fixed","base_delay":2},"retries":1}`))
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	var got []string
	for _, fe := range ve.Errors {
		got = append(got, fe.Error())
	}
	assert.Equal(t, []string{
		"max_attempts: required when strategy is bounded",
		"max_attempt: unknown field; did you mean max_attempts?",
		"retries: unknown field",
		"backoff.base_delay: unknown field; did you mean base_delay_secs?",
	}, got)
	_, err = ParseFlags([]string{"--retry-strategy", "bounded", "--retry-max-attempts", "3", "--retry-windw-secs", "60"})
	assert.EqualError(t, err, "retrypolicy: --retry-windw-secs: unknown flag; did you mean --retry-window-secs?")
}

// TestDecisionKnowsOnlyItsOwnKeys: a decision's delay is delay_secs, the
// one name MarshalJSON writes; any other name for it is an unknown field.
func TestDecisionKnowsOnlyItsOwnKeys(t *testing.T) {
	var d Decision
	err := json.Unmarshal([]byte(`{"action":"wait","failures_in_window":4,"owed_secs":8,"credited_secs":4,"jitter_secs":0,"due":"2026-11-02T15:00:04Z"}`), &d)
	assert.EqualError(t, err, "retrypolicy: decision: credited_secs: unknown field")
	assert.Equal(t, Decision{}, d, "a refused decision leaves d as it was")
}
