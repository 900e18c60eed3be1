package attemptlog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/echo"
	"github.com/retrypolicy/retrypolicy/internal/jsonscan"
)

// LineError is a line of a log that a Reader refuses.
type LineError struct {
	// Line is the line's number, from 1.
	Line int
	// Err says what is wrong, naming the field when one is at fault.
	Err error
}

// Error is "line N: " and what is wrong.
func (e *LineError) Error() string { return "line " + strconv.Itoa(e.Line) + ": " + e.Err.Error() }

// Unwrap returns what is wrong.
func (e *LineError) Unwrap() error { return e.Err }

// Reader reads the attempts of a log one at a time. It holds one line at
// a time, and each job's name once. A Reader is not safe for concurrent
// use.
type Reader struct {
	sc    *bufio.Scanner
	line  int
	names map[string]string // each job's name held once
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader) *Reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine+len("\r\n")) // a line's ending is not counted
	return &Reader{sc: sc, names: map[string]string{}}
}

// Read returns the next attempt, skipping blank lines, or io.EOF after the
// last. Lines are numbered from 1, blank ones counted; a UTF-8 byte order
// mark before the first is skipped. A line longer than MaxLine (not
// counting its ending, LF or CR LF), one that is not a JSON object (or not
// valid JSON anywhere, ignored fields included, nested at most MaxDepth
// levels), one with a missing field, a time that does not parse or is out
// of range, an ended_at before its started_at, or an unknown outcome is a
// *LineError; a failure to read r is returned as it is. Strings are read
// after JSON's escapes are decoded ("fail\u0065d" is failed), and bytes
// that are not UTF-8 read as U+FFFD.
func (r *Reader) Read() (Attempt, error) {
	for r.sc.Scan() {
		r.line++
		line := r.sc.Bytes()
		if r.line == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		if len(line) > MaxLine {
			return Attempt{}, &LineError{Line: r.line, Err: fmt.Errorf("longer than %d bytes", MaxLine)}
		}
		text := bytes.Trim(line, " \t\r\n") // JSON's white space alone, not Unicode's
		if len(text) == 0 {
			continue
		}
		a, err := parseLine(text, r.names)
		if err != nil {
			return Attempt{}, &LineError{Line: r.line, Err: err}
		}
		return a, nil
	}
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Attempt{}, &LineError{Line: r.line + 1, Err: fmt.Errorf("longer than %d bytes", MaxLine)}
		}
		return Attempt{}, err
	}
	return Attempt{}, io.EOF
}

// MaxDepth is the deepest nesting a line may hold, the line's object being
// level 1.
const MaxDepth = 10_000

// fields are the fields of a line, as written (escapes included).
type fields struct {
	job, startedAt, endedAt, outcome, seed []byte
}

// scanLine reads a line's fields, and checks every other value.
func scanLine(text []byte) (fields, error) {
	var f fields
	var sc jsonscan.Scanner
	sc.Reset(text)
	notObject := errors.New("not a JSON object")
	if !sc.Consume('{') {
		return f, notObject
	}
	for more := sc.Peek() != '}'; more; more = sc.Consume(',') {
		k := sc.Str()
		if sc.Bad() || !sc.Consume(':') {
			return f, notObject
		}
		if err := f.read(&sc, plain(k)); err != nil {
			return f, err
		}
		if sc.Bad() {
			return f, notObject
		}
	}
	if !sc.Consume('}') || sc.Peek() != 0 {
		return f, notObject
	}
	return f, nil
}

// read reads the value of the field name into f, or checks and skips it
// when f has no place for it. A field of f that is not a string is an
// error naming it.
func (f *fields) read(sc *jsonscan.Scanner, name []byte) error {
	var into *[]byte
	switch string(name) {
	case "job":
		into = &f.job
	case "started_at":
		into = &f.startedAt
	case "ended_at":
		into = &f.endedAt
	case "outcome":
		into = &f.outcome
	case "jitter_seed":
		f.seed = sc.Checked(MaxDepth - 1)
		return nil
	default:
		sc.Checked(MaxDepth - 1)
		return nil
	}
	if sc.Peek() != '"' {
		if sc.Checked(MaxDepth-1) == nil {
			return errors.New("not a JSON object")
		}
		return errors.New(string(name) + ": must be a string")
	}
	*into = sc.Str()
	return nil
}

// plain returns a string's contents as written with JSON's escapes
// decoded, for comparing: as they are when they hold none, as most do.
func plain(raw []byte) []byte {
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw
	}
	return []byte(jsonscan.Unquoted(raw))
}

// unquoted returns a string's contents as written, decoded: its escapes,
// and each byte that is not UTF-8 as U+FFFD, as encoding/json reads them.
func unquoted(raw []byte) string {
	s := string(raw)
	if bytes.IndexByte(raw, '\\') >= 0 {
		s = jsonscan.Unquoted(raw)
	}
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r) // RuneError for a byte that is not UTF-8
		i += n
	}
	return b.String()
}

// parseLine reads one line, its job's name taken from names when seen.
func parseLine(text []byte, names map[string]string) (Attempt, error) {
	f, err := scanLine(text)
	if err != nil {
		return Attempt{}, err
	}
	for _, m := range []struct {
		name  string
		value []byte
	}{{"job", f.job}, {"started_at", f.startedAt}, {"ended_at", f.endedAt}, {"outcome", f.outcome}} {
		if m.value == nil {
			return Attempt{}, errors.New(m.name + ": missing")
		}
	}
	var a Attempt
	name, seen := names[string(f.job)]
	if !seen {
		name = unquoted(f.job)
		names[string(f.job)] = name
	}
	a.Job = name
	if a.Start, err = parseTime("started_at", f.startedAt); err != nil {
		return Attempt{}, err
	}
	if a.End, err = parseTime("ended_at", f.endedAt); err != nil {
		return Attempt{}, err
	}
	switch outcome := plain(f.outcome); string(outcome) {
	case Succeeded:
		a.Succeeded = true
	case Failed:
	default:
		return Attempt{}, errors.New("outcome: must be succeeded or failed, got " + echo.Quote(unquoted(f.outcome)))
	}
	if a.Seed, a.HasSeed, err = parseSeed(f.seed); err != nil {
		return Attempt{}, err
	}
	return a, a.Check()
}

// parseTime reads an RFC 3339 time of the field name, as written.
func parseTime(name string, raw []byte) (time.Time, error) {
	text := plain(raw)
	t, ok := jsonscan.RFC3339(text)
	if !ok {
		return time.Time{}, errors.New(name + ": must be an RFC 3339 time, got " + echo.Quote(string(text)))
	}
	return t, nil
}

// parseSeed reads a jitter_seed, as written: absent or null, a string or
// an unsigned integer.
func parseSeed(raw []byte) (uint64, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false, nil
	}
	if raw[0] == '"' {
		return retrypolicy.SeedFromString(unquoted(raw[1 : len(raw)-1])), true, nil
	}
	n, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return 0, false, errors.New("jitter_seed: must be a string or an unsigned integer, got " + echo.Quote(string(raw)))
	}
	return n, true, nil
}
