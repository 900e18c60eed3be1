// Package jsonscan reads JSON documents held in memory, value by value,
// without allocating.
//
// It skips the generic token stream: the request reader of the command and
// the job-metadata reader of the River adapter are built on it. It accepts exactly the documents encoding/json accepts
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

// Rest returns what is left to read, from the next byte after white
// space, for a reader that reads a value of its own format itself.
func (s *Scanner) Rest() []byte {
	s.ws()
	return s.b[s.i:]
}

// Advance skips n bytes of Rest.
func (s *Scanner) Advance(n int) { s.i += n }

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
	n := NumberEnd(s.b[s.i:])
	if n < 0 {
		s.bad = true
		return nil
	}
	s.i += n
	return s.b[s.i-n : s.i]
}

// NumberEnd returns the length of the number in JSON's grammar at the
// start of b, -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, or -1 when
// b does not start with one.
func NumberEnd[T string | []byte](b T) int {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digitsEnd(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if i = digitsEnd(b, i+1); b[i-1] == '.' {
			return -1 // no digit after the point
		}
	}
	if i < len(b) && b[i]|0x20 == 'e' {
		return exponentEnd(b, i+1)
	}
	return i
}

// exponentEnd returns the end of an exponent's sign and digits from i, or
// -1 when there is no digit.
func exponentEnd[T string | []byte](b T, i int) int {
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		i++
	}
	if j := digitsEnd(b, i); j > i {
		return j
	}
	return -1
}

// digitsEnd returns the end of the run of digits from i.
func digitsEnd[T string | []byte](b T, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
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
	default:
		s.scalar()
	}
	if s.bad {
		return nil
	}
	return s.b[start:s.i]
}

// Checked skips the value that starts here, checking its syntax in full,
// nested to at most maxDepth levels, and returns its text, or nil after a
// syntax error (tooDeep for nesting past maxDepth). It keeps a byte for
// each level open, not a call: a deep value costs no stack.
func (s *Scanner) Checked(maxDepth int) []byte {
	start := s.peekStart()
	var closers []byte // of the containers open, innermost last
	for !s.bad {
		if c := s.Peek(); c == '{' || c == '[' {
			if len(closers) >= maxDepth {
				s.bad, s.tooDeep = true, true
				return nil
			}
			s.i++
			closer := byte(']')
			if c == '{' {
				closer = '}'
			}
			if s.Peek() != closer {
				closers = append(closers, closer)
				s.member(closer)
				continue // the container's first value
			}
			s.i++
		} else {
			s.scalarOrString()
		}
		// After a value: the containers it closes, then the next member.
		for !s.bad && len(closers) > 0 {
			closer := closers[len(closers)-1]
			if s.Peek() == ',' {
				s.i++
				s.member(closer)
				break
			}
			s.Consume(closer)
			closers = closers[:len(closers)-1]
		}
		if len(closers) == 0 {
			break
		}
	}
	if s.bad {
		return nil
	}
	return s.b[start:s.i]
}

// member reads an object member's key and ':' when the container is an
// object (its closer '}'); nothing in an array.
func (s *Scanner) member(closer byte) {
	if closer == '}' {
		s.Str()
		s.Consume(':')
	}
}

// scalarOrString reads a string, a number or a literal.
func (s *Scanner) scalarOrString() {
	if s.Peek() == '"' {
		s.Str()
		return
	}
	s.scalar()
}

// Skip skips the value that starts here, nested to any depth, and returns
// its text, or nil after a syntax error. Scalars are checked; objects and
// arrays are only read to their matching bracket, outside strings, so that
// {"a" "b"] passes: Skip is for documents whose syntax something else
// vouches for, such as a job's metadata that the database keeps as JSON.
func (s *Scanner) Skip() []byte {
	start := s.peekStart()
	switch s.Peek() {
	case '"':
		s.Str()
	case '{', '[':
		s.i = containerEnd(s.b, s.i)
		s.bad = s.i < 0
	default:
		s.scalar()
	}
	if s.bad {
		s.i = max(s.i, 0)
		return nil
	}
	return s.b[start:s.i]
}

