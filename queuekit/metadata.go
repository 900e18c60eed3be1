package queuekit

import (
	"bytes"
	"encoding/base64"
	"strconv"

	"github.com/retrypolicy/retrypolicy/internal/histcode"
	"github.com/retrypolicy/retrypolicy/internal/jsonscan"
)

// NotObject is Metadata.Problem for metadata that is not a JSON object.
const NotObject = "metadata must be a JSON object"

// Metadata is what ReadMetadata reads from a job's JSON metadata: the
// job's own strategy and the adapter's record of it.
type Metadata struct {
	// Strategy is the raw JSON value of the job's own strategy, nil when
	// absent or null. It is not checked: Policies.Own does that.
	Strategy []byte
	// Seen is the record's last attempt seen, when HasRecord.
	Seen int
	// HasRecord reports whether the metadata holds a readable record.
	HasRecord bool
	// Problem says what makes the metadata, or its record, unreadable: ""
	// when nothing does, NotObject when the metadata is not a JSON object.
	// A record that is not readable is as none.
	Problem string

	failures []byte // the record's failures as written
}

// ReadMetadata reads a job's strategy (under strategyKey) and its record
// (under recordKey) from its metadata, a JSON object, and skips every
// other value, however deep; null under either key is none. It stops
// reading once it has both. Empty metadata holds neither.
//
// A record is {"seen_attempt": whole number, "history": string}, as
// Record.AppendJSON writes it; its other members are skipped.
func ReadMetadata(metadata []byte, strategyKey, recordKey string) (m Metadata) {
	if len(bytes.TrimSpace(metadata)) == 0 {
		return m
	}
	var s jsonscan.Scanner
	s.Reset(metadata)
	haveStrategy, haveRecord := false, false
	for key, more := firstKey(&s); more && !(haveStrategy && haveRecord); key, more = nextKey(&s) {
		switch {
		case keyIs(key, strategyKey):
			haveStrategy = true
			if s.Peek() == 'n' {
				s.Literal("null")
			} else {
				m.Strategy = s.Skip()
			}
		case keyIs(key, recordKey):
			haveRecord = true
			m = readRecord(&s, m, recordKey)
		default:
			s.Skip()
		}
	}
	if s.Bad() {
		return Metadata{Problem: NotObject}
	}
	return m
}

// readRecord reads a record; null is no record.
func readRecord(s *jsonscan.Scanner, m Metadata, recordKey string) Metadata {
	shape := func() string {
		return `its "` + recordKey + `" record is not {"seen_attempt": whole number, "history": string}`
	}
	if s.Peek() == 'n' {
		s.Literal("null")
		return m
	}
	if s.Peek() != '{' {
		s.Skip()
		m.Problem = shape()
		return m
	}
	haveSeen := false
	for key, more := firstKey(s); more; key, more = nextKey(s) {
		if keyIs(key, "seen_attempt") && s.Peek() != '"' {
			n := s.Number()
			m.Seen, haveSeen = attemptNumber(n)
			if !haveSeen && n != nil {
				m.Problem = shape()
			}
			continue
		}
		if keyIs(key, "history") && s.Peek() == '"' {
			m.failures = stringContents(s)
			continue
		}
		s.Skip()
	}
	if !haveSeen || m.failures == nil {
		m.Problem, m.failures = shape(), nil
	}
	m.HasRecord = m.Problem == ""
	return m
}

// Failures returns the record's failures, ascending Unix nanoseconds, in
// room[:0] (allocating only when it is too small): the newest limit of
// them, with more true when it holds more; ok is false when they are not
// a list of failure instants.
func (m Metadata) Failures(room []int64, limit int) (failures []int64, more, ok bool) {
	if !m.HasRecord {
		return room[:0], false, true
	}
	var buf [512]byte
	bin := buf[:0]
	if n := base64.RawURLEncoding.DecodedLen(len(m.failures)); n > len(buf) {
		bin = make([]byte, 0, n)
	}
	bin, err := base64.RawURLEncoding.AppendDecode(bin, m.failures)
	if err != nil {
		return room[:0], false, false
	}
	ns, _, err := histcode.Decode(bin, room)
	if err != nil {
		return room[:0], false, false
	}
	if len(ns) > limit {
		return ns[len(ns)-limit:], true, true
	}
	return ns, false, true
}

// stringContents reads a string whose contents need no decoding: it finds
// the closing quote and leaves checking the characters to the decoder of
// what it holds, which refuses any outside its alphabet, escapes included.
func stringContents(s *jsonscan.Scanner) []byte {
	rest := s.Rest()
	end := bytes.IndexByte(rest[1:], '"')
	if end < 0 {
		s.Fail()
		return nil
	}
	s.Advance(end + 2)
	return rest[1 : end+1]
}

// firstKey reads an object's '{' and its first key and ':'; false for an
// empty object or a syntax error.
func firstKey(s *jsonscan.Scanner) ([]byte, bool) {
	if !s.Consume('{') {
		return nil, false
	}
	if s.Peek() == '}' {
		s.Next()
		return nil, false
	}
	return key(s)
}

// nextKey reads the ',' and the next key and ':', or the closing '}' and
// returns false.
func nextKey(s *jsonscan.Scanner) ([]byte, bool) {
	if s.Peek() != ',' {
		s.Consume('}')
		return nil, false
	}
	s.Next()
	return key(s)
}

func key(s *jsonscan.Scanner) ([]byte, bool) {
	k := s.Str()
	return k, s.Consume(':') && !s.Bad()
}

// keyIs reports whether a key as written (escapes undecoded) is name.
func keyIs(raw []byte, name string) bool {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw) == name
	}
	return jsonscan.Unquoted(raw) == name
}

// attemptNumber reads a whole number of at least 0 that fits an int32.
func attemptNumber(n []byte) (int, bool) {
	if len(n) == 0 || len(n) > 10 {
		return 0, false
	}
	v, err := strconv.ParseInt(string(n), 10, 32)
	return int(v), err == nil && v >= 0
}
