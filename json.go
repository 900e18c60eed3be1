package retrypolicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/retrypolicy/retrypolicy/internal/echo"
	"github.com/retrypolicy/retrypolicy/internal/jsondoc"
	"github.com/retrypolicy/retrypolicy/internal/wire"
)

// Limits on what Parse reads: a strategy object is a few hundred bytes and
// two levels deep, so anything far larger is refused before it is read.
const (
	maxDocumentSize = 64 << 10
	maxDepth        = 16
)

// Parse reads one strategy object, the value of a request's retry_strategy,
// strictly: unknown fields, duplicate keys, wrong JSON types, fractions in
// integer fields, out-of-range numbers, fields the strategy or backoff kind
// does not allow, missing required fields and trailing data are errors.
// Omitted fields and null take their defaults (an omitted backoff is the
// default one; the document null is Default). A leading BOM is skipped.
//
// On error Parse returns the zero Strategy and a *ValidationError naming
// each problem by its JSON path ("$" for the document); it matches
// ErrInvalid with errors.Is. Documents over 64 KiB are refused unread.
func Parse(data []byte) (Strategy, error) {
	p := problems{nm: &jsonNaming}
	if len(data) > maxDocumentSize {
		p.addDoc("must be at most "+strconv.Itoa(maxDocumentSize)+" bytes", "")
		return Strategy{}, p.err()
	}
	data, skipped := wire.TrimBOM(data)
	if string(bytes.TrimSpace(data)) == "null" {
		return Default(), nil
	}
	var d draft
	if !(&docReader{data: data, offset: skipped, d: &d, p: &p}).document() {
		return Strategy{}, p.err()
	}
	s := d.build(&p)
	if err := p.err(); err != nil {
		return Strategy{}, err
	}
	return s, nil
}

// UnmarshalJSON implements json.Unmarshaler with Parse's rules. JSON null
// leaves s unchanged, as encoding/json does for other values; so does an
// error.
func (s *Strategy) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		return nil
	}
	v, err := Parse(data)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// MarshalJSON implements json.Marshaler with the canonical encoding: fields
// in the descriptor's order, every field that applies written with its
// value, the others left out, no white space. Parse of the result returns
// s. A strategy the descriptor cannot express (invalid, or delays that are
// not whole seconds) is not encoded: the error names the field.
func (s Strategy) MarshalJSON() ([]byte, error) {
	s = s.effective()
	p := problems{nm: &jsonNaming}
	g := givenOf(&s)
	check(&s, &g, &p)
	if err := p.err(); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 160)
	b = append(b, `{"strategy":"`...)
	b = append(b, s.Kind.String()...)
	b = append(b, '"')
	if s.Kind == Bounded {
		b = append(b, `,"max_attempts":`...)
		b = strconv.AppendInt(b, int64(s.MaxAttempts), 10)
		b = append(b, `,"window_secs":`...)
		b = strconv.AppendInt(b, int64(s.Window/time.Second), 10)
	}
	if s.Kind == None {
		return append(b, '}'), nil
	}
	bo := &s.Backoff
	b = append(b, `,"backoff":{"kind":"`...)
	b = append(b, bo.Kind.String()...)
	b = append(b, `","base_delay_secs":`...)
	b = strconv.AppendInt(b, int64(bo.BaseDelay/time.Second), 10)
	if bo.Kind != Fixed {
		b = append(b, `,"multiplier":`...)
		b = appendMultiplier(b, bo.Multiplier)
		if bo.MaxDelay != 0 {
			b = append(b, `,"max_delay_secs":`...)
			b = strconv.AppendInt(b, int64(bo.MaxDelay/time.Second), 10)
		}
	}
	return append(b, "}}"...), nil
}

// topFields and backoffFields map the descriptor's keys to fields.
var (
	topFields = map[string]field{
		"strategy": fStrategy, "max_attempts": fMaxAttempts, "window_secs": fWindow, "backoff": fBackoff,
	}
	backoffFields = map[string]field{
		"kind": fKind, "base_delay_secs": fBase, "multiplier": fMultiplier, "max_delay_secs": fMaxDelay,
	}
)

// errTooDeep stops reading a document nested deeper than maxDepth.
var errTooDeep = errors.New("nested deeper than " + strconv.Itoa(maxDepth) + " levels")

