// Package report holds what the command prints and the HTTP API answers
// alike.
//
// So that both say the same, it holds decide's request reader and answer,
// and renders what the what-if runs return (package whatif runs them):
// their JSON, their text and their pictures. It runs no simulation.
package report

import (
	"bytes"
	"errors"
	"strconv"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/capped"
	"github.com/retrypolicy/retrypolicy/internal/echo"
	"github.com/retrypolicy/retrypolicy/internal/jsondoc"
	"github.com/retrypolicy/retrypolicy/internal/jsonscan"
	"github.com/retrypolicy/retrypolicy/internal/seedhash"
	"github.com/retrypolicy/retrypolicy/internal/wire"
)

// MaxLine is the longest request decide reads, on a line or as a document.
const MaxLine = 1 << 20

// problems are what is wrong with one request, each starting with its
// field's path ("$" for the document).
type problems struct{ capped.List[string] }

func (p *problems) add(line string) { p.Add(line) }

// lines returns the problems, the count of the omitted ones last.
func (p *problems) lines() []string {
	if p.More > 0 {
		return append(p.Kept, capped.AndMore(p.More))
	}
	return p.Kept
}

// Decider reads decide's requests and decides on them:
//
//	{"retry_strategy": {…}, "failures": ["RFC 3339", …], "last_uptime_secs": 12.5,
//	 "jitter_seed": "job-42", "now": "RFC 3339"}
//
// The envelope is read as strictly as the strategy: unknown and duplicate
// keys (escaped or not) and wrong types are problems naming the field. It
// keeps the policies it compiled, by their strategy's bytes (a stream
// repeats a few; compiling costs more than deciding), at most maxCached.
type Decider struct {
	policies map[string]*retrypolicy.Policy
	standard *retrypolicy.Policy // the Default strategy's
	failures []time.Time         // reused from request to request
	probs    problems
	scan     jsonscan.Scanner
}

const maxCached = 64

// NewDecider returns a decider with an empty cache.
func NewDecider() *Decider {
	p, _ := retrypolicy.Compile(retrypolicy.Default())
	return &Decider{policies: make(map[string]*retrypolicy.Policy, maxCached), standard: p}
}

// The request's keys, by index.
var requestKeys = [...]string{"retry_strategy", "failures", "last_uptime_secs", "jitter_seed", "now"}

const (
	kStrategy = iota
	kFailures
	kUptime
	kSeed
	kNow
)

// request is one request read.
type request struct {
	policy *retrypolicy.Policy
	uptime time.Duration
	seed   uint64
	now    time.Time
}

// decide reads one request and appends its decision to out, or returns the
// problems found (nil when there are none).
func (d *Decider) Decide(doc, out []byte) ([]byte, []string) {
	req, ok := d.read(doc)
	if !ok {
		return out, d.probs.lines()
	}
	dec, err := req.policy.Decide(d.failures, req.uptime, req.seed, req.now)
	if err == nil {
		var text []byte
		if text, err = dec.MarshalJSON(); err == nil {
			return append(out, text...), nil
		}
	}
	return out, []string{"$: " + err.Error()}
}

// read reads doc into a request and d.failures, or records its problems.
func (d *Decider) read(doc []byte) (req request, ok bool) {
	d.probs.Reset()
	d.failures = d.failures[:0]
	doc, offset := wire.TrimBOM(doc)
	s := &d.scan
	s.Reset(doc)
	if s.Peek() != '{' {
		if v := s.Value(1); v != nil && s.Peek() == 0 {
			d.probs.add("$: must be a JSON object, got " + kindOf(v))
			return req, false
		}
		d.syntax(s, doc, offset)
		return req, false
	}
	var present [len(requestKeys)]bool
	strays := d.members(s, &req, &present)
	if s.Bad() {
		d.probs.Reset()
		d.syntax(s, doc, offset)
		return req, false
	}
	if s.Peek() != 0 {
		d.probs.add("$: must hold one JSON object and nothing after it")
	}
	d.required(&present)
	for _, p := range strays.Kept {
		d.probs.add(p)
	}
	d.probs.More += strays.More
	if req.policy == nil && !d.hasProblemWith("retry_strategy") {
		req.policy = d.standard
	}
	return req, len(d.probs.Kept) == 0
}

