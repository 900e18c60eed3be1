package main

import (
	"bytes"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/retrypolicy/retrypolicy/internal/jsondoc"
)

// scanner reads one JSON document from memory, value by value, without the
// generic token stream: decide's requests are small and many, and reading
// them must cost a fraction of deciding on them. It stops at the first
// syntax error; syntaxProblem then words it as encoding/json would, at the
// same byte, so that every subcommand reports bad input alike.
type scanner struct {
	b       []byte
	i       int
	bad     bool // a syntax error was met
	tooDeep bool // the error is nesting beyond maxDepth
}

// maxDepth is the deepest nesting of a request, the request object being
// level 1.
const maxDepth = 16

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// consume skips white space and c, or records a syntax error.
func (s *scanner) consume(c byte) bool {
	if s.peek() != c {
		s.bad = true
		return false
	}
	s.i++
	return true
}

// str reads a string and returns its contents as written, escapes
// included. The contents must be valid escapes and no control characters.
func (s *scanner) str() []byte {
	if !s.consume('"') {
		return nil
	}
	start := s.i
	for s.i < len(s.b) {
		for s.i < len(s.b) && s.b[s.i] >= 0x20 && s.b[s.i] != '"' && s.b[s.i] != '\\' {
			s.i++ // the common bytes, in a tight loop
		}
		if s.i == len(s.b) {
			break
		}
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1]
		case c == '\\':
			if s.i+1 >= len(s.b) {
				s.bad = true
				return nil
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) || !isHex4(s.b[s.i+2:s.i+6]) {
					s.bad = true
					return nil
				}
				s.i += 6
			default:
				s.bad = true
				return nil
			}
		case c < 0x20:
			s.bad = true
			return nil
		default:
			s.i++
		}
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

// number reads a number in JSON's grammar and returns its text.
func (s *scanner) number() []byte {
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
func (s *scanner) digits() bool {
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

// literal reads true, false or null.
func (s *scanner) literal(word string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		s.bad = true
		return false
	}
	s.i += len(word)
	return true
}

// value skips the value that starts here, at nesting depth, and returns
// its text; too deep a nesting is an error of its own (tooDeep).
func (s *scanner) value(depth int) []byte {
	start := s.peekStart()
	switch s.peek() {
	case '"':
		s.str()
	case '{', '[':
		if depth > maxDepth {
			s.bad, s.tooDeep = true, true
			return nil
		}
		open, close := s.b[s.i], byte('}')
		if open == '[' {
			close = ']'
		}
		s.i++
		if s.peek() == close {
			s.i++
			break
		}
		for !s.bad {
			if open == '{' {
				s.str()
				s.consume(':')
			}
			s.value(depth + 1)
			if s.peek() == ',' {
				s.i++
				continue
			}
			s.consume(close)
			break
		}
	case 't':
		s.literal("true")
	case 'f':
		s.literal("false")
	case 'n':
		s.literal("null")
	default:
		s.number()
	}
	if s.bad {
		return nil
	}
	return s.b[start:s.i]
}

// peekStart returns where the next value starts.
func (s *scanner) peekStart() int {
	s.ws()
	return s.i
}

// syntaxProblem words the syntax error in doc as the library does, at the
// byte it names; offset is where doc starts in what the user gave (a
// byte-order mark skipped before it).
func syntaxProblem(doc []byte, offset int) string {
	if p := jsondoc.SyntaxProblem(doc, offset); p != "" {
		return "$: " + p
	}
	return "$: must be valid JSON" // not reached: the scanner and encoding/json agree
}

// unquote decodes a string's contents as written (see str) and calls emit
// with each byte, as encoding/json decodes it but that bytes which are not
// valid UTF-8 pass as they are.
func unquote(raw []byte, emit func(byte)) {
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

// unquoted returns a string's contents decoded, for messages and keys.
func unquoted(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	out := make([]byte, 0, len(raw))
	unquote(raw, func(b byte) { out = append(out, b) })
	return string(out)
}

// rfc3339 reads an RFC 3339 time written as YYYY-MM-DDTHH:MM:SS, an
// optional fraction of up to nine digits, and Z or ±hh:mm, without
// allocating; anything else goes to time.Parse, so that the result is
// always what time.Parse(time.RFC3339Nano, …) would give.
func rfc3339(b []byte) (time.Time, bool) {
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