// docReader reads a strategy document, data, into d, recording problems
// with keys (unknown, duplicate) and with the document in p; offset is
// where data starts in what the caller was given.
type docReader struct {
	data   []byte
	offset int
	d      *draft
	p      *problems
	dec    *json.Decoder
}

// document reads the document. It returns false when it is not a JSON
// object that can be read to its closing brace.
func (r *docReader) document() bool {
	r.dec = json.NewDecoder(bytes.NewReader(r.data))
	r.dec.UseNumber()
	tok, err := r.dec.Token()
	if err != nil {
		return r.refuse(err)
	}
	if tok != json.Delim('{') {
		v, err := readValue(r.dec, tok, 1)
		if err != nil {
			return r.refuse(err)
		}
		r.p.addDoc("must be a JSON object", v.shown())
		return false
	}
	if err := r.object(topObject, 1); err != nil {
		return r.refuse(err)
	}
	if _, err := r.dec.Token(); err != io.EOF {
		// The object itself was read whole: its fields are still checked.
		r.p.addDoc("must hold one JSON object and nothing after it", "")
	}
	return true
}

// refuse records err, which stopped the reading, as a problem with the
// document as a whole, and returns false.
func (r *docReader) refuse(err error) bool {
	if errors.Is(err, errTooDeep) {
		r.p.addDoc("must not be "+err.Error(), "")
		return false
	}
	r.p.addDoc(jsondoc.Problem(r.data, r.offset, err))
	return false
}

// objectKind is one of the descriptor's objects: the keys it knows, its
// path ("" or "backoff."), and where its unknown keys place among the
// problems.
type objectKind struct {
	fields       map[string]field
	prefix       string
	unknownOrder int
}

// The descriptor's two objects.
var (
	topObject     = objectKind{topFields, "", orderTop}
	backoffObject = objectKind{backoffFields, "backoff.", orderBackoff}
)

// object reads the members of an object of kind obj whose '{' has been
// read, up to and including its '}'; depth is its nesting level.
func (r *docReader) object(obj objectKind, depth int) error {
	dec, d, p, fields := r.dec, r.d, r.p, obj.fields
	var seen [numFields]bool
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if tok, err = dec.Token(); err != nil {
			return err
		}
		f, known := fields[key]
		if known && f == fBackoff && tok == json.Delim('{') {
			if seen[f] {
				p.add(f, "duplicate key", "")
			}
			seen[f] = true
			d.v[f] = rawValue{kind: rawObject}
			if err := r.object(backoffObject, depth+1); err != nil {
				return err
			}
			continue
		}
		v, err := readValue(dec, tok, depth+1)
		if err != nil {
			return err
		}
		switch {
		case !known:
			p.addUnknown(obj.unknownOrder, obj.prefix+echo.Text(key), "unknown field"+echo.Suggest(key, fields))
		case seen[f]:
			p.add(f, "duplicate key", "")
		default:
			seen[f] = true
			d.v[f] = v
		}
	}
	_, err := dec.Token() // the closing '}'
	return err
}

// readValue reads the value that starts with tok, skipping the contents of
// arrays and objects, at nesting depth (the enclosing object being depth-1).
func readValue(dec *json.Decoder, tok json.Token, depth int) (rawValue, error) {
	switch t := tok.(type) {
	case nil:
		return rawValue{kind: rawNull}, nil
	case string:
		return rawValue{kind: rawString, text: t}, nil
	case json.Number:
		return rawValue{kind: rawNumber, text: string(t)}, nil
	case bool:
		return rawValue{kind: rawBool, text: strconv.FormatBool(t)}, nil
	case json.Delim:
		kind := rawArray
		if t == '{' {
			kind = rawObject
		}
		return rawValue{kind: kind}, skipNested(dec, depth)
	}
	return rawValue{}, errors.New("unexpected token")
}

// skipNested skips to the end of the array or object just opened at depth.
func skipNested(dec *json.Decoder, depth int) error {
	open := 1
	for open > 0 {
		if depth+open-1 > maxDepth {
			return errTooDeep
		}
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			open++
		case json.Delim('}'), json.Delim(']'):
			open--
		}
	}
	return nil
}

// seconds is a duration in the JSON form's unit: decimal seconds, exactly
// (8, 1.5, 0.000000001).
type seconds time.Duration

