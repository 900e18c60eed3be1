// Package echo writes untrusted input into an error message safely.
//
// The input is quoted, with everything that could forge a second line or
// drive a terminal escaped, and cut to a bounded length.
package echo

import (
	"strings"
	"unicode/utf8"
)

// Max is the most bytes of an input that a message repeats.
const Max = 64

// Quote returns s quoted for a message: at most Max bytes of it, cut on a
// rune boundary and marked with "…", with quotes, backslashes, control
// characters (C0, DEL and C1, ANSI escapes among them), the line and
// paragraph separators and invalid UTF-8 escaped as JSON and Go write them
// (\n, \u001b, \x9b for a stray byte).
func Quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	cut := len(s) > Max
	if cut {
		i := Max
		for j := 0; j < utf8.UTFMax && i > 0 && !utf8.RuneStart(s[i]); j++ {
			i-- // back to the start of the rune the limit splits
		}
		s = s[:i]
	}
	for i := 0; i < len(s); {
		i += writeEscaped(&b, s[i:])
	}
	b.WriteByte('"')
	if cut {
		b.WriteString("…")
	}
	return b.String()
}

// writeEscaped writes the first rune of s, escaped if it must be, and
// returns its length in s.
// Escape returns s with every character Quote escapes escaped as Quote
// escapes it, whole and without quotes: text from outside printed on its
// own (a line of a listing, a field of a record) cannot drive a terminal
// or forge a line.
func Escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		i += writeEscaped(&b, s[i:])
	}
	return b.String()
}

// JSON returns the JSON text j with DEL, the C1 controls, U+2028 and
// U+2029, which encoding/json leaves as they are, escaped as \u escapes
// (C0 it escapes already): the same values, decoded, and no character a
// terminal acts on. Outside strings j holds none of them.
func JSON(j []byte) []byte {
	out := make([]byte, 0, len(j))
	for i := 0; i < len(j); {
		r, size := utf8.DecodeRune(j[i:])
		if r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 {
			out = append(out, `\u`+hex2(byte(r>>8))+hex2(byte(r))...)
		} else {
			out = append(out, j[i:i+size]...)
		}
		i += size
	}
	return out
}

func writeEscaped(b *strings.Builder, s string) int {
	r, size := utf8.DecodeRuneInString(s)
	switch {
	case r == utf8.RuneError && size == 1:
		b.WriteString(`\x`)
		b.WriteString(hex2(s[0]))
	case r == '"' || r == '\\':
		b.WriteByte('\\')
		b.WriteRune(r)
	case r == '\n':
		b.WriteString(`\n`)
	case r == '\r':
		b.WriteString(`\r`)
	case r == '\t':
		b.WriteString(`\t`)
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029:
		b.WriteString(`\u`)
		b.WriteString(hex2(byte(r >> 8)))
		b.WriteString(hex2(byte(r)))
	default:
		b.WriteString(s[:size])
	}
	return size
}

// Text returns s as it is when it is plain (letters, digits, _ and -, at
// most Max bytes), quoted otherwise: for a name, such as a JSON key, that
// reads better bare.
func Text(s string) string {
	if s == "" || len(s) > Max {
		return Quote(s)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c == '_' || c == '-' || c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'z') {
			return Quote(s)
		}
	}
	return s
}

// Number returns the text of a number as written, cut to Max bytes: a
// number needs no escaping but may be long.
func Number(s string) string {
	if len(s) > Max {
		return s[:Max] + "…"
	}
	return s
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&15]})
}

// Suggest returns "; did you mean NAME?" for the key of names nearest to
// word, when one is close enough to be a slip (at most two edits, and
// fewer than half of word's letters, or a name that starts with a word of
// four letters or more: base_delay for base_delay_secs), else "". Ties go
// to the name first in lexical order, so that the answer is the same on
// every run.
func Suggest[V any](word string, names map[string]V) string {
	keys := make([]string, 0, len(names))
	for name := range names {
		keys = append(keys, name)
	}
	return SuggestFrom(word, keys)
}

// SuggestFrom is Suggest for a list of names.
func SuggestFrom(word string, names []string) string {
	best, bestDist := "", 3
	for _, name := range names {
		d := editDistance(word, name)
		if len(word) >= 4 && strings.HasPrefix(name, word) {
			d = 1
		}
		if d < bestDist || d == bestDist && name < best {
			best, bestDist = name, d
		}
	}
	if best == "" || 2*bestDist >= len(word) {
		return ""
	}
	return "; did you mean " + best + "?"
}

// editDistance is the optimal string alignment distance of a and b, bytes
// apart: Levenshtein's, with a swap of two neighbours counted as one edit,
// so that "jbos" is as near "jobs" as "jos" is.
func editDistance(a, b string) int {
	var before []int // the row of i-2
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], before[j-2]+1)
			}
		}
		before, prev = prev, cur
	}
	return prev[len(b)]
}
