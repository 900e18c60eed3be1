package retrypolicy

import (
	"errors"
	"strconv"
	"strings"
)

// ErrInvalid is the sentinel every *ValidationError matches with errors.Is:
// the strategy is invalid (a server answers 400 INVALID_BODY).
var ErrInvalid = errors.New("retrypolicy: invalid retry strategy")

// FieldError is one problem with a strategy.
type FieldError struct {
	// Field is what is wrong: the JSON path within the strategy object
	// ("backoff.multiplier"), "$" for the document as a whole, or the flag
	// as users type it ("--retry-multiplier").
	Field string
	// Rule is the rule the field broke ("must be greater than 0").
	Rule string
	// Value is the offending value, escaped and cut short, or "".
	Value string

	// phrase: Rule reads on from the flag's name ("--retry-max-attempts is
	// only valid when …") instead of following a colon.
	phrase bool
}

// Error returns the problem as one line, without the package prefix:
// "FIELD: RULE, got VALUE", or "FLAG RULE" for a rule phrased on a flag.
func (e FieldError) Error() string {
	switch {
	case e.phrase:
		return e.Field + " " + e.Rule
	case e.Value == "":
		return e.Field + ": " + e.Rule
	}
	return e.Field + ": " + e.Rule + ", got " + e.Value
}

// ValidationError lists the problems of an invalid strategy in a stable
// order: the document first, then the descriptor's fields in their order,
// unknown fields after their object's known ones.
type ValidationError struct {
	// Errors holds the first problems, at most 20; it is never empty.
	Errors []FieldError
	// Omitted counts the problems found beyond those in Errors.
	Omitted int
}

// Error returns one line per problem, each prefixed "retrypolicy: ", and a
// last line counting the omitted ones.
func (e *ValidationError) Error() string {
	var b strings.Builder
	for i, fe := range e.Errors {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("retrypolicy: ")
		b.WriteString(fe.Error())
	}
	if e.Omitted > 0 {
		b.WriteString("\nretrypolicy: and " + strconv.Itoa(e.Omitted) + " more")
	}
	return b.String()
}

// Is reports whether target is ErrInvalid.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }
