// Package jsonscan reads JSON documents held in memory value by value,
// without the generic token stream and without allocating: the request
// reader of the command and the job-metadata reader of the River adapter
// are built on it. It accepts exactly the documents encoding/json accepts
// (up to MaxDepth levels of nesting), decodes strings to the same bytes,
// keeping bytes that are not UTF-8 as they are, and reads RFC 3339 times
// as time.Parse does.
package jsonscan

import (
	"bytes"
	"math"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Scanner reads one JSON document from memory, value by value. It stops
// at the first syntax error and reports it with Bad; the caller words the
// error (package jsondoc does, as encoding/json would, at the same byte).
// The zero Scanner is an empty document; Reset starts another.
type Scanner struct {
	b       []byte
	i       int
	bad     bool // a syntax error was met
	tooDeep bool // the error is nesting beyond MaxDepth
}

// MaxDepth is the deepest nesting Value reads, the outermost value being
// level 1.
const MaxDepth = 16

// Reset starts reading doc.
func (s *Scanner) Reset(doc []byte) { *s = Scanner{b: doc} }

// Bad reports whether a syntax error was met.
func (s *Scanner) Bad() bool { return s.bad }

// TooDeep reports whether the syntax error is nesting beyond MaxDepth.
func (s *Scanner) TooDeep() bool { return s.tooDeep }

// Next skips the byte Peek returned, a structural one ('{', '[', ',').
func (s *Scanner) Next() { s.i++ }

// Fail records a syntax error, for a reader that met one in what it read.
func (s *Scanner) Fail() { s.bad = true }

func (s *Scanner) ws() {
	b, i := s.b, s.i
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	s.i = i
}

// Peek returns the next byte after white space, or 0 at the end.
func (s *Scanner) Peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// Consume skips white space and c, or records a syntax error.
func (s *Scanner) Consume(c byte) bool {
	if s.Peek() != c {
		s.bad = true
		return false
	}
	s.i++
	return true
}

// Str reads a string and returns its contents as written, escapes
// included. The contents must be valid escapes and no control characters.
func (s *Scanner) Str() []byte {
	if !s.Consume('"') {
		return nil
	}
	b, start := s.b, s.i
	for i := start; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			s.i = i + 1
			return b[start:i]
		case c == '\\':
			if i+1 >= len(b) {
				break
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
				continue
			case 'u':
				if i+6 <= len(b) && isHex4(b[i+2:i+6]) {
					i += 6
					continue
				}
			}
		case c >= 0x20:
			i++
			continue
		}
		break // a control character or a bad escape
	}
	s.bad = true
	return nil
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'f') {
			return false
		}
	}
	return true
}

// Number reads a number in JSON's grammar and returns its text.
func (s *Scanner) Number() []byte {
	s.ws()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.i < len(s.b) && s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		s.bad = true
		return nil
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		if s.i++; !s.digits() {
			return nil
		}
	}
	if s.i < len(s.b) && s.b[s.i]|0x20 == 'e' {
		if s.i++; s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			return nil
		}
	}
	return s.b[start:s.i]
}

// digits reads one digit or more.
func (s *Scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	if s.i == start {
		s.bad = true
		return false
	}
	return true
}

// Literal reads true, false or null.
func (s *Scanner) Literal(word string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		s.bad = true
		return false
	}
	s.i += len(word)
	return true
}

// Value skips the value that starts here, at nesting depth, and returns
// its text; too deep a nesting is an error of its own (tooDeep).
func (s *Scanner) Value(depth int) []byte {
	start := s.peekStart()
	switch s.Peek() {
	case '"':
		s.Str()
	case '{', '[':
		if depth > MaxDepth {
			s.bad, s.tooDeep = true, true
			return nil
		}
		open, close := s.b[s.i], byte('}')
		if open == '[' {
			close = ']'
		}
		s.i++
		if s.Peek() == close {
			s.i++
			break
		}
		for !s.bad {
			if open == '{' {
				s.Str()
				s.Consume(':')
			}
			s.Value(depth + 1)
			if s.Peek() == ',' {
				s.i++
				continue
			}
			s.Consume(close)
			break
		}
	case 't':
		s.Literal("true")
	case 'f':
		s.Literal("false")
	case 'n':
		s.Literal("null")
	default:
		s.Number()
	}
	if s.bad {
		return nil
	}
	return s.b[start:s.i]
}

// peekStart returns where the next value starts.
func (s *Scanner) peekStart() int {
	s.ws()
	return s.i
}

// Unquote decodes a string's contents as Str returns them and calls emit
// with each byte, as encoding/json decodes it but that bytes which are not
// valid UTF-8 pass as they are.
func Unquote(raw []byte, emit func(byte)) {
	var rbuf [utf8.UTFMax]byte
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			emit(c)
			i++
			continue
		}
		switch e := raw[i+1]; e {
		case 'u':
			r := hex4(raw[i+2 : i+6])
			i += 6
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					r2 = hex4(raw[i+2 : i+6])
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			for _, b := range rbuf[:utf8.EncodeRune(rbuf[:], r)] {
				emit(b)
			}
			continue
		case 'b':
			emit('\b')
		case 'f':
			emit('\f')
		case 'n':
			emit('\n')
		case 'r':
			emit('\r')
		case 't':
			emit('\t')
		default: // '"', '\\', '/'
			emit(e)
		}
		i += 2
	}
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c <= '9':
			r |= rune(c - '0')
		default:
			r |= rune(c|0x20-'a') + 10
		}
	}
	return r
}

// Unquoted returns a string's contents decoded, for messages and keys.
func Unquoted(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	out := make([]byte, 0, len(raw))
	Unquote(raw, func(b byte) { out = append(out, b) })
	return string(out)
}

// RFC3339 reads an RFC 3339 time written as YYYY-MM-DDTHH:MM:SS, an
// optional fraction of up to nine digits, and Z or ±hh:mm, without
// allocating; anything else goes to time.Parse, so that the result is
// always what time.Parse(time.RFC3339Nano, …) would give.
func RFC3339(b []byte) (time.Time, bool) {
	if t, ok := rfc3339Fast(b); ok {
		return t, true
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	return t, err == nil
}

func rfc3339Fast(b []byte) (time.Time, bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return time.Time{}, false
	}
	year, ok1 := num(b[0:4])
	month, ok2 := num(b[5:7])
	day, ok3 := num(b[8:10])
	hour, ok4 := num(b[11:13])
	minute, ok5 := num(b[14:16])
	sec, ok6 := num(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || month < 1 || month > 12 || day < 1 ||
		day > daysIn(month, year) || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	rest, nsec := b[19:], 0
	if rest[0] == '.' {
		n := 1
		for n < len(rest) && n <= 9 && rest[n] >= '0' && rest[n] <= '9' {
			nsec = nsec*10 + int(rest[n]-'0')
			n++
		}
		if n == 1 || n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			return time.Time{}, false // no digit, or more than nine
		}
		for k := n; k <= 9; k++ {
			nsec *= 10
		}
		rest = rest[n:]
	}
	offset := 0
	switch {
	case len(rest) == 1 && rest[0] == 'Z':
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, okh := num(rest[1:3])
		om, okm := num(rest[4:6])
		if !okh || !okm || oh > 23 || om > 59 {
			return time.Time{}, false
		}
		if offset = oh*3600 + om*60; rest[0] == '-' {
			offset = -offset
		}
	default:
		return time.Time{}, false
	}
	days := daysFromCivil(year, month, day)
	unix := int64(days)*86400 + int64(hour*3600+minute*60+sec-offset)
	return time.Unix(unix, int64(nsec)).UTC(), true
}

// num reads a run of decimal digits.
func num(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the days from 1970-01-01 to a date of the
// proleptic Gregorian calendar.
func daysFromCivil(y, m, d int) int {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// Seconds reads a number of seconds in JSON's grammar (as Number returns
// it) exactly, as a Duration: digits past the nanosecond are dropped, a
// negative number is zero, and one past the longest Duration saturates.
func Seconds(n []byte) time.Duration {
	if len(n) == 0 || n[0] == '-' {
		return 0
	}
	// n = digits × 10^(exp - fraction digits); in nanoseconds, 9 more.
	var u uint64 // the significant digits read, up to 19 of them
	count, shift := 0, int64(9)
	i, fraction := 0, false
	for ; i < len(n) && n[i]|0x20 != 'e'; i++ {
		if n[i] == '.' {
			fraction = true
			continue
		}
		if fraction {
			shift--
		}
		switch {
		case count == 0 && n[i] == '0':
			// a leading zero adds nothing
		case count < 19:
			u = u*10 + uint64(n[i]-'0')
			count++
		default: // past 19 digits: the value's scale grows, its digits do not matter
			shift++
		}
	}
	if i < len(n) {
		shift += exponent(n[i+1:])
	}
	for ; shift < 0 && u > 0; shift++ {
		u /= 10 // drop what is finer than a nanosecond
	}
	for ; shift > 0 && u > 0; shift-- {
		if u > math.MaxInt64/10 {
			return math.MaxInt64
		}
		u *= 10
	}
	if u > math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(u)
}

// exponent reads an exponent's optionally signed digits, saturating far
// past any that matters.
func exponent(b []byte) int64 {
	neg := len(b) > 0 && b[0] == '-'
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		b = b[1:]
	}
	var e int64
	for _, c := range b {
		if e < 1<<40 {
			e = e*10 + int64(c-'0')
		}
	}
	if neg {
		return -e
	}
	return e
}
