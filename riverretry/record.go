package riverretry

import (
	"bytes"
	"slices"
	"strconv"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/jsonscan"
	"github.com/retrypolicy/retrypolicy/internal/wire"
	"github.com/riverqueue/river/rivertype"
)

// failure is one failure of a job: the attempt that failed and when.
type failure struct {
	attempt int
	at      time.Time
}

// record is what the policy keeps in a job's metadata under MetadataKey:
// the failures that can still count (those in the window of the newest),
// the last attempt the middleware saw end, the uptime of the last failed
// run, and the decision on the last failure. It holds no more failures
// than the job has had attempts, which River bounds (MaxAttempts).
type record struct {
	seen     int // the last attempt whose end the middleware saw
	failures []failure
	uptime   time.Duration
	decision retrypolicy.Decision
	// kept is the decision as read from metadata, written back unchanged
	// when no new decision replaces it (after a run that is no failure).
	kept []byte
}

// MarshalJSON writes the record:
//
//	{"seen_attempt": 3, "failures": [{"attempt": 2, "at": "…"}, …],
//	 "last_uptime_secs": 1.5, "decision": {…}}
//
// decision is the last one made, omitted before the first failure.
func (r record) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 96+48*len(r.failures)+160)
	b = append(b, `{"seen_attempt":`...)
	b = strconv.AppendInt(b, int64(r.seen), 10)
	b = append(b, `,"failures":[`...)
	for i, f := range r.failures {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"attempt":`...)
		b = strconv.AppendInt(b, int64(f.attempt), 10)
		b = append(b, `,"at":"`...)
		b = f.at.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, `"}`...)
	}
	b = append(b, `],"last_uptime_secs":`...)
	b = wire.AppendSeconds(b, max(r.uptime, 0))
	decision := r.kept
	if r.decision.Action != 0 {
		decision, _ = r.decision.MarshalJSON() // a decision the library made: valid
	}
	if len(decision) > 0 {
		b = append(b, `,"decision":`...)
		b = append(b, decision...)
	}
	return append(b, '}'), nil
}

// The readers below pass what they read by value rather than through
// pointers, so that the room a caller gives for failures stays on its
// stack.

// readMetadata reads a job's metadata: its own strategy (the raw
// MetadataStrategy value, nil when absent or null) and the policy's
// record, the failures appended to room. ok is false when the metadata is
// not an object the policy can read.
func readMetadata(meta []byte, room []failure) (strategy []byte, rec record, ok bool) {
	rec.failures = room[:0]
	if len(bytes.TrimSpace(meta)) == 0 {
		return nil, rec, true
	}
	var s jsonscan.Scanner
	s.Reset(meta)
	for key, more := firstKey(&s); more; key, more = nextKey(&s) {
		switch {
		case keyIs(key, MetadataStrategy):
			if s.Peek() == 'n' {
				s.Literal("null")
			} else {
				strategy = s.Value(2)
			}
		case keyIs(key, MetadataKey):
			rec = readRecord(&s, rec)
		default:
			s.Value(2)
		}
	}
	if s.Bad() || s.Peek() != 0 {
		return nil, record{}, false
	}
	return strategy, rec, true
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

// readRecord reads the policy's record into r; the decision is kept as
// written.
func readRecord(s *jsonscan.Scanner, r record) record {
	for key, ok := firstKey(s); ok; key, ok = nextKey(s) {
		switch {
		case keyIs(key, "seen_attempt"):
			n, ok := attemptNumber(s.Number())
			if !ok {
				s.Fail()
			}
			r.seen = n
		case keyIs(key, "failures"):
			r.failures = readFailures(s, r.failures)
		case keyIs(key, "last_uptime_secs"):
			r.uptime = jsonscan.Seconds(s.Number())
		case keyIs(key, "decision"):
			r.kept = s.Value(3)
		default:
			s.Value(3)
		}
	}
	return r
}

// readFailures reads [{"attempt": n, "at": "RFC 3339"}, …] onto failures.
func readFailures(s *jsonscan.Scanner, failures []failure) []failure {
	if !s.Consume('[') {
		return failures
	}
	if s.Peek() == ']' {
		s.Next()
		return failures
	}
	for !s.Bad() {
		var f failure
		var haveAttempt, haveAt bool
		for key, ok := firstKey(s); ok; key, ok = nextKey(s) {
			switch {
			case keyIs(key, "attempt"):
				f.attempt, haveAttempt = attemptNumber(s.Number())
			case keyIs(key, "at"):
				f.at, haveAt = jsonscan.RFC3339(s.Str())
			default:
				s.Value(4)
			}
		}
		if !haveAttempt || !haveAt {
			s.Fail()
			return failures
		}
		failures = append(failures, f)
		if s.Peek() != ',' {
			s.Consume(']')
			return failures
		}
		s.Next()
	}
	return failures
}

// attemptNumber reads a whole number of at least 0 that fits an int32.
func attemptNumber(n []byte) (int, bool) {
	if len(n) == 0 || len(n) > 10 {
		return 0, false
	}
	v, err := strconv.ParseInt(string(n), 10, 32)
	return int(v), err == nil && v >= 0
}

// history returns the failures of job to decide on: those recorded, and
// those River holds that the middleware never saw end (a run rescued after
// its process died, or one that failed before the middleware ran), each at
// the time River gives it. It reports whether any was unseen.
func history(job *rivertype.JobRow, r record) (record, bool) {
	unseen := false
	for _, e := range job.Errors {
		if e.Attempt > r.seen && e.Attempt < job.Attempt && !hasAttempt(r.failures, e.Attempt) {
			r.failures = append(r.failures, failure{attempt: e.Attempt, at: e.At})
			unseen = true
		}
	}
	return r, unseen
}

func hasAttempt(failures []failure, attempt int) bool {
	for _, f := range failures {
		if f.attempt == attempt {
			return true
		}
	}
	return false
}

// keepWindow orders failures by time and keeps the newest n: after a
// decision, those in the window of the newest, the only ones that can
// count again.
func keepWindow(failures []failure, n int) []failure {
	slices.SortStableFunc(failures, func(a, b failure) int { return a.at.Compare(b.at) })
	return failures[max(len(failures)-n, 0):]
}
