package retrypolicy

import (
	"errors"
	"slices"
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

// maxProblems is the most problems a ValidationError lists.
const maxProblems = 20

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

// problems collects the problems of one strategy, each placed for ordering.
// A field gets one problem at most: the first found.
type problems struct {
	nm   *naming
	list []problem
	bad  [numFields]bool
}

type problem struct {
	order int // twice the field's index; other problems fall between
	err   FieldError
}

// Places of problems that are not about a known field.
const (
	orderDoc     = -1                  // the document as a whole
	orderTop     = int(fBackoff)*2 - 1 // an unknown key of the strategy object
	orderBackoff = int(numFields) * 2  // an unknown key of the backoff object
)

// add records a problem with field f.
func (p *problems) add(f field, rule, value string) {
	p.addPhrased(f, rule, value, false)
}

func (p *problems) addPhrased(f field, rule, value string, phrase bool) {
	if p.bad[f] {
		return
	}
	p.bad[f] = true
	p.list = append(p.list, problem{order: int(f) * 2, err: FieldError{Field: p.nm.names[f], Rule: rule, Value: value, phrase: phrase}})
}

// addAt records a problem at a path that is not a known field.
func (p *problems) addAt(order int, path, rule, value string) {
	p.list = append(p.list, problem{order: order, err: FieldError{Field: path, Rule: rule, Value: value}})
}

// err returns the problems as a *ValidationError, or nil when there are none.
func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	slices.SortStableFunc(p.list, func(a, b problem) int { return a.order - b.order })
	shown := p.list[:min(len(p.list), maxProblems)]
	ve := &ValidationError{Errors: make([]FieldError, len(shown)), Omitted: len(p.list) - len(shown)}
	for i, pr := range shown {
		ve.Errors[i] = pr.err
	}
	return ve
}

// oneOf phrases a choice among names (names[0], "", is skipped).
func oneOf(names []string) string {
	return "one of " + strings.Join(names[1:], ", ")
}
