package retrypolicy

import (
	"math"
	"strconv"
	"strings"

	"github.com/retrypolicy/retrypolicy/internal/jsonscan"
)

// numStatus is how reading a number went.
type numStatus uint8

const (
	numOK       numStatus = iota
	numSyntax             // not a number in JSON's grammar
	numFraction           // a number, but not whole (after scaling)
	numOverflow           // whole, but outside int64
)

// decimalInt reads a JSON number exactly as an integer: a whole number in any
// form (5, 5.0, 5e0, 50e-1) is read; 5.5 is a fraction. It never rounds.
func decimalInt(s string) (int64, numStatus) { return decimalScaled(s, 0) }

// decimalScaled reads a JSON number exactly as value × 10^scale, which must
// be whole and within int64: decimalScaled("1.5", 9) is 1500000000.
func decimalScaled(s string, scale int) (int64, numStatus) {
	if !isJSONNumber(s) {
		return 0, numSyntax
	}
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	mant, exp := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp = s[:i], s[i+1:]
	}
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	// value × 10^scale = digits × 10^e
	e := parseExponent(exp) + int64(scale) - int64(len(frac))
	trimmed := strings.TrimRight(digits, "0")
	e += int64(len(digits) - len(trimmed))
	digits = trimmed
	switch {
	case digits == "":
		return 0, numOK
	case e < 0:
		return 0, numFraction
	case int64(len(digits))+e > 19:
		return 0, numOverflow
	}
	var u uint64
	for i := 0; i < len(digits); i++ {
		u = u*10 + uint64(digits[i]-'0')
	}
	for ; e > 0; e-- {
		u *= 10 // at most 19 digits in all: below 10^19 < 2^64
	}
	switch {
	case !neg && u <= math.MaxInt64:
		return int64(u), numOK
	case neg && u <= 1<<63:
		return -int64(u-1) - 1, numOK
	}
	return 0, numOverflow
}

// parseExponent reads an optionally signed run of digits, saturating far
// beyond any exponent that could matter.
func parseExponent(s string) int64 {
	if s == "" {
		return 0
	}
	neg := s[0] == '-'
	if s[0] == '-' || s[0] == '+' {
		s = s[1:]
	}
	var e int64
	for i := 0; i < len(s); i++ {
		if e < 1<<40 {
			e = e*10 + int64(s[i]-'0')
		}
	}
	if neg {
		return -e
	}
	return e
}

// isJSONNumber reports whether s is a number in JSON's grammar.
func isJSONNumber(s string) bool { return jsonscan.NumberEnd(s) == len(s) }

// formatMultiplier writes a multiplier as the descriptor does: the shortest
// decimal that reads back the same float64, always with a decimal point or
// an exponent (2.0, 1.5, 1e+300).
func formatMultiplier(m float64) string { return string(appendMultiplier(nil, m)) }

func appendMultiplier(b []byte, m float64) []byte {
	start := len(b)
	b = strconv.AppendFloat(b, m, 'g', -1, 64)
	for _, c := range b[start:] {
		if c == '.' || c == 'e' || c == 'n' || c == 'N' { // NaN and Inf stay as they are
			return b
		}
	}
	return append(b, '.', '0')
}
