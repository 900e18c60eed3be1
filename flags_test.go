package retrypolicy

import (
	"encoding/json"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestParseFlagsSeedExamples(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, `{"strategy":"unless_stopped","backoff":{"kind":"exponential","base_delay_secs":1,"multiplier":2.0,"max_delay_secs":3600}}`},
		{strings.Fields("--retry-strategy bounded --retry-max-attempts 5 --retry-max-delay-secs 60"),
			`{"strategy":"bounded","max_attempts":5,"window_secs":3600,"backoff":{"kind":"exponential","base_delay_secs":1,"multiplier":2.0,"max_delay_secs":60}}`},
		{strings.Fields("--retry-strategy bounded --retry-max-attempts 5 --retry-window-secs 86400 --retry-max-delay-secs 600"),
			`{"strategy":"bounded","max_attempts":5,"window_secs":86400,"backoff":{"kind":"exponential","base_delay_secs":1,"multiplier":2.0,"max_delay_secs":600}}`},
		{strings.Fields("--retry-strategy unless_stopped --retry-backoff exponential_with_jitter --retry-base-delay-secs 2 --retry-max-delay-secs 300"),
			`{"strategy":"unless_stopped","backoff":{"kind":"exponential_with_jitter","base_delay_secs":2,"multiplier":2.0,"max_delay_secs":300}}`},
		{strings.Fields("--retry-strategy none"), `{"strategy":"none"}`},
		// A chosen strategy has no cap unless one is given.
		{strings.Fields("--retry-strategy unless_stopped"), `{"strategy":"unless_stopped","backoff":{"kind":"exponential","base_delay_secs":1,"multiplier":2.0}}`},
		{strings.Fields("--retry-strategy=unless_stopped --retry-backoff=fixed --retry-base-delay-secs=30"), `{"strategy":"unless_stopped","backoff":{"kind":"fixed","base_delay_secs":30}}`},
		{strings.Fields("--retry-strategy unless_stopped --retry-multiplier 1.5"), `{"strategy":"unless_stopped","backoff":{"kind":"exponential","base_delay_secs":1,"multiplier":1.5}}`},
	}
	for _, tt := range tests {
		s, err := ParseFlags(tt.args)
		require.NoError(t, err, tt.args)
		got, err := s.MarshalJSON()
		require.NoError(t, err)
		assert.Equal(t, tt.want, string(got), tt.args)
	}
}

func TestParseFlagsErrors(t *testing.T) {
	tests := []struct {
		args string
		want []string
	}{
		{"--retry-max-attempts 3", []string{"retrypolicy: --retry-max-attempts requires --retry-strategy"}},
		{"--retry-strategy unless_stopped --retry-max-attempts 5", []string{`retrypolicy: --retry-max-attempts is only valid when --retry-strategy=bounded`}},
		{"--retry-strategy bounded --retry-max-attempts x", []string{`retrypolicy: --retry-max-attempts: "x" is not an integer`}},
		{"--retry-strategy bounded", []string{"retrypolicy: --retry-max-attempts is required when --retry-strategy=bounded"}},
		{"--retry-strategy none --retry-backoff fixed", []string{`retrypolicy: --retry-backoff is not allowed when --retry-strategy=none`}},
		{"--retry-strategy bounded --retry-max-attempts 3 --retry-backoff fixed --retry-multiplier 2 --retry-max-delay-secs 9",
			[]string{`retrypolicy: --retry-multiplier is not allowed when --retry-backoff=fixed`, `retrypolicy: --retry-max-delay-secs is not allowed when --retry-backoff=fixed`}},
		{"--retry-strategy unless_stopped --retry-base-delay-secs 10 --retry-max-delay-secs 5", []string{`retrypolicy: --retry-max-delay-secs: must be at least --retry-base-delay-secs (10), got "5"`}},
		{"--retry-strategy Bounded", []string{`retrypolicy: --retry-strategy: must be one of none, bounded, unless_stopped, got "Bounded"`}},
		{"--retry-strategy none --retry-strategy none", []string{`retrypolicy: --retry-strategy is given more than once`}},
		{"--retry-strategy bounded --retry-max-attempts 3 --retry-window-secs 1.5", []string{`retrypolicy: --retry-window-secs: "1.5" is not a whole number`}},
		{"--retry-strategy unless_stopped --retry-multiplier -1", []string{`retrypolicy: --retry-multiplier: must be greater than 0, got "-1"`}},
		{"--retry-strategy unless_stopped --retry-multiplier two", []string{`retrypolicy: --retry-multiplier: "two" is not a number`}},
		{"--retry-strategy none extra", []string{`retrypolicy: $: unexpected argument, got "extra"`}},
		{"--retry-bogus 1", []string{`retrypolicy: --retry-bogus: unknown flag`}},
		// Every problem at once, stray flags and arguments first.
		{"--frobnicate --retry-max-attempts 3", []string{`retrypolicy: --frobnicate: unknown flag`, `retrypolicy: --retry-max-attempts requires --retry-strategy`}},
		{"-retry-strategy=bounded --retry-max-attempts=0 -- --retry-multiplier=2", []string{
			`retrypolicy: $: unexpected argument, got "--retry-multiplier=2"`, `retrypolicy: --retry-max-attempts: must be at least 1, got "0"`}},
		{"--retry-strategy", []string{`retrypolicy: --retry-strategy needs a value`}},
		{"--retry-strategy none --retry-backoff fixed --retry-base-delay-secs 5", []string{
			`retrypolicy: --retry-backoff is not allowed when --retry-strategy=none`, `retrypolicy: --retry-base-delay-secs is not allowed when --retry-strategy=none`}},
		{"--retry-strategy bounded --retry-max-attempts 99999999999999999999", []string{
			`retrypolicy: --retry-max-attempts: out of range: must be at most 9223372036854775807, got "99999999999999999999"`}},
		{"--retry-strategy unless_stopped --retry-base-delay-secs 9223372037", []string{
			`retrypolicy: --retry-base-delay-secs: out of range: must be at most 9223372036, got "9223372037"`}},
		{"--retry-\x1b[31mred=1", []string{`retrypolicy: --"retry-\u001b[31mred": unknown flag`}},
	}
	for _, tt := range tests {
		_, err := ParseFlags(strings.Fields(tt.args))
		require.ErrorIs(t, err, ErrInvalid, tt.args)
		assert.Equal(t, strings.Join(tt.want, "\n"), err.Error(), tt.args)
	}
}

