package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/retrypolicy/retrypolicy"
)

// maxLine is the longest request decide reads, on a line or as a document.
const maxLine = 1 << 20

// request is one decide input:
//
//	{"retry_strategy": {…}, "failures": ["RFC 3339", …], "last_uptime_secs": 12.5,
//	 "jitter_seed": "job-42", "now": "RFC 3339"}
type request struct {
	strategy retrypolicy.Strategy
	failures []time.Time
	uptime   time.Duration
	seed     uint64
	now      time.Time
}

var requestFields = map[string]bool{"retry_strategy": true, "failures": true, "last_uptime_secs": true, "jitter_seed": true, "now": true}

// reader parses requests, remembering the strategies it parsed: a stream
// usually repeats a few, and parsing one costs more than deciding. It keeps
// at most maxCached of them, so memory stays bounded on any stream.
type reader struct {
	strategies map[string]retrypolicy.Strategy
}

const maxCached = 64

// parse reads one request; problems lists what is wrong, each line starting
// with the field's path ("$" for the document).
func (r *reader) parse(doc []byte) (req request, problems []string) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var raw map[string]json.RawMessage
	if err := dec.Decode(&raw); err != nil || raw == nil {
		return req, []string{"$: must be a JSON object" + detail(err)}
	}
	if _, err := dec.Token(); err != io.EOF {
		return req, []string{"$: must hold one JSON object and nothing after it"}
	}
	var unknown []string
	for k := range raw {
		if !requestFields[k] {
			unknown = append(unknown, k+": unknown field")
		}
	}
	sort.Strings(unknown)

	req.strategy, problems = r.strategy(raw["retry_strategy"])
	req.failures, problems = failures(raw["failures"], problems)
	req.uptime, problems = uptime(raw["last_uptime_secs"], problems)
	if v, ok := present(raw["jitter_seed"]); ok {
		var seed string
		if json.Unmarshal(v, &seed) != nil {
			problems = append(problems, "jitter_seed: must be a string, got "+shown(v))
		}
		req.seed = retrypolicy.SeedFromString(seed)
	}
	if v, ok := present(raw["now"]); !ok {
		problems = append(problems, "now: required")
	} else if t, err := rfc3339(v); err != nil {
		problems = append(problems, "now: "+err.Error())
	} else {
		req.now = t
	}
	return req, append(problems, unknown...)
}

// present returns a field's value unless it is absent or null.
func present(v json.RawMessage) (json.RawMessage, bool) {
	return v, len(v) > 0 && string(v) != "null"
}

func (r *reader) strategy(v json.RawMessage) (retrypolicy.Strategy, []string) {
	v, ok := present(v)
	if !ok {
		return retrypolicy.Default(), nil
	}
	if s, ok := r.strategies[string(v)]; ok {
		return s, nil
	}
	s, err := retrypolicy.Parse(v)
	var ve *retrypolicy.ValidationError
	if errors.As(err, &ve) {
		var problems []string
		for _, fe := range ve.Errors {
			if fe.Field == "$" {
				fe.Field = "retry_strategy"
			} else {
				fe.Field = "retry_strategy." + fe.Field
			}
			problems = append(problems, fe.Error())
		}
		return s, problems
	}
	if r.strategies == nil || len(r.strategies) >= maxCached {
		r.strategies = make(map[string]retrypolicy.Strategy, maxCached)
	}
	r.strategies[string(v)] = s
	return s, nil
}

func failures(v json.RawMessage, problems []string) ([]time.Time, []string) {
	v, ok := present(v)
	if !ok {
		return nil, append(problems, "failures: required")
	}
	var texts []string
	if json.Unmarshal(v, &texts) == nil {
		if len(texts) == 0 {
			return nil, append(problems, "failures: must hold at least one failure")
		}
		out := make([]time.Time, len(texts))
		for i, text := range texts {
			t, err := time.Parse(time.RFC3339Nano, text)
			if err != nil {
				problems = append(problems, "failures["+strconv.Itoa(i)+"]: must be an RFC 3339 time, got "+strconv.Quote(text))
			}
			out[i] = t
		}
		return out, problems
	}
	// Not an array of strings: say which element is wrong.
	var raw []json.RawMessage
	if json.Unmarshal(v, &raw) != nil {
		return nil, append(problems, "failures: must be an array of RFC 3339 times, got "+shown(v))
	}
	for i, text := range raw {
		if _, err := rfc3339(text); err != nil {
			problems = append(problems, "failures["+strconv.Itoa(i)+"]: "+err.Error())
		}
	}
	return nil, problems
}

// uptime reads last_uptime_secs: a number of seconds, saturating at the
// longest Duration; a negative one counts as zero, as the semantics say.
func uptime(v json.RawMessage, problems []string) (time.Duration, []string) {
	v, ok := present(v)
	if !ok {
		return 0, problems
	}
	var n json.Number
	if v[0] == '"' || json.Unmarshal(v, &n) != nil { // json.Number would take a quoted number
		return 0, append(problems, "last_uptime_secs: must be a number, got "+shown(v))
	}
	secs, err := strconv.ParseFloat(string(n), 64)
	switch {
	case err != nil && !math.IsInf(secs, 0):
		return 0, append(problems, "last_uptime_secs: must be a number, got "+shown(v))
	case secs <= 0:
		return 0, problems
	case secs*1e9 >= math.MaxInt64:
		return math.MaxInt64, problems
	}
	return time.Duration(math.Round(secs * 1e9)), problems
}

