package jsonscan

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestRFC3339ReadsAsTimeParseDoes: the fast reader and time.Parse with
// time.RFC3339Nano accept the same texts and read the same instants, for
// well-formed times and for near misses alike.
func TestRFC3339ReadsAsTimeParseDoes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var text string
		if rapid.Bool().Draw(t, "well-formed") {
			frac := ""
			if digits := rapid.IntRange(0, 10).Draw(t, "fraction digits"); digits > 0 {
				frac = "." + strings.Repeat("0", digits-1) + fmt.Sprint(rapid.IntRange(0, 9).Draw(t, "last digit"))
			}
			zone := rapid.SampledFrom([]string{"Z", "z", "+00:00", "-00:00", "+05:30", "-11:59", "+23:59", "+24:00", "+1:00", "+0100"}).Draw(t, "zone")
			text = fmt.Sprintf("%04d-%02d-%02dT%02d:%02d:%02d%s%s",
				rapid.IntRange(0, 9999).Draw(t, "year"), rapid.IntRange(0, 13).Draw(t, "month"), rapid.IntRange(0, 32).Draw(t, "day"),
				rapid.IntRange(0, 24).Draw(t, "hour"), rapid.IntRange(0, 60).Draw(t, "minute"), rapid.IntRange(0, 60).Draw(t, "second"), frac, zone)
			if rapid.Bool().Draw(t, "lower-case t") {
				text = strings.Replace(text, "T", "t", 1)
			}
		} else {
			text = rapid.StringOf(rapid.RuneFrom([]rune("0123456789-:TZ.+ t"))).Draw(t, "text")
		}
		got, ok := RFC3339([]byte(text))
		want, err := time.Parse(time.RFC3339Nano, text)
		require.Equal(t, err == nil, ok, "%q: time.Parse says %v", text, err)
		if ok {
			assert.True(t, got.Equal(want), "%q: read %v, time.Parse reads %v", text, got, want)
		}
	})
}

// TestUnquoteDecodesAsEncodingJSON: a string's contents, escapes and
// surrogate pairs (lone ones too) included, decode to the bytes
// encoding/json gives, for valid UTF-8.
func TestUnquoteDecodesAsEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pieces := rapid.SliceOf(rapid.OneOf(
			rapid.StringMatching(`[a-z é€😀]{1,3}`),
			rapid.SampledFrom([]string{`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`}),
			rapid.Custom(func(t *rapid.T) string {
				return fmt.Sprintf(`\u%04X`, rapid.IntRange(0, 0xFFFF).Draw(t, "unit"))
			}),
			rapid.Custom(func(t *rapid.T) string {
				return fmt.Sprintf(`\ud%03x\udc%02x`, rapid.IntRange(0x800, 0xbff).Draw(t, "high"), rapid.IntRange(0, 255).Draw(t, "low"))
			}),
		)).Draw(t, "pieces")
		raw := strings.Join(pieces, "")
		var want string
		require.NoError(t, json.Unmarshal([]byte(`"`+raw+`"`), &want))
		var s Scanner
		s.Reset([]byte(`"` + raw + `"`))
		contents := s.Str()
		require.False(t, s.Bad(), "%q", raw)
		assert.Equal(t, want, Unquoted(contents), "%q", raw)
	})
}

// TestSecondsTruncatesToTheNanosecond: a number of seconds reads as the
// exact value in nanoseconds, truncated toward zero, zero when negative,
// saturating past the longest Duration, in every form JSON writes numbers.
func TestSecondsTruncatesToTheNanosecond(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := rapid.StringMatching(`-?(0|[1-9][0-9]{0,24})(\.[0-9]{1,25})?([eE][+-]?[0-9]{1,3})?`).Draw(t, "number")
		exact, ok := new(big.Rat).SetString(text)
		require.True(t, ok)
		ns := new(big.Int).Quo(new(big.Rat).Mul(exact, big.NewRat(1e9, 1)).Num(), new(big.Rat).Mul(exact, big.NewRat(1e9, 1)).Denom())
		var want time.Duration
		switch {
		case ns.Sign() <= 0:
			want = 0
		case !ns.IsInt64():
			want = math.MaxInt64
		default:
			want = time.Duration(ns.Int64())
		}
		assert.Equal(t, want, Seconds([]byte(text)), "%s", text)
	})
}

// TestScannerAcceptsWhatEncodingJSONAccepts: the request scanner finds a
// document well-formed exactly when encoding/json does (up to the
// scanner's nesting limit).
func TestScannerAcceptsWhatEncodingJSONAccepts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		doc := rapid.SliceOf(rapid.SampledFrom([]byte(`{}[]":,01e.-+tnulfase \a\u`))).Draw(t, "doc")
		var s Scanner
		s.Reset(doc)
		s.Value(1)
		scanned := !s.Bad() && s.Peek() == 0
		if s.TooDeep() {
			return
		}
		assert.Equal(t, json.Valid(doc), scanned, "%q", doc)
	})
}

// TestSkipAnyDepth: Skip passes over a value nested far deeper than
// MaxDepth, and over every kind of scalar, brackets and escaped quotes
// inside strings included, stopping right after it.
func TestSkipAnyDepth(t *testing.T) {
	deep := strings.Repeat(`{"k":[`, 500) + `"x\"]}"` + strings.Repeat(`]}`, 500)
	for _, v := range []string{deep, `"s"`, `12.5e3`, `true`, `null`, `{}`, `[]`, `{"a":{"b":[1,{"c":null}]}}`, `["]\"", "\\"]`} {
		var s Scanner
		s.Reset([]byte(v + ` , "next"`))
		if got := s.Skip(); s.Bad() || string(got) != v || s.Peek() != ',' {
			t.Errorf("Skip(%.40s): bad %v, stopped before %q", v, s.Bad(), s.b[s.i:])
		}
	}
	for _, v := range []string{`{"a":`, `[1,2`, `"open`, `tru`, `]`, `,`, `{"a":"}`, `["\"]`} {
		var s Scanner
		s.Reset([]byte(v))
		s.Skip()
		if !s.Bad() {
			t.Errorf("Skip(%s) passed a truncated value", v)
		}
	}
}

// TestCheckedAgreesWithEncodingJSON: Checked takes a document exactly
// when encoding/json.Valid does (nesting within the limit), on documents
// built from JSON's pieces, valid and broken alike.
func TestCheckedAgreesWithEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pieces := rapid.SliceOfN(rapid.SampledFrom([]string{
			"{", "}", "[", "]", ",", ":", `"a"`, `"\u00e9"`, `"\x"`, "1", "-0.5e3", "01", "true", "nul", " ",
		}), 0, 30).Draw(t, "pieces")
		doc := []byte(strings.Join(pieces, ""))
		var s Scanner
		s.Reset(doc)
		got := s.Checked(10000) != nil && s.Peek() == 0
		if want := json.Valid(doc); got != want {
			t.Fatalf("%q: Checked %v, encoding/json %v", doc, got, want)
		}
	})
}

// TestCheckedTakesDeepNesting: 10,000 levels are read without recursion,
// and one more is too deep.
func TestCheckedTakesDeepNesting(t *testing.T) {
	deep := strings.Repeat(`{"k":[`, 5000) + "1" + strings.Repeat(`]}`, 5000)
	var s Scanner
	s.Reset([]byte(deep))
	if s.Checked(10000) == nil {
		t.Fatal("10,000 levels refused")
	}
	s.Reset([]byte("[" + deep + "]"))
	if s.Checked(10000) != nil || !s.TooDeep() {
		t.Fatal("10,001 levels taken")
	}
}
