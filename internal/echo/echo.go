// Package echo writes a piece of untrusted input into an error message
// safely: quoted, with everything that could forge a second line or drive
// a terminal escaped, and cut to a bounded length.
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
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteString(hex2(s[i]))
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
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
	if cut {
		b.WriteString("…")
	}
	return b.String()
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