// rfc3339 reads a JSON string holding an RFC 3339 time.
func rfc3339(v json.RawMessage) (time.Time, error) {
	var s string
	if json.Unmarshal(v, &s) != nil {
		return time.Time{}, errors.New("must be an RFC 3339 time, got " + shown(v))
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, errors.New("must be an RFC 3339 time, got " + shown(v))
	}
	return t, nil
}

func shown(v json.RawMessage) string {
	s := string(v)
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return s
}

func detail(err error) string {
	if err == nil {
		return ""
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return " (" + se.Error() + " at byte " + strconv.FormatInt(se.Offset, 10) + ")"
	}
	if errors.Is(err, io.EOF) {
		return ", got an empty document"
	}
	return ""
}

func runDecide(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("decide", "decide [--lines] [FILE|-]\n\nReads {\"retry_strategy\": {…} (optional), \"failures\": [\"RFC 3339\", …], \"last_uptime_secs\": N (optional),\n\"jitter_seed\": \"…\" (optional), \"now\": \"RFC 3339\"} and prints {\"action\", \"reason\" (fatal only),\n\"failures_in_window\", \"owed_secs\", \"credited_secs\", \"jitter_secs\", \"due\"}. Exits 0 for every\ndecision, 2 for invalid input (each problem on a line, starting with its field's path).", stderr)
	lines := fs.Bool("lines", false, "read JSON Lines and write one output line per input line, in order; a bad line\nyields {\"error\": \"…\"} and the stream goes on; exit 2 at the end if any line was bad")
	in, stop := parseInput(fs, args, stdin, stdout, stderr)
	if stop >= 0 {
		return stop
	}
	defer in.Close()
	if *lines {
		return decideLines(in, stdout, stderr)
	}
	doc, err := io.ReadAll(io.LimitReader(in, maxLine+1))
	if err != nil {
		fmt.Fprintln(stderr, "retrypolicy:", err)
		return exitIO
	}
	if len(doc) > maxLine {
		fmt.Fprintf(stderr, "$: must be at most %d bytes\n", maxLine)
		return exitInvalid
	}
	var r reader
	out, problems := r.decide(doc, nil)
	if problems != nil {
		for _, p := range problems {
			fmt.Fprintln(stderr, p)
		}
		return exitInvalid
	}
	stdout.Write(append(out, '\n'))
	return exitOK
}

// decide parses and decides one request, appending the output object to b.
func (r *reader) decide(doc, b []byte) ([]byte, []string) {
	req, problems := r.parse(doc)
	if problems != nil {
		return b, problems
	}
	d, err := retrypolicy.Decide(req.strategy, req.failures, req.uptime, req.seed, req.now)
	if err != nil {
		return b, []string{"$: " + err.Error()}
	}
	out, err := d.MarshalJSON()
	if err != nil {
		return b, []string{"$: " + err.Error()}
	}
	return append(b, out...), nil
}

// decideLines streams JSON Lines: it holds one line at a time, so memory does
// not grow with the stream.
func decideLines(in io.Reader, stdout, stderr io.Writer) int {
	br := bufio.NewReaderSize(in, 64<<10)
	w := bufio.NewWriterSize(stdout, 64<<10)
	var r reader
	var line, out []byte
	bad := 0
	for {
		var err error
		line, err = readLine(br, line[:0])
		if len(line) == 0 && err == io.EOF {
			break
		}
		if err != nil && err != io.EOF && !errors.Is(err, errLineTooLong) {
			w.Flush()
			fmt.Fprintln(stderr, "retrypolicy:", err)
			return exitIO
		}
		var problems []string
		if errors.Is(err, errLineTooLong) {
			problems = []string{fmt.Sprintf("$: line longer than %d bytes", maxLine)}
		} else {
			out, problems = r.decide(line, out[:0])
		}
		if problems != nil {
			bad++
			msg, _ := json.Marshal(strings.Join(problems, "; "))
			out = append(append(append(out[:0], `{"error":`...), msg...), '}')
		}
		w.Write(append(out, '\n'))
		if err == io.EOF {
			break
		}
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(stderr, "retrypolicy:", err)
		return exitIO
	}
	if bad > 0 {
		fmt.Fprintf(stderr, "retrypolicy: %d bad line(s)\n", bad)
		return exitInvalid
	}
	return exitOK
}

var errLineTooLong = errors.New("line too long")

// readLine appends the next line of br to buf, without its line ending. A
// line longer than maxLine is skipped to its end and reported with
// errLineTooLong. It returns io.EOF with the last line when the input ends
// without a newline.
func readLine(br *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if room := maxLine + 1 - len(buf); room > 0 { // keep one byte past the limit, to tell
			buf = append(buf, chunk[:min(len(chunk), room)]...)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err != nil && err != io.EOF:
			return buf, err
		}
		buf = bytes.TrimRight(buf, "\r\n")
		if len(buf) > maxLine {
			return buf[:0], errLineTooLong
		}
		return buf, err
	}
}