// MarshalText writes s as decimal seconds, for slog's text output.
func (s seconds) MarshalText() ([]byte, error) { return wire.AppendSeconds(nil, time.Duration(s)), nil }

// MarshalJSON writes s as a JSON number of seconds.
func (s seconds) MarshalJSON() ([]byte, error) { return wire.AppendSeconds(nil, time.Duration(s)), nil }

// dueLayout is RFC 3339 with all nine digits of nanoseconds.
const dueLayout = "2006-01-02T15:04:05.000000000Z07:00"

// The span of times RFC 3339 can write: four-digit years.
var (
	firstRFC3339 = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	lastRFC3339  = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

// appendDue writes t in UTC as RFC 3339 with nanoseconds, saturating at the
// first and last times RFC 3339 can write.
func appendDue(b []byte, t time.Time) []byte {
	switch {
	case t.Before(firstRFC3339):
		t = firstRFC3339
	case t.After(lastRFC3339):
		t = lastRFC3339
	}
	return t.UTC().AppendFormat(b, dueLayout)
}

// MarshalJSON writes d as the command prints it: action, reason (when
// fatal), failures_in_window, then owed_secs, delay_secs, jitter_secs
// (exact decimal seconds) and due (RFC 3339 in UTC, saturating at the end of
// year 9999) unless fatal. It fails for an action or reason out of range.
func (d Decision) MarshalJSON() ([]byte, error) {
	if !actionEnum.valid(uint8(d.Action)) || !reasonEnum.valid(uint8(d.Reason)) {
		return nil, errors.New("retrypolicy: decision: invalid action " + d.Action.String() + " or reason " + d.Reason.String())
	}
	b := make([]byte, 0, 160)
	b = append(b, `{"action":"`...)
	b = append(b, d.Action.String()...)
	if d.Action == Fatal {
		b = append(b, `","reason":"`...)
		b = append(b, d.Reason.String()...)
	}
	b = append(b, `","failures_in_window":`...)
	b = strconv.AppendInt(b, int64(d.InWindow), 10)
	if d.Action == Fatal {
		return append(b, '}'), nil
	}
	b = append(b, `,"owed_secs":`...)
	b = wire.AppendSeconds(b, d.Owed)
	b = append(b, `,"delay_secs":`...)
	b = wire.AppendSeconds(b, d.Delay)
	b = append(b, `,"jitter_secs":`...)
	b = wire.AppendSeconds(b, d.Jitter)
	b = append(b, `,"due":"`...)
	b = appendDue(b, d.Due)
	return append(b, `"}`...), nil
}

// decisionKeys are the keys of a decision's JSON form, in their order.
var decisionKeys = [...]string{"action", "reason", "failures_in_window", "owed_secs", "delay_secs", "jitter_secs", "due"}

// Indexes into decisionKeys.
const (
	keyAction = iota
	keyReason
	keyInWindow
	keyOwed // the first of the three delays
	keyDue  = 6
)

// UnmarshalJSON reads the form MarshalJSON writes, strictly: unknown and
// duplicate keys, wrong types, and fields missing or out of place for the
// action are errors, which leave d unchanged. null leaves d unchanged.
func (d *Decision) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		return nil
	}
	var v Decision
	seen, err := v.readFields(data)
	if err != nil {
		return err
	}
	if err := v.checkPresence(seen); err != nil {
		return err
	}
	*d = v
	return nil
}

// decisionError is a problem with a decision's JSON form.
func decisionError(key, rule string) error {
	return errors.New("retrypolicy: decision: " + key + ": " + rule)
}

// readFields reads the members of a decision's JSON object into v, and
// returns which keys it held.
func (v *Decision) readFields(data []byte) (seen [len(decisionKeys)]bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return seen, decisionError("$", "must be a JSON object")
	}
	invalid := decisionError("$", "must be valid JSON")
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return seen, invalid
		}
		key, _ := tok.(string)
		i := slices.Index(decisionKeys[:], key)
		switch {
		case i < 0:
			return seen, decisionError(echo.Text(key), "unknown field")
		case seen[i]:
			return seen, decisionError(key, "duplicate key")
		}
		seen[i] = true
		if tok, err = dec.Token(); err != nil {
			return seen, invalid
		}
		if err := v.setField(i, tok); err != nil {
			return seen, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return seen, invalid
	}
	if _, err := dec.Token(); err != io.EOF {
		return seen, decisionError("$", "must hold one JSON object and nothing after it")
	}
	return seen, nil
}

