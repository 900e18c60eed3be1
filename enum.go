package retrypolicy

import (
	"strconv"
	"strings"

	"github.com/retrypolicy/retrypolicy/internal/echo"
)

// enum is the text form of one of the package's small enumerations (the
// kinds, Action, Reason): names by value, names[0] being "" when the zero
// value has no name. Each type's String, MarshalText and UnmarshalText are
// one line over it.
type enum struct {
	typ   string // the Go type, for String of a value without a name
	what  string // what a value is, for errors ("strategy")
	names []string
	zero  bool // the zero value is valid, with the name ""
}

func (e *enum) valid(v uint8) bool { return int(v) < len(e.names) && (v > 0 || e.zero) }

// string returns v's name, or "TYPE(v)" for a value without one.
func (e *enum) string(v uint8) string {
	if e.valid(v) {
		return e.names[v]
	}
	return e.typ + "(" + strconv.Itoa(int(v)) + ")"
}

// marshal returns v's name, or an error for a value without one.
func (e *enum) marshal(v uint8) ([]byte, error) {
	if !e.valid(v) {
		return nil, &textError{what: e.what, text: strconv.Itoa(int(v)), names: e.names}
	}
	return []byte(e.names[v]), nil
}

// unmarshal sets *v to the value whose name is text, exactly, and leaves it
// unchanged on error.
func (e *enum) unmarshal(text []byte, v *uint8) error {
	i, ok := e.lookup(string(text))
	if !ok {
		return &textError{what: e.what, text: echo.Quote(string(text)), names: e.names}
	}
	*v = i
	return nil
}

// lookup returns the value named name.
func (e *enum) lookup(name string) (uint8, bool) {
	for i, n := range e.names {
		if name == n && e.valid(uint8(i)) {
			return uint8(i), true
		}
	}
	return 0, false
}

// textError is a text that names no value of an enumeration.
type textError struct {
	what, text string
	names      []string
}

func (e *textError) Error() string {
	return "retrypolicy: " + e.text + " is not a " + e.what + ", " + oneOf(e.names)
}

// oneOf phrases a choice among names (names[0], "", is skipped).
func oneOf(names []string) string {
	return "one of " + strings.Join(names[1:], ", ")
}
