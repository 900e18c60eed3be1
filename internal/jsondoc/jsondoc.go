// Package jsondoc words what is wrong with a JSON document as a whole.
//
// The library and the command say it the same way: a syntax error at the
// byte the user can find it, input that ends too soon, or no document at
// all.
package jsondoc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
)

// Problem words the error err that reading doc with encoding/json met, for
// the document's path "$", as a rule and what was got instead ("" when the
// rule says it all); offset is where doc starts in what the user gave
// (after a byte-order mark, say), so that byte offsets count from there.
func Problem(doc []byte, offset int, err error) (rule, got string) {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return "must be valid JSON (" + se.Error() + " at byte " + strconv.FormatInt(se.Offset+int64(offset), 10) + ")", ""
	case len(bytes.TrimSpace(doc)) == 0:
		return "must be a JSON object", "an empty document"
	}
	return "must be valid JSON (unexpected end of input at byte " + strconv.Itoa(len(doc)+offset) + ")", ""
}

// Text joins a rule and what was got as a message says them.
func Text(rule, got string) string {
	if got == "" {
		return rule
	}
	return rule + ", got " + got
}

// SyntaxProblem reads doc token by token, as a decoder that met a problem
// would have, and words the first syntax error or early end it finds, as
// Text does, or returns "" when doc is a well-formed stream of JSON values.
func SyntaxProblem(doc []byte, offset int) string {
	if len(bytes.TrimSpace(doc)) == 0 {
		return Text(Problem(doc, offset, nil))
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			if errors.Is(err, io.EOF) && depth == 0 {
				return ""
			}
			return Text(Problem(doc, offset, err))
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}