// members reads the object's members into req, marking the keys present
// (given, and not null); it returns the unknown and repeated keys, to be
// reported after the fields.
func (d *Decider) members(s *jsonscan.Scanner, req *request, present *[len(requestKeys)]bool) (strays problems) {
	var seen [len(requestKeys)]bool
	s.Next()
	for first := true; !s.Bad(); first = false {
		if s.Peek() == '}' && first {
			s.Next()
			return strays
		}
		key := s.Str()
		if s.Bad() || !s.Consume(':') {
			return strays
		}
		if k := keyIndex(key); k >= 0 && !seen[k] {
			seen[k] = true
			present[k] = d.field(s, k, req)
		} else {
			strays.add(stray(key, k))
			s.Value(2)
		}
		if s.Bad() {
			return strays
		}
		if s.Peek() != ',' {
			s.Consume('}')
			return strays
		}
		s.Next()
	}
	return strays
}

// stray says what is wrong with a key that is not read: k is its index
// when it is a known key seen before, else -1.
func stray(key []byte, k int) string {
	if k >= 0 {
		return requestKeys[k] + ": duplicate key"
	}
	name := jsonscan.Unquoted(key)
	msg := echo.Text(name) + ": unknown field"
	if len(name) <= echo.Max {
		msg += echo.SuggestFrom(name, requestKeys[:])
	}
	return msg
}

// required records the required keys that are missing (absent, or null)
// or empty.
func (d *Decider) required(present *[len(requestKeys)]bool) {
	switch {
	case !present[kFailures]:
		d.probs.add("failures: required")
	case len(d.failures) == 0 && !d.hasProblemWith("failures"):
		d.probs.add("failures: must hold at least one failure")
	}
	if !present[kNow] {
		d.probs.add("now: required")
	}
}

// syntax records the syntax error the scanner met.
func (d *Decider) syntax(s *jsonscan.Scanner, doc []byte, offset int) {
	if s.TooDeep() {
		d.probs.add("$: must not be nested deeper than " + strconv.Itoa(jsonscan.MaxDepth) + " levels")
		return
	}
	d.probs.add(SyntaxProblem(doc, offset))
}

// hasProblemWith reports whether a problem with field was recorded.
func (d *Decider) hasProblemWith(field string) bool {
	for _, p := range d.probs.Kept {
		if len(p) > len(field) && p[:len(field)] == field && (p[len(field)] == ':' || p[len(field)] == '.' || p[len(field)] == '[') {
			return true
		}
	}
	return false
}

// keyIndex returns the index of a key as written (escapes decoded), or -1.
func keyIndex(raw []byte) int {
	if bytes.IndexByte(raw, '\\') < 0 {
		for k, name := range requestKeys {
			if string(raw) == name {
				return k
			}
		}
		return -1
	}
	var buf [32]byte
	n := 0
	jsonscan.Unquote(raw, func(b byte) {
		if n < len(buf) {
			buf[n] = b
		}
		n++
	})
	if n > len(buf) {
		return -1
	}
	for k, name := range requestKeys {
		if string(buf[:n]) == name {
			return k
		}
	}
	return -1
}

// field reads the value of the request's key k, and reports false for
// null, which is the key absent.
func (d *Decider) field(s *jsonscan.Scanner, k int, req *request) bool {
	if s.Peek() == 'n' { // null: absent
		s.Literal("null")
		return false
	}
	switch k {
	case kStrategy:
		if v := s.Value(2); v != nil {
			req.policy = d.policy(v)
		}
	case kFailures:
		d.readFailures(s)
	case kUptime:
		d.readUptime(s, req)
	case kSeed:
		d.readSeed(s, req)
	case kNow:
		d.readNow(s, req)
	}
	return true
}

// readUptime reads last_uptime_secs, a number.
func (d *Decider) readUptime(s *jsonscan.Scanner, req *request) {
	switch s.Peek() {
	case '"', '{', '[', 't', 'f':
		if v := s.Value(2); v != nil {
			d.probs.add("last_uptime_secs: must be a number, got " + shown(v))
		}
		return
	}
	if n := s.Number(); n != nil {
		req.uptime = jsonscan.Seconds(n)
	}
}

// readSeed reads jitter_seed, a string, into its seed: the FNV-1a hash of
// the string's bytes, as SeedFromString computes it, bytes that are not
// UTF-8 included.
func (d *Decider) readSeed(s *jsonscan.Scanner, req *request) {
	if s.Peek() != '"' {
		if v := s.Value(2); v != nil {
			d.probs.add("jitter_seed: must be a string, got " + shown(v))
		}
		return
	}
	h := seedhash.New()
	jsonscan.Unquote(s.Str(), h.Add)
	req.seed = uint64(h)
}

// readNow reads now, an RFC 3339 time.
func (d *Decider) readNow(s *jsonscan.Scanner, req *request) {
	if s.Peek() != '"' {
		if v := s.Value(2); v != nil {
			d.probs.add("now: must be an RFC 3339 time, got " + shown(v))
		}
		return
	}
	raw := s.Str()
	if t, ok := jsonscan.RFC3339(raw); ok {
		req.now = t
	} else if !s.Bad() {
		d.probs.add("now: must be an RFC 3339 time, got " + echo.Quote(jsonscan.Unquoted(raw)))
	}
}

// readFailures reads the failures array into d.failures.
func (d *Decider) readFailures(s *jsonscan.Scanner) {
	if s.Peek() != '[' {
		if v := s.Value(2); v != nil {
			d.probs.add("failures: must be an array of RFC 3339 times, got " + shown(v))
		}
		return
	}
	s.Next()
	if s.Peek() == ']' {
		s.Next()
		return
	}
	for i := 0; !s.Bad(); i++ {
		if s.Peek() == '"' {
			raw := s.Str()
			if t, ok := jsonscan.RFC3339(raw); ok {
				d.failures = append(d.failures, t)
			} else if !s.Bad() {
				d.probs.add("failures[" + strconv.Itoa(i) + "]: must be an RFC 3339 time, got " + echo.Quote(jsonscan.Unquoted(raw)))
			}
		} else if v := s.Value(3); v != nil {
			d.probs.add("failures[" + strconv.Itoa(i) + "]: must be an RFC 3339 time, got " + shown(v))
		}
		if s.Peek() == ',' {
			s.Next()
			continue
		}
		s.Consume(']')
		return
	}
}

// policy returns the compiled strategy v, from the cache when it was seen,
// or records its problems, named within retry_strategy.
func (d *Decider) policy(v []byte) *retrypolicy.Policy {
	if p, ok := d.policies[string(v)]; ok {
		return p
	}
	s, err := retrypolicy.Parse(v)
	var ve *retrypolicy.ValidationError
	if errors.As(err, &ve) {
		for _, fe := range ve.Errors {
			if fe.Field == "$" {
				fe.Field = "retry_strategy"
			} else {
				fe.Field = "retry_strategy." + fe.Field
			}
			d.probs.add(fe.Error())
		}
		d.probs.More += ve.Omitted
		return nil
	}
	p, err := retrypolicy.Compile(s)
	if err != nil {
		d.probs.add("retry_strategy: " + err.Error())
		return nil
	}
	if len(d.policies) >= maxCached {
		clear(d.policies)
	}
	d.policies[string(v)] = p
	return p
}

// shown writes a JSON value for a message: strings escaped and cut, the
// others named or cut.
func shown(v []byte) string {
	switch v[0] {
	case '"':
		return echo.Quote(jsonscan.Unquoted(v[1 : len(v)-1]))
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return echo.Number(string(v))
}

// kindOf names a JSON value that is not an object.
func kindOf(v []byte) string {
	if v[0] == '"' || v[0] == '[' {
		return shown(v)
	}
	return echo.Number(string(v))
}

// SyntaxProblem words the syntax error in doc as the library does, at the
// byte it names; offset is where doc starts in what the user gave (a
// byte-order mark skipped before it).
func SyntaxProblem(doc []byte, offset int) string {
	if p := jsondoc.SyntaxProblem(doc, offset); p != "" {
		return "$: " + p
	}
	return "$: must be valid JSON" // not reached: the scanner and encoding/json agree
}
