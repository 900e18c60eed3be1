package riverretry

import (
	"bytes"
	"math/bits"
	"strconv"
	"time"

	"github.com/retrypolicy/retrypolicy/internal/jsonscan"
	"github.com/riverqueue/river/rivertype"
)

// MaxClockSkew is how far the clocks of a queue's clients may disagree. A
// failure instant in a job's record up to MaxClockSkew after the reading
// client's clock (or after the job's current attempt started) counts as a
// failure at that moment, so that the failure being decided is always the
// newest; one further ahead, or more than MaxClockSkew before the job was
// created, makes the record untrustworthy, and the failures are rebuilt
// from River's own errors.
const MaxClockSkew = time.Hour

// record is what the policy keeps in a job's metadata under MetadataKey:
// the last attempt whose end the middleware saw, and the failures that can
// still count, to the millisecond, newest first. In JSON:
//
//	{"seen_attempt": 3, "failures": "…"}
//
// failures is one token for the newest failure's Unix time in
// milliseconds, then one for each gap to the next older failure, in
// milliseconds. A token is a little-endian run of 5-bit groups, each
// written as one character of the base64url alphabet: the first 32
// ("A"…"f") end a token, the last 32 ("g"…"_") go on. A failure a week
// after the one before it takes 4 characters.
type record struct {
	seen     int
	failures []int64 // Unix milliseconds, newest first
}

// recordJSON is a record as the middleware hands it to River, which
// encodes it with encoding/json: plain fields, so that the encoding costs
// one pass over the failures' characters.
type recordJSON struct {
	Seen     int    `json:"seen_attempt"`
	Failures string `json:"failures"`
}

const tokenDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// digitValue is each byte's value in tokenDigits, or -1.
var digitValue = func() (v [256]int8) {
	for i := range v {
		v[i] = -1
	}
	for i := range len(tokenDigits) {
		v[tokenDigits[i]] = int8(i)
	}
	return v
}()

// encode returns r for River.
func (r record) encode() recordJSON {
	b := make([]byte, maxTokenLen*len(r.failures))
	at := 0
	for i, ms := range r.failures {
		if i > 0 {
			ms = r.failures[i-1] - ms
		}
		at += putToken(b[at:], uint64(max(ms, 0)))
	}
	return recordJSON{Seen: r.seen, Failures: string(b[:at])}
}

// maxTokenLen is the longest token: 63 bits in 5-bit groups.
const maxTokenLen = 13

// tokenLen is the length of v's token: one character per 5 bits.
func tokenLen(v uint64) int { return max(1, (bits.Len64(v)+4)/5) }

// putToken writes v's token at the start of b, which has room for it, and
// returns its length.
func putToken(b []byte, v uint64) int {
	n := tokenLen(v)
	b = b[:n]
	for i := range n - 1 {
		b[i] = tokenDigits[32|v&31]
		v >>= 5
	}
	b[n-1] = tokenDigits[v&31]
	return n
}

// nextToken decodes the token at the start of s and returns its value and
// length, or a length of 0 when s does not start with a whole token that
// fits 63 bits.
func nextToken(s []byte) (v uint64, n int) {
	for i := 0; i < len(s) && i < maxTokenLen; i++ {
		d := digitValue[s[i]]
		switch {
		case d < 0, i == maxTokenLen-1 && d&31 > 7: // 60 bits so far: room for 3
			return 0, 0
		case d < 32:
			return v | uint64(d)<<(5*i), i + 1
		}
		v |= uint64(d&31) << (5 * i)
	}
	return 0, 0
}

// decodeFailures appends to room the failures that enc holds, at most
// limit of them, and reports whether enc holds more, or false when enc is
// not a list of tokens.
func decodeFailures(enc []byte, room []int64, limit int) (failures []int64, more, ok bool) {
	failures = room[:0]
	var ms int64
	for len(enc) > 0 {
		if len(failures) == limit {
			return failures, true, true
		}
		v, n := nextToken(enc)
		if n == 0 {
			return failures, false, false
		}
		if len(failures) == 0 {
			ms = int64(v)
		} else {
			ms -= int64(min(v, uint64(ms))) // before 1970 is before any job
		}
		failures = append(failures, ms)
		enc = enc[n:]
	}
	return failures, false, true
}

// metadataNotObject is the problem of metadata that is not a JSON object.
const metadataNotObject = "metadata must be a JSON object"

// meta is what the policy reads from a job's metadata.
type meta struct {
	strategy []byte // the raw MetadataStrategy value; nil when absent or null
	seen     int
	failures []byte // the record's failures as written; nil without a record
	problem  string // what makes the metadata or the record unreadable
}

