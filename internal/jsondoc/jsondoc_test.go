package jsondoc

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"pgregory.net/rapid"
)

// TestSyntaxProblem: offsets count from zero, plus the offset given;
// an empty document and one cut short are told apart.
func TestSyntaxProblem(t *testing.T) {
	for _, tc := range []struct {
		doc    string
		offset int
		want   string
	}{
		{`{"a":1}`, 0, ""},
		{`{"a":1} [2]`, 0, ""},
		{"", 0, "must be a JSON object, got an empty document"},
		{" \n\t", 3, "must be a JSON object, got an empty document"},
		{`{"a"`, 0, "must be valid JSON (unexpected end of input at byte 4)"},
		{`{"a":[`, 3, "must be valid JSON (unexpected end of input at byte 9)"},
		{`{"a" 1}`, 0, "must be valid JSON (invalid character '1' after object key at byte 5)"},
		{`{"a" 1}`, 3, "must be valid JSON (invalid character '1' after object key at byte 8)"},
	} {
		assert.Equal(t, tc.want, SyntaxProblem([]byte(tc.doc), tc.offset), "%q", tc.doc)
	}
}

// TestSyntaxProblemIsEmptyExactlyForWellFormedStreams: a document has no
// problem exactly when encoding/json reads it as one value or more.
func TestSyntaxProblemIsEmptyExactlyForWellFormedStreams(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		doc := rapid.SliceOf(rapid.SampledFrom([]byte(`{}[]":,01e.-tnul ab\`))).Draw(t, "doc")
		values, wellFormed := 0, true
		for dec := json.NewDecoder(bytes.NewReader(doc)); ; values++ {
			var v any
			if err := dec.Decode(&v); err == io.EOF {
				break
			} else if err != nil {
				wellFormed = false
				break
			}
		}
		wellFormed = wellFormed && values > 0
		assert.Equal(t, wellFormed, SyntaxProblem(doc, 0) == "", "%q: %s", doc, SyntaxProblem(doc, 0))
	})
}
