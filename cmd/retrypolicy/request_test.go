package main

import (
	"encoding/json"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/front/report"
	"github.com/retrypolicy/retrypolicy/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
		d := report.NewDecider()
		out, probs := d.Decide(doc, nil)
		body, _ := wire.TrimBOM(doc)
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