// readMetadata reads the policy's keys from a job's metadata and skips
// every other value, however deep. It stops once it has both keys.
func readMetadata(metadata []byte) (m meta) {
	if len(bytes.TrimSpace(metadata)) == 0 {
		return m
	}
	var s jsonscan.Scanner
	s.Reset(metadata)
	haveStrategy, haveRecord := false, false
	for key, more := firstKey(&s); more && !(haveStrategy && haveRecord); key, more = nextKey(&s) {
		switch {
		case keyIs(key, MetadataStrategy):
			haveStrategy = true
			if s.Peek() == 'n' {
				s.Literal("null")
			} else {
				m.strategy = s.Skip()
			}
		case keyIs(key, MetadataKey):
			haveRecord = true
			m = readRecord(&s, m)
		default:
			s.Skip()
		}
	}
	if s.Bad() {
		return meta{problem: metadataNotObject}
	}
	return m
}

// readRecord reads the policy's record; null is no record.
func readRecord(s *jsonscan.Scanner, m meta) meta {
	const shape = `its "` + MetadataKey + `" record is not {"seen_attempt": whole number, "failures": string}`
	if s.Peek() == 'n' {
		s.Literal("null")
		return m
	}
	if s.Peek() != '{' {
		s.Skip()
		m.problem = shape
		return m
	}
	haveSeen := false
	for key, more := firstKey(s); more; key, more = nextKey(s) {
		switch {
		case keyIs(key, "seen_attempt") && s.Peek() != '"':
			n := s.Number()
			m.seen, haveSeen = attemptNumber(n)
			if !haveSeen && n != nil {
				m.problem = shape
			}
		case keyIs(key, "failures") && s.Peek() == '"':
			m.failures = tokens(s)
		default:
			s.Skip()
		}
	}
	if !haveSeen || m.failures == nil {
		m.problem, m.failures = shape, nil
	}
	return m
}

// tokens reads the record's failures, a string of tokens: it finds the
// closing quote and leaves checking the characters to decodeFailures,
// which refuses any outside the tokens' alphabet, escapes included.
func tokens(s *jsonscan.Scanner) []byte {
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

// checkRecord returns the failures of m's record that job can have had, at
// most limit, with instants later than the job's current attempt or now
// moved back to the earlier of the two; or what is wrong with the record,
// checked against River's own columns: more attempts seen than the job
// has had, more failures than it has had attempts or errors, or instants
// further than MaxClockSkew after that moment or before the job was
// created.
func checkRecord(job *rivertype.JobRow, m meta, now time.Time, limit int, room []int64) (record, string) {
	if m.problem != "" || m.failures == nil {
		return record{}, m.problem
	}
	if m.seen >= max(job.Attempt, 1) {
		return record{}, "its record has seen attempt " + strconv.Itoa(m.seen) + ", and the job is at attempt " + strconv.Itoa(job.Attempt)
	}
	most := min(m.seen, len(job.Errors))
	failures, more, ok := decodeFailures(m.failures, room, min(most, limit))
	switch {
	case !ok:
		return record{}, `its record's "failures" is not a list of failure times`
	case more && limit >= most:
		return record{}, "its record holds more failures than the job's " + strconv.Itoa(m.seen) + " attempts and " + strconv.Itoa(len(job.Errors)) + " errors"
	}
	latest := now
	if job.AttemptedAt != nil && job.AttemptedAt.Before(latest) {
		latest = *job.AttemptedAt
	}
	latestMs := latest.UnixMilli()
	if len(failures) > 0 {
		if newest := failures[0]; newest > latest.Add(MaxClockSkew).UnixMilli() {
			return record{}, "its record holds a failure at " + time.UnixMilli(newest).UTC().Format(time.RFC3339) + ", after the allowed clock skew"
		}
		if oldest := failures[len(failures)-1]; oldest < job.CreatedAt.Add(-MaxClockSkew).UnixMilli() {
			return record{}, "its record holds a failure at " + time.UnixMilli(oldest).UTC().Format(time.RFC3339) + ", before the job was created"
		}
	}
	for i := range failures {
		failures[i] = min(failures[i], latestMs)
	}
	return record{seen: m.seen, failures: failures}, ""
}

// unseen appends to failures those River holds that the middleware never
// saw end (a run rescued after its process died, a failure before the
// middleware ran), at the time River gives each, no later than now, and
// returns how many it appended. River appends its errors in attempt order.
func unseen(job *rivertype.JobRow, seen int, failures []int64, now time.Time) ([]int64, int) {
	n := len(failures)
	nowMs := now.UnixMilli()
	for i := len(job.Errors) - 1; i >= 0 && job.Errors[i].Attempt > seen; i-- {
		if e := job.Errors[i]; e.Attempt < job.Attempt {
			failures = append(failures, min(e.At.UnixMilli(), nowMs))
		}
	}
	return failures, len(failures) - n
}