// containerEnd returns the index just past the object or array that
// starts at b[i], or -1 when b ends first.
func containerEnd(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
		case '"':
			if i = stringEnd(b, i+1); i < 0 {
				return -1
			}
		}
	}
	return -1
}

// stringEnd returns the index of the quote that closes the string whose
// contents start at b[i], or -1: the first quote not escaped, that is not
// after an odd run of backslashes.
func stringEnd(b []byte, i int) int {
	for {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return -1
		}
		end := i + q
		slashes := 0
		for j := end - 1; j >= i && b[j] == '\\'; j-- {
			slashes++
		}
		if slashes%2 == 0 {
			return end
		}
		i = end + 1
	}
}

// scalar reads a number or a literal.
func (s *Scanner) scalar() {
	switch s.Peek() {
	case 't':
		s.Literal("true")
	case 'f':
		s.Literal("false")
	case 'n':
		s.Literal("null")
	default:
		s.Number()
	}
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
	unix, ok := civilSeconds(b)
	if !ok {
		return time.Time{}, false
	}
	nsec, rest, ok := fraction(b[19:])
	if !ok {
		return time.Time{}, false
	}
	offset, ok := zoneOffset(rest)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(unix-int64(offset), int64(nsec)).UTC(), true
}

// civilLayout is the date and time of day that start an RFC 3339 time:
// d a digit, anything else itself.
const civilLayout = "dddd-dd-ddTdd:dd:dd"

// civilSeconds reads the date and time of day at the start of an RFC 3339
// time as seconds since 1970 in its own offset.
func civilSeconds(b []byte) (int64, bool) {
	if len(b) < 20 {
		return 0, false
	}
	var v [6]int // year, month, day, hour, minute, second
	f := 0
	for i := range len(civilLayout) {
		switch c := b[i]; {
		case civilLayout[i] != 'd' && c == civilLayout[i]:
			f++
		case civilLayout[i] != 'd' || !isDigit(c):
			return 0, false
		default:
			v[f] = v[f]*10 + int(c-'0')
		}
	}
	year, month, day := v[0], v[1], v[2]
	if month < 1 || month > 12 || day < 1 || day > daysIn(month, year) || v[3] > 23 || v[4] > 59 || v[5] > 59 {
		return 0, false
	}
	return int64(daysFromCivil(year, month, day))*86400 + int64(v[3]*3600+v[4]*60+v[5]), true
}

// fraction reads an optional fraction of a second, "." and one to nine
// digits, as nanoseconds, and returns what follows it.
func fraction(rest []byte) (nsec int, after []byte, ok bool) {
	if rest[0] != '.' {
		return 0, rest, true
	}
	n := 1
	for n < len(rest) && n <= 9 && isDigit(rest[n]) {
		nsec = nsec*10 + int(rest[n]-'0')
		n++
	}
	if n == 1 || n < len(rest) && isDigit(rest[n]) {
		return 0, nil, false // no digit, or more than nine
	}
	for k := n; k <= 9; k++ {
		nsec *= 10
	}
	return nsec, rest[n:], true
}

// zoneOffset reads what ends an RFC 3339 time, Z or ±HH:MM, as seconds
// east of UTC.
func zoneOffset(rest []byte) (int, bool) {
	switch {
	case len(rest) == 1 && rest[0] == 'Z':
		return 0, true
	case len(rest) != 6 || rest[0] != '+' && rest[0] != '-' || rest[3] != ':':
		return 0, false
	}
	oh, okh := num(rest[1:3])
	om, okm := num(rest[4:6])
	if !okh || !okm || oh > 23 || om > 59 {
		return 0, false
	}
	if rest[0] == '-' {
		return -(oh*3600 + om*60), true
	}
	return oh*3600 + om*60, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

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
	u, shift := significand(n)
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

// significand returns the first 19 significant digits of the number n and
// the power of ten that scales them to nanoseconds: n is u × 10^(shift-9).
func significand(n []byte) (u uint64, shift int64) {
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
	return u, shift
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