func TestFlagsWithAFlagSet(t *testing.T) {
	fs := flag.NewFlagSet("ampctl", flag.ContinueOnError)
	dataset := fs.String("dataset", "", "the dataset")
	strategy := RegisterFlags(fs)
	require.NoError(t, fs.Parse([]string{"--dataset", "eth", "--retry-strategy=bounded", "--retry-max-attempts", "2"}))
	s, err := strategy()
	require.NoError(t, err)
	assert.Equal(t, "eth", *dataset)
	assert.Equal(t, Strategy{Kind: Bounded, MaxAttempts: 2, Window: time.Hour,
		Backoff: Backoff{Kind: Exponential, BaseDelay: time.Second, Multiplier: 2}}, s)

	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != "dataset" {
			names = append(names, f.Name)
			assert.NotEmpty(t, f.Usage)
		}
	})
	assert.ElementsMatch(t, []string{"retry-strategy", "retry-max-attempts", "retry-window-secs", "retry-backoff",
		"retry-base-delay-secs", "retry-multiplier", "retry-max-delay-secs"}, names)

	// The rules judge the flags together, after parsing.
	fs = flag.NewFlagSet("ampctl", flag.ContinueOnError)
	strategy = RegisterFlags(fs)
	require.NoError(t, fs.Parse([]string{"--retry-max-attempts", "2", "--retry-window-secs", "9"}))
	_, err = strategy()
	assert.Equal(t, "retrypolicy: --retry-max-attempts requires --retry-strategy\nretrypolicy: --retry-window-secs requires --retry-strategy", err.Error())
}

// flagsFor writes a descriptor as the equivalent command line.
func flagsFor(doc map[string]any) []string {
	args := []string{}
	add := func(flag string, v any) {
		if v != nil {
			args = append(args, "--"+flag, jsonText(v))
		}
	}
	add("retry-strategy", doc["strategy"])
	add("retry-max-attempts", doc["max_attempts"])
	add("retry-window-secs", doc["window_secs"])
	if b, ok := doc["backoff"].(map[string]any); ok {
		add("retry-backoff", b["kind"])
		add("retry-base-delay-secs", b["base_delay_secs"])
		add("retry-multiplier", b["multiplier"])
		add("retry-max-delay-secs", b["max_delay_secs"])
	}
	return args
}

func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TestFlagsAndJSONShareOneValidator pins "flags and JSON share one
// validator": a descriptor and its command line are accepted or rejected
// together, naming the same fields, and build the same strategy. Every
// field is written out, as flags have no omitted backoff object.
func TestFlagsAndJSONShareOneValidator(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		doc := genCanonicalDoc(t)
		if rapid.Bool().Draw(t, "break") {
			all := breakages(doc)
			br := all[rapid.IntRange(0, len(all)-1).Draw(t, "breakage")]
			if br.jsonOnly {
				return
			}
			br.apply(doc)
		}
		text, err := json.Marshal(doc)
		require.NoError(t, err)
		fromJSON, jerr := Parse(text)
		fromFlags, ferr := ParseFlags(flagsFor(doc))
		if (jerr == nil) != (ferr == nil) {
			t.Fatalf("%s: JSON says %v, flags say %v", text, jerr, ferr)
		}
		if jerr == nil {
			if fromJSON != fromFlags {
				t.Fatalf("%s: JSON builds %+v, flags build %+v", text, fromJSON, fromFlags)
			}
			return
		}
		jp, fp := errorPaths(t, jerr), errorPaths(t, ferr)
		for i := range jp {
			jp[i] = flagNameOf(jp[i])
		}
		assert.Equal(t, jp, fp, "%s", text)
	})
}

func flagNameOf(path string) string {
	for f, name := range jsonNaming.names {
		if name == path {
			return flagNaming.names[f]
		}
	}
	return path
}