// setField sets the field of decisionKeys[i] from its JSON value tok.
func (v *Decision) setField(i int, tok json.Token) error {
	key := decisionKeys[i]
	text, isString := tok.(string)
	num, isNumber := tok.(json.Number)
	if wantString := i == keyAction || i == keyReason || i == keyDue; wantString != isString || !wantString && !isNumber {
		if wantString {
			return decisionError(key, "must be a string")
		}
		return decisionError(key, "must be a number")
	}
	return v.setValue(i, text, num)
}

// setValue sets the field of decisionKeys[i] from its text or number.
func (v *Decision) setValue(i int, text string, num json.Number) error {
	key := decisionKeys[i]
	var err error
	switch i {
	case keyAction:
		err = v.Action.UnmarshalText([]byte(text))
	case keyReason:
		err = v.Reason.UnmarshalText([]byte(text))
	case keyInWindow:
		n, st := decimalInt(string(num))
		if st != numOK || n < 1 || n > math.MaxInt {
			return decisionError(key, "must be a whole number of at least 1")
		}
		v.InWindow = int(n)
	case keyDue:
		if v.Due, err = time.Parse(time.RFC3339Nano, text); err != nil {
			return decisionError(key, "must be an RFC 3339 time")
		}
	default:
		ns, st := decimalScaled(string(num), 9)
		if st != numOK || ns < 0 {
			return decisionError(key, "must be a non-negative number of seconds, to the nanosecond")
		}
		*[...]*time.Duration{&v.Owed, &v.Delay, &v.Jitter}[i-keyOwed] = time.Duration(ns)
	}
	if err != nil {
		return decisionError(key, err.Error())
	}
	return nil
}

// checkPresence checks that the keys v was read from are those its action
// needs.
func (v *Decision) checkPresence(seen [len(decisionKeys)]bool) error {
	for _, i := range []int{keyAction, keyInWindow} {
		if !seen[i] {
			return decisionError(decisionKeys[i], "required")
		}
	}
	fatal := v.Action == Fatal
	if fatal && v.Reason == 0 {
		return decisionError("reason", "required when action is fatal")
	}
	if !fatal && seen[keyReason] {
		return decisionError("reason", "not allowed when action is "+v.Action.String())
	}
	for i := keyOwed; i < len(decisionKeys); i++ {
		switch {
		case fatal && seen[i]:
			return decisionError(decisionKeys[i], "not allowed when action is fatal")
		case !fatal && !seen[i]:
			return decisionError(decisionKeys[i], "required when action is "+v.Action.String())
		}
	}
	return nil
}

// MarshalJSON writes the history as a JSON object: "failures", an array of
// RFC 3339 times in UTC, oldest first, and "last_uptime_secs", in seconds.
func (h *History) MarshalJSON() ([]byte, error) {
	ts, up := h.failures()
	b := []byte(`{"failures":[`)
	for i, ns := range ts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = time.Unix(0, ns).UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	b = append(b, `],"last_uptime_secs":`...)
	return append(wire.AppendSeconds(b, up), '}'), nil
}

// UnmarshalJSON replaces the history with one MarshalJSON wrote, its
// failures in any order, keeping those within the window of the newest.
// null leaves h unchanged; so does an error.
func (h *History) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if string(data) == "null" {
		return nil
	}
	var doc struct {
		Failures []time.Time     `json:"failures"`
		Up       json.RawMessage `json:"last_uptime_secs"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(&doc)
	up, st := decimalScaled(string(doc.Up), 9) // seconds, to the nanosecond
	if err != nil || doc.Failures == nil || dec.InputOffset() != int64(len(data)) || st != numOK || up < 0 {
		return errors.New(`retrypolicy: history: must be {"failures": [RFC 3339 times], "last_uptime_secs": seconds >= 0}`)
	}
	ns := make([]int64, len(doc.Failures))
	for i, t := range doc.Failures {
		var ok bool
		if ns[i], ok = unixNano(t); !ok {
			return errors.New("retrypolicy: history: failures[" + strconv.Itoa(i) + "]: " + errTimeOutOfRange.Error()[len("retrypolicy: "):])
		}
	}
	slices.Sort(ns)
	h.replace(ns, time.Duration(up))
	return nil
}
