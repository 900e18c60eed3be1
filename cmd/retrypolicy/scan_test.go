package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/retrypolicy/retrypolicy"
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
		got, ok := rfc3339([]byte(text))
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
		s := &scanner{b: []byte(`"` + raw + `"`)}
		contents := s.str()
		require.False(t, s.bad, "%q", raw)
		assert.Equal(t, want, unquoted(contents), "%q", raw)
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
		assert.Equal(t, want, seconds([]byte(text)), "%s", text)
	})
}

// TestScannerAcceptsWhatEncodingJSONAccepts: the request scanner finds a
// document well-formed exactly when encoding/json does (up to the
// scanner's nesting limit).
func TestScannerAcceptsWhatEncodingJSONAccepts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		doc := rapid.SliceOf(rapid.SampledFrom([]byte(`{}[]":,01e.-+tnulfase \a\u`))).Draw(t, "doc")
		s := &scanner{b: doc}
		s.value(1)
		scanned := !s.bad && s.peek() == 0
		if s.tooDeep {
			return
		}
		assert.Equal(t, json.Valid(doc), scanned, "%q", doc)
	})
}

// FuzzDecideRequest: decide never panics; it finds a syntax problem only
// in what encoding/json finds invalid; and every request it accepts gets
// the decision the library makes on the same request read by
// encoding/json.
func FuzzDecideRequest(f *testing.F) {
	for _, seed := range []string{
		`{` + oneFailure + `}`,
		`{"retry_strategy":` + seedBounded + `,` + fourFails + `,"last_uptime_secs":10.5,"jitter_seed":"job-1","now":"2026-11-02T15:00:01Z"}`,
		`{"retry_strategy":{"strategy":"unless_stopped","backoff":{"kind":"exponential_with_jitter"}},"failures":["2026-11-02T15:00:00+01:00"],"last_uptime_secs":1e-3,"jitter_seed":"\u00e9\n","now":"2026-11-02T14:00:30.25Z"}`,
		`{"failures":["2026-11-02T15:00:00Z"],"now":"2026-11-02T15:00:00Z","now":"2026-11-02T15:00:00Z"}`,
		`{"f\u0061ilures":["2026-11-02T15:00:00Z"],"now":null,"retry_strategy":null,"now":"2026-11-02T15:00:00Z"}`,
		"\xef\xbb\xbf{\"failures\":[\"2026-11-02T15:00:00Z\"],\"now\":\"2026-11-02T15:00:00Z\"}",
		`{"failures":["2026-11-02T15:00:00Z"],"now":"2026-11-02T15:00:00Z"`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		d := newDecider()
		out, probs := d.decide(doc, nil)
		body := bytes.TrimPrefix(doc, utf8BOM)
		if probs != nil {
			for _, p := range probs {
				if strings.HasPrefix(p, "$: must be valid JSON") && json.Valid(body) {
					t.Fatalf("%q: a syntax problem in valid JSON: %s", doc, p)
				}
			}
			return
		}
		var req struct {
			Strategy json.RawMessage `json:"retry_strategy"`
			Failures []string        `json:"failures"`
			Uptime   json.Number     `json:"last_uptime_secs"`
			Seed     *string         `json:"jitter_seed"`
			Now      string          `json:"now"`
		}
		require.NoError(t, json.Unmarshal(body, &req), "%q was accepted", doc)
		s := retrypolicy.Default()
		if len(req.Strategy) > 0 && string(req.Strategy) != "null" {
			var err error
			s, err = retrypolicy.Parse(req.Strategy)
			require.NoError(t, err)
		}
		var failures []time.Time
		for _, text := range req.Failures {
			ft, err := time.Parse(time.RFC3339Nano, text)
			require.NoError(t, err)
			failures = append(failures, ft)
		}
		now, err := time.Parse(time.RFC3339Nano, req.Now)
		require.NoError(t, err)
		var uptime time.Duration
		if req.Uptime != "" {
			exact, ok := new(big.Rat).SetString(string(req.Uptime))
			require.True(t, ok)
			ns := new(big.Rat).Mul(exact, big.NewRat(1e9, 1))
			whole := new(big.Int).Quo(ns.Num(), ns.Denom())
			switch {
			case whole.Sign() <= 0:
			case !whole.IsInt64():
				uptime = math.MaxInt64
			default:
				uptime = time.Duration(whole.Int64())
			}
		}
		var seed uint64
		if req.Seed != nil {
			if !utf8.Valid(body) {
				return // encoding/json reads what is not UTF-8 as U+FFFD: a seed of other bytes
			}
			seed = retrypolicy.SeedFromString(*req.Seed)
		}
		want, err := retrypolicy.Decide(s, failures, uptime, seed, now)
		require.NoError(t, err)
		text, err := want.MarshalJSON()
		require.NoError(t, err)
		assert.Equal(t, string(text), string(out), "%q", doc)
	})
}
