package echo

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"pgregory.net/rapid"
)

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                                "\"plain\"",
		"x\nretrypolicy: backoff.kind: forged": `"x\nretrypolicy: backoff.kind: forged"`,
		"\x1b[31mred":                          `"\u001b[31mred"`,
		"say \"hi\" \\ bye":                    `"say \"hi\" \\ bye"`,
		"\xff\xfe":                             `"\xff\xfe"`,
		"\u009b2J \u2028":                      `"\u009b2J \u2028"`,
		"é":                                    `"é"`,
		strings.Repeat("a", 70):                `"` + strings.Repeat("a", 64) + `"…`,
		strings.Repeat("a", 63) + "éé":         `"` + strings.Repeat("a", 63) + `"…`,
	} {
		assert.Equal(t, want, Quote(in), "%q", in)
	}
	assert.Equal(t, "retry_strategy", Text("retry_strategy"))
	assert.Equal(t, `"two words"`, Text("two words"))
	assert.Equal(t, `""`, Text(""))
	assert.Equal(t, strings.Repeat("9", 64)+"…", Number(strings.Repeat("9", 900)))
}

// TestQuoteIsOneSafeBoundedLine pins what makes an echo safe: whatever the
// input, the result is valid UTF-8 on one line, holds no control character
// (C0, DEL, C1) nor line separator, and is bounded in length.
func TestQuoteIsOneSafeBoundedLine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := string(rapid.SliceOf(rapid.Byte()).Draw(t, "input"))
		if rapid.Bool().Draw(t, "text") {
			in = rapid.String().Draw(t, "string")
		}
		out := Quote(in)
		if !utf8.ValidString(out) || len(out) > 4*Max+8 {
			t.Fatalf("%q: %q", in, out)
		}
		for _, r := range out {
			if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || r == 0x2028 || r == 0x2029 {
				t.Fatalf("%q: %q holds %U", in, out, r)
			}
		}
	})
}

// TestSuggest: a key one or two slips from a known one gets it suggested;
// a word far from every name, or too short to tell, gets nothing.
func TestSuggest(t *testing.T) {
	names := map[string]int{"strategy": 0, "max_attempts": 1, "window_secs": 2, "backoff": 3}
	for word, want := range map[string]string{
		"max_attempt": "; did you mean max_attempts?",
		"maxattempts": "; did you mean max_attempts?",
		"window_sec":  "; did you mean window_secs?",
		"stratgey":    "; did you mean strategy?",
		"backof":      "; did you mean backoff?",
		"window":      "; did you mean window_secs?",
		"retries":     "",
		"x":           "",
	} {
		if got := Suggest(word, names); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", word, got, want)
		}
	}
	if got := Suggest("ab", map[string]bool{"ac": true, "ad": true}); got != "" {
		t.Errorf("a two-letter word gets %q", got)
	}
	// A swap of two neighbours is one edit: "jbos" is as near "jobs" as
	// "jos" is (it had been two, too many for a four-letter word).
	params := []string{"jobs", "outage", "tick", "seed"}
	for word, want := range map[string]string{"jbos": "; did you mean jobs?", "jos": "; did you mean jobs?", "tikc": "; did you mean tick?", "sede": "; did you mean seed?"} {
		if got := SuggestFrom(word, params); got != want {
			t.Errorf("SuggestFrom(%q) = %q, want %q", word, got, want)
		}
	}
	if d := editDistance("ab", "ba"); d != 1 {
		t.Errorf("editDistance(ab, ba) = %d, want 1", d)
	}
	if d := editDistance("abc", "ca"); d != 3 {
		t.Errorf("editDistance(abc, ca) = %d, want 3 (each letter edited once at most)", d)
	}
}
