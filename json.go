package retrypolicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"time"
)

// Limits on what Parse and Decode read. A strategy object is a few hundred
// bytes and two levels deep; anything far larger is refused before it is
// read whole.
const (
	// MaxDocumentSize is the largest document Parse and Decode accept, in bytes.
	MaxDocumentSize = 64 << 10
	// MaxDepth is the deepest nesting of arrays and objects they accept,
	// the strategy object itself being level 1.
	MaxDepth = 16
)

// Parse reads one strategy object, the value of a request's retry_strategy,
// strictly: unknown fields, duplicate keys, wrong JSON types, fractions in
// integer fields, out-of-range numbers, fields the strategy or backoff kind
// does not allow, missing required fields and trailing data are all errors.
// null in an optional field means the field is absent. Omitted fields take
// their defaults; an omitted backoff is [DefaultBackoff].
//
// On error Parse returns the zero Strategy and a *ValidationError listing
// every problem, each named by its JSON path ("$" for the document as a
// whole); the error matches ErrInvalid with errors.Is.
func Parse(data []byte) (Strategy, error) {
	p := problems{nm: &jsonNaming}
	if len(data) > MaxDocumentSize {
		p.addAt(orderDoc, "$", "must be at most "+strconv.Itoa(MaxDocumentSize)+" bytes", strconv.Itoa(len(data))+" bytes")
		return Strategy{}, p.err()
	}
	var d draft
	if !readDocument(data, &d, &p) {
		return Strategy{}, p.err()
	}
	s := d.build(&p)
	if err := p.err(); err != nil {
		return Strategy{}, err
	}
	return s, nil
}

// Decode reads one strategy object from r as Parse does. It reads at most
// MaxDocumentSize+1 bytes, so a larger document is refused without being
// read whole. An error reading r is returned as it is, not as a
// *ValidationError.
func Decode(r io.Reader) (Strategy, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxDocumentSize+1))
	if err != nil {
		return Strategy{}, err
	}
	return Parse(data)
}

// UnmarshalJSON implements json.Unmarshaler with Parse's rules. JSON null
// sets the default strategy, as a request without a strategy gets it. On
// error s is left unchanged.
//
// A request struct whose strategy field may be missing should start from
// Default(), since encoding/json does not call UnmarshalJSON for a missing key.
func (s *Strategy) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		*s = Default()
		return nil
	}
	v, err := Parse(data)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// MarshalJSON implements json.Marshaler with the canonical encoding; see
// AppendJSON.
func (s Strategy) MarshalJSON() ([]byte, error) {
	return s.AppendJSON(nil)
}

// AppendJSON appends the canonical JSON encoding of s to b: fields in the
// descriptor's order, every field that applies written with its value, those
// that do not apply left out, no white space. Encoding is deterministic, and
// Parse of the result returns s. An invalid s is not encoded: AppendJSON
// returns b unchanged and the validation error.
func (s Strategy) AppendJSON(b []byte) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return b, err
	}
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
	bo := s.Backoff
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

// errTooDeep stops reading a document nested deeper than MaxDepth.
var errTooDeep = errors.New("nested deeper than " + strconv.Itoa(MaxDepth) + " levels")

// readDocument reads data into d, recording problems with keys (unknown,
// duplicate) and with the document. It returns false when the document is
// not a JSON object that can be read to its closing brace.
func readDocument(data []byte, d *draft, p *problems) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return docError(p, err)
	}
	if tok != json.Delim('{') {
		v, err := readValue(dec, tok, 1)
		if err != nil {
			return docError(p, err)
		}
		p.addAt(orderDoc, "$", "must be a JSON object", v.shown())
		return false
	}
	if err := readObject(dec, d, p, topFields, "", orderTop, 1); err != nil {
		return docError(p, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		// The object itself was read whole: its fields are still checked.
		p.addAt(orderDoc, "$", "must hold one JSON object and nothing after it", "")
	}
	return true
}

// docError records a problem with the document as a whole.
func docError(p *problems, err error) bool {
	switch {
	case err == io.EOF:
		p.addAt(orderDoc, "$", "must be a JSON object", "an empty document")
	case errors.Is(err, errTooDeep):
		p.addAt(orderDoc, "$", "must not be "+err.Error(), "")
	default:
		var se *json.SyntaxError
		if errors.As(err, &se) {
			p.addAt(orderDoc, "$", "must be valid JSON ("+se.Error()+" at byte "+strconv.FormatInt(se.Offset, 10)+")", "")
		} else {
			p.addAt(orderDoc, "$", "must be valid JSON ("+err.Error()+")", "")
		}
	}
	return false
}

// readObject reads the members of an object whose '{' has been read, up to
// and including its '}'. fields maps the keys it knows; prefix is the
// object's path ("" or "backoff."); unknownOrder places unknown keys; depth
// is the object's nesting level.
func readObject(dec *json.Decoder, d *draft, p *problems, fields map[string]field, prefix string, unknownOrder, depth int) error {
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
			if err := readObject(dec, d, p, backoffFields, "backoff.", orderBackoff, depth+1); err != nil {
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
			p.addAt(unknownOrder, prefix+key, "unknown field", "")
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
		if depth+open-1 > MaxDepth {
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
