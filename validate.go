package retrypolicy

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrInvalid is the sentinel every validation error matches with errors.Is:
// the strategy descriptor is invalid (a server answers 400 INVALID_BODY).
var ErrInvalid = errors.New("retrypolicy: invalid retry strategy")

// FieldError is one problem with a strategy descriptor.
type FieldError struct {
	// Field names what is wrong: the JSON path within the strategy object
	// ("backoff.multiplier"), "$" for the document as a whole, or, for
	// flags, the flag as typed ("--retry-multiplier").
	Field string
	// Rule is the rule the field broke, as a phrase ("must be greater than 0").
	Rule string
	// Value is the offending value as given (JSON text, or the flag's
	// argument quoted), or "" when the field is missing.
	Value string

	// phrase: Rule reads on from the field's name ("--retry-max-attempts
	// is only valid when …"), as flag errors do, rather than after a colon.
	phrase bool
}

// Error returns "retrypolicy: " and the Message.
func (e *FieldError) Error() string {
	return "retrypolicy: " + e.Message()
}

// Message is Error without the package prefix: "FIELD: RULE[, got VALUE]",
// or for some flag errors "FLAG RULE" ("--retry-max-attempts is only valid
// when --retry-strategy=bounded").
func (e *FieldError) Message() string {
	if e.phrase {
		return e.Field + " " + e.Rule
	}
	if e.Value == "" {
		return e.Field + ": " + e.Rule
	}
	return e.Field + ": " + e.Rule + ", got " + e.Value
}

// Is reports whether target is ErrInvalid.
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

// ValidationError lists every problem found in a descriptor, in a stable
// order: the order of the descriptor's fields (strategy, max_attempts,
// window_secs, backoff and its fields), problems with the document as a
// whole first and unknown fields after their object's known ones.
type ValidationError struct {
	// Errors holds one entry per problem; it is never empty.
	Errors []*FieldError
}

// Error returns the problems' messages, one per line.
func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		lines[i] = fe.Error()
	}
	return strings.Join(lines, "\n")
}

// Is reports whether target is ErrInvalid.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// Unwrap returns the field errors, so that errors.As finds a *FieldError.
func (e *ValidationError) Unwrap() []error {
	errs := make([]error, len(e.Errors))
	for i, fe := range e.Errors {
		errs[i] = fe
	}
	return errs
}

// WithPrefix returns a copy of e whose JSON paths start with prefix and a
// dot, for a caller that embeds the strategy object in a larger document
// (WithPrefix("retry_strategy") turns "backoff.kind" into
// "retry_strategy.backoff.kind", and "$" into "retry_strategy"). Flag names
// are left as they are.
func (e *ValidationError) WithPrefix(prefix string) *ValidationError {
	out := &ValidationError{Errors: make([]*FieldError, len(e.Errors))}
	for i, fe := range e.Errors {
		c := *fe
		switch {
		case strings.HasPrefix(c.Field, "--"):
		case c.Field == "$":
			c.Field = prefix
		default:
			c.Field = prefix + "." + c.Field
		}
		out.Errors[i] = &c
	}
	return out
}

// field identifies a descriptor field; the order is the descriptor's.
type field uint8

const (
	fStrategy field = iota
	fMaxAttempts
	fWindow
	fBackoff
	fKind
	fBase
	fMultiplier
	fMaxDelay
	numFields
)

// naming says how errors name fields: by JSON path for descriptors and Go
// values, by flag for the command line, where rules tied to other fields and
// unreadable values are phrased as ampctl phrases them.
type naming struct {
	names [numFields]string
	flags bool
}

var jsonNaming = naming{
	names: [numFields]string{"strategy", "max_attempts", "window_secs", "backoff",
		"backoff.kind", "backoff.base_delay_secs", "backoff.multiplier", "backoff.max_delay_secs"},
}

var flagNaming = naming{
	names: [numFields]string{"--retry-strategy", "--retry-max-attempts", "--retry-window-secs", "--retry-backoff",
		"--retry-backoff", "--retry-base-delay-secs", "--retry-multiplier", "--retry-max-delay-secs"},
	flags: true,
}

// problems collects field errors tagged with their field, for ordering.
type problems struct {
	nm   *naming
	list []problem
	bad  [numFields]bool // a field already has an error
}

type problem struct {
	order int // field index; unknown fields and "$" get their own places
	err   *FieldError
}

// add records a problem with field f; a field gets one problem at most, the
// first found.
func (p *problems) add(f field, rule, value string) {
	if p.bad[f] {
		return
	}
	p.bad[f] = true
	p.list = append(p.list, problem{order: int(f) * 2, err: &FieldError{Field: p.nm.names[f], Rule: rule, Value: value}})
}

// addPhrase records a problem with f whose rule reads on from its name.
func (p *problems) addPhrase(f field, rule string) {
	if p.bad[f] {
		return
	}
	p.add(f, rule, "")
	p.list[len(p.list)-1].err.phrase = true
}

// addTied records that f is only valid (only) or not allowed (!only) when
// field other has value; shown is f's value.
func (p *problems) addTied(f field, only bool, other field, value, shown string) {
	verb := "not allowed when "
	if only {
		verb = "only valid when "
	}
	if p.nm.flags {
		p.addPhrase(f, "is "+verb+p.nm.names[other]+"="+value)
		return
	}
	p.add(f, verb+p.nm.names[other]+" is "+value, shown)
}

// addNotA records that v, given for f, is not what the field takes ("an
// integer", "a number", …).
func (p *problems) addNotA(f field, v rawValue, what string) {
	if v.kind == rawArg {
		p.add(f, v.shown()+" is not "+what, "")
		return
	}
	p.add(f, "must be "+what, v.shown())
}

// addAt records a problem at a free-form path placed at order.
func (p *problems) addAt(order int, path, rule, value string) {
	p.list = append(p.list, problem{order: order, err: &FieldError{Field: path, Rule: rule, Value: value}})
}

// orderDoc, orderTop and orderBackoff place problems that are not about a
// known field: the document first, unknown fields after their object's
// known fields.
const (
	orderDoc     = -1
	orderTop     = int(fBackoff)*2 - 1 // after window_secs, before backoff
	orderBackoff = int(numFields) * 2  // after the backoff's fields
)

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	// Insertion sort: stable, and the lists are a handful long.
	for i := 1; i < len(p.list); i++ {
		for j := i; j > 0 && p.list[j-1].order > p.list[j].order; j-- {
			p.list[j-1], p.list[j] = p.list[j], p.list[j-1]
		}
	}
	ve := &ValidationError{Errors: make([]*FieldError, len(p.list))}
	for i, pr := range p.list {
		ve.Errors[i] = pr.err
	}
	return ve
}

// maxDelaySecs is the longest delay a descriptor may give: the longest
// time.Duration in whole seconds.
const maxDelaySecs = int64(math.MaxInt64 / int64(time.Second))

// Validate reports whether s is a strategy the descriptor can express and the
// semantics allow. It returns nil or a *ValidationError listing every problem,
// each named by the JSON path of the field ("backoff.multiplier"). It does not
// allocate when s is valid.
func (s Strategy) Validate() error {
	if s.valid() {
		return nil
	}
	p := problems{nm: &jsonNaming}
	s.check(&p)
	return p.err()
}

// valid is the allocation-free fast path of Validate: the same rules as
// check. It takes a pointer so that Decide does not copy the strategy.
func (s *Strategy) valid() bool {
	switch s.Kind {
	case None:
		return s.MaxAttempts == 0 && s.Window == 0 && s.Backoff == (Backoff{})
	case Bounded:
		if s.MaxAttempts < 1 || !wholeSecondsIn(s.Window, time.Second, MaxWindow) {
			return false
		}
	case UnlessStopped:
		if s.MaxAttempts != 0 || s.Window != 0 {
			return false
		}
	default:
		return false
	}
	b := &s.Backoff
	if !wholeSecondsIn(b.BaseDelay, time.Second, math.MaxInt64) {
		return false
	}
	switch b.Kind {
	case Fixed:
		return b.Multiplier == 0 && b.MaxDelay == 0
	case Exponential, ExponentialWithJitter:
		return b.Multiplier > 0 && !math.IsInf(b.Multiplier, 1) &&
			(b.MaxDelay == 0 || wholeSecondsIn(b.MaxDelay, b.BaseDelay, math.MaxInt64))
	}
	return false
}

// wholeSecondsIn reports whether d is a whole number of seconds in [lo, hi].
func wholeSecondsIn(d, lo, hi time.Duration) bool {
	return d >= lo && d <= hi && d%time.Second == 0
}

// check records every rule s breaks. On a Go value a field that does not
// apply is "given" when it is not zero.
func (s Strategy) check(p *problems) {
	switch s.Kind {
	case None, Bounded, UnlessStopped:
	case 0:
		p.add(fStrategy, "required", "")
	default:
		p.add(fStrategy, "must be one of none, bounded, unless_stopped", strconv.Itoa(int(s.Kind)))
	}
	if s.Kind == Bounded {
		checkMaxAttempts(p, s.MaxAttempts)
		checkWindow(p, s.Window)
	} else {
		if s.MaxAttempts != 0 {
			p.addTied(fMaxAttempts, true, fStrategy, Bounded.String(), strconv.Itoa(s.MaxAttempts))
		}
		if s.Window != 0 {
			p.addTied(fWindow, true, fStrategy, Bounded.String(), secondsText(s.Window))
		}
	}
	switch s.Kind {
	case None:
		if s.Backoff != (Backoff{}) {
			p.addTied(fBackoff, false, fStrategy, None.String(), "")
		}
	case Bounded, UnlessStopped:
		s.Backoff.check(p)
	}
}

func checkMaxAttempts(p *problems, n int) {
	if n < 1 {
		p.add(fMaxAttempts, "must be at least 1", strconv.Itoa(n))
	}
}

func checkWindow(p *problems, w time.Duration) {
	checkSeconds(p, fWindow, w, 1, int64(MaxWindow/time.Second))
}

// check records every rule b breaks, as the backoff of a strategy that retries.
func (b Backoff) check(p *problems) {
	switch b.Kind {
	case Fixed, Exponential, ExponentialWithJitter:
	case 0:
		p.add(fKind, "required", "")
	default:
		p.add(fKind, "must be one of fixed, exponential, exponential_with_jitter", strconv.Itoa(int(b.Kind)))
	}
	checkSeconds(p, fBase, b.BaseDelay, 1, maxDelaySecs)
	if b.Kind == Fixed {
		if b.Multiplier != 0 {
			p.addTied(fMultiplier, false, fKind, Fixed.String(), formatMultiplier(b.Multiplier))
		}
		if b.MaxDelay != 0 {
			p.addTied(fMaxDelay, false, fKind, Fixed.String(), secondsText(b.MaxDelay))
		}
		return
	}
	if !b.Kind.exponential() {
		return // the kind is already wrong; which fields apply is unknown
	}
	checkMultiplier(p, b.Multiplier, formatMultiplier(b.Multiplier))
	if b.MaxDelay != 0 {
		b.checkMaxDelay(p)
	}
}

// checkMultiplier checks m, shown in errors as shown.
func checkMultiplier(p *problems, m float64, shown string) {
	switch {
	case math.IsNaN(m) || math.IsInf(m, 0):
		p.add(fMultiplier, "must be finite", shown)
	case !(m > 0):
		p.add(fMultiplier, "must be greater than 0", shown)
	}
}

func (b Backoff) checkMaxDelay(p *problems) {
	if checkSeconds(p, fMaxDelay, b.MaxDelay, 1, maxDelaySecs) && !p.bad[fBase] && b.MaxDelay < b.BaseDelay {
		p.add(fMaxDelay, "must be at least "+p.nm.names[fBase]+" ("+secondsText(b.BaseDelay)+")", secondsText(b.MaxDelay))
	}
}

// checkSeconds records a problem unless d is a whole number of seconds in
// [lo, hi] seconds, and reports whether it is.
func checkSeconds(p *problems, f field, d time.Duration, lo, hi int64) bool {
	if d%time.Second != 0 {
		p.add(f, "must be a whole number of seconds", secondsText(d))
		return false
	}
	if secs := int64(d / time.Second); secs < lo || secs > hi {
		p.add(f, rangeRule(lo, hi), strconv.FormatInt(secs, 10))
		return false
	}
	return true
}

// rangeRule phrases the integer range [lo, hi].
func rangeRule(lo, hi int64) string {
	if hi == math.MaxInt64 {
		return "must be at least " + strconv.FormatInt(lo, 10)
	}
	return "must be between " + strconv.FormatInt(lo, 10) + " and " + strconv.FormatInt(hi, 10)
}

// secondsText renders a duration in the descriptor's unit: whole seconds as
// an integer, anything else as a Go duration ("1.5s").
func secondsText(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10)
	}
	return d.String()
}

// rawKind is the JSON type of a descriptor value, or rawArg for a flag's
// argument, whose type is whatever the field needs.
type rawKind uint8

const (
	rawAbsent rawKind = iota
	rawNull
	rawString
	rawNumber
	rawBool
	rawArray
	rawObject
	rawArg
)

// rawValue is one field of a descriptor as read, before any rule applies.
type rawValue struct {
	kind rawKind
	text string // the string's contents, the number's or bool's literal, the flag's argument
}

// given reports whether the field is there: null means absent.
func (v rawValue) given() bool { return v.kind != rawAbsent && v.kind != rawNull }

// shown renders the value for an error message.
func (v rawValue) shown() string {
	switch v.kind {
	case rawString, rawArg:
		return strconv.Quote(truncate(v.text))
	case rawArray:
		return "an array"
	case rawObject:
		return "an object"
	case rawNull:
		return "null"
	}
	return truncate(v.text)
}

func truncate(s string) string {
	const most = 64
	if len(s) <= most {
		return s
	}
	return s[:most] + "…"
}

// draft is a descriptor as read from JSON or from flags: which fields were
// given and how. build turns it into a Strategy under one set of rules.
type draft struct {
	v [numFields]rawValue
	// flagDefaults: the backoff of a retrying strategy is built from the
	// fields with the flags' defaults (exponential, 1 s, ×2, no cap), as
	// there is no backoff object to omit.
	flagDefaults bool
}

// build applies every rule of the descriptor to d, recording problems in p,
// and returns the strategy when there are none.
func (d *draft) build(p *problems) Strategy {
	nm := p.nm
	var s Strategy
	s.Kind = StrategyKind(parseName(p, fStrategy, d.v[fStrategy], strategyNames[:]))
	bounded := s.Kind == Bounded
	known := s.Kind != 0

	if v := d.v[fMaxAttempts]; v.given() {
		if n, ok := parseInt(p, fMaxAttempts, v, 1, math.MaxInt64); ok {
			switch {
			case known && !bounded:
				p.addTied(fMaxAttempts, true, fStrategy, Bounded.String(), v.shown())
			case n > math.MaxInt: // on 32-bit platforms
				p.add(fMaxAttempts, "must be at most "+strconv.Itoa(math.MaxInt), v.shown())
			default:
				s.MaxAttempts = int(n)
			}
		}
	} else if bounded {
		if nm.flags {
			p.addPhrase(fMaxAttempts, "is required when "+nm.names[fStrategy]+"="+Bounded.String())
		} else {
			p.add(fMaxAttempts, "required when "+nm.names[fStrategy]+" is "+Bounded.String(), "")
		}
	}

	if v := d.v[fWindow]; v.given() {
		if w, ok := parseSeconds(p, fWindow, v, 1, int64(MaxWindow/time.Second)); ok {
			if known && !bounded {
				p.addTied(fWindow, true, fStrategy, Bounded.String(), v.shown())
			} else {
				s.Window = w
			}
		}
	} else if bounded {
		s.Window = DefaultWindow
	}

	retries := s.Kind == Bounded || s.Kind == UnlessStopped
	if d.flagDefaults {
		if known && !retries {
			for f := fKind; f < numFields; f++ {
				if d.v[f].given() {
					p.addTied(f, false, fStrategy, s.Kind.String(), d.v[f].shown())
				}
			}
			return s
		}
		s.Backoff = d.buildBackoff(p, Exponential)
		return s
	}
	switch v := d.v[fBackoff]; {
	case v.kind == rawObject && known && !retries:
		p.addTied(fBackoff, false, fStrategy, s.Kind.String(), "")
	case v.kind == rawObject:
		s.Backoff = d.buildBackoff(p, 0)
	case v.given():
		p.add(fBackoff, "must be an object", v.shown())
	case retries:
		s.Backoff = DefaultBackoff()
	}
	return s
}

// buildBackoff reads the backoff's fields; defaultKind is the kind when none
// is given (0: the kind is required).
func (d *draft) buildBackoff(p *problems, defaultKind BackoffKind) Backoff {
	b := Backoff{Kind: defaultKind, BaseDelay: time.Second}
	if v := d.v[fKind]; v.given() || defaultKind == 0 {
		b.Kind = BackoffKind(parseName(p, fKind, v, backoffNames[:]))
	}
	if v := d.v[fBase]; v.given() {
		if base, ok := parseSeconds(p, fBase, v, 1, maxDelaySecs); ok {
			b.BaseDelay = base
		}
	}
	fixed := b.Kind == Fixed
	if v := d.v[fMultiplier]; v.given() {
		if m, ok := parseFloat(p, fMultiplier, v); ok {
			if fixed {
				p.addTied(fMultiplier, false, fKind, Fixed.String(), v.shown())
			} else {
				b.Multiplier = m
				checkMultiplier(p, m, v.shown())
			}
		}
	} else if !fixed {
		b.Multiplier = 2
	}
	if v := d.v[fMaxDelay]; v.given() {
		if md, ok := parseSeconds(p, fMaxDelay, v, 1, maxDelaySecs); ok {
			if fixed {
				p.addTied(fMaxDelay, false, fKind, Fixed.String(), v.shown())
			} else {
				b.MaxDelay = md
				b.checkMaxDelay(p)
			}
		}
	}
	return b
}

var (
	strategyNames = [...]string{"", "none", "bounded", "unless_stopped"}
	backoffNames  = [...]string{"", "fixed", "exponential", "exponential_with_jitter"}
)

// parseName reads one of names (index 0 unused) and returns its index, or 0
// with a problem recorded.
func parseName(p *problems, f field, v rawValue, names []string) int {
	if !v.given() {
		p.add(f, "required", "")
		return 0
	}
	if v.kind != rawString && v.kind != rawArg {
		p.addNotA(f, v, "a string")
		return 0
	}
	for i := 1; i < len(names); i++ {
		if v.text == names[i] {
			return i
		}
	}
	p.add(f, "must be one of "+strings.Join(names[1:], ", "), v.shown())
	return 0
}

// parseSeconds reads a whole number of seconds in [lo, hi].
func parseSeconds(p *problems, f field, v rawValue, lo, hi int64) (time.Duration, bool) {
	n, ok := parseInt(p, f, v, lo, hi)
	return time.Duration(n) * time.Second, ok
}

// parseInt reads an integer in [lo, hi] from a JSON number (or a flag's
// argument written as one). A whole number in any form (5, 5.0, 5e0, 50e-1)
// is accepted; a fraction is not.
func parseInt(p *problems, f field, v rawValue, lo, hi int64) (int64, bool) {
	if v.kind != rawNumber && v.kind != rawArg {
		p.addNotA(f, v, "an integer")
		return 0, false
	}
	n, status := decimalInt(v.text)
	switch {
	case status == numSyntax:
		p.addNotA(f, v, "an integer")
	case status == numFraction:
		p.addNotA(f, v, "a whole number")
	case status == numOverflow || n < lo || n > hi:
		p.add(f, rangeRule(lo, hi), v.shown())
	default:
		return n, true
	}
	return 0, false
}

// parseFloat reads a finite number.
func parseFloat(p *problems, f field, v rawValue) (float64, bool) {
	if v.kind != rawNumber && v.kind != rawArg {
		p.addNotA(f, v, "a number")
		return 0, false
	}
	if !isJSONNumber(v.text) {
		p.addNotA(f, v, "a number")
		return 0, false
	}
	m, err := strconv.ParseFloat(v.text, 64)
	if err != nil && math.IsInf(m, 0) {
		p.add(f, "must be finite", v.shown())
		return 0, false
	}
	return m, true
}

type numStatus uint8

const (
	numOK numStatus = iota
	numSyntax
	numFraction
	numOverflow
)

// decimalInt reads a JSON number exactly: its value when it is a whole number
// within int64, numFraction when it is not whole, numOverflow when it is whole
// but outside int64. It never rounds, so 5.0000000000000000001 is a fraction.
func decimalInt(s string) (int64, numStatus) {
	if !isJSONNumber(s) {
		return 0, numSyntax
	}
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	mant, exp := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp = s[:i], s[i+1:]
	}
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	// value = digits × 10^(e - len(frac))
	e := parseExponent(exp) - int64(len(frac))
	trimmed := strings.TrimRight(digits, "0")
	e += int64(len(digits) - len(trimmed))
	digits = trimmed
	if digits == "" {
		return 0, numOK
	}
	if e < 0 {
		return 0, numFraction
	}
	if int64(len(digits))+e > 19 {
		return 0, numOverflow
	}
	var u uint64
	for i := 0; i < len(digits); i++ {
		u = u*10 + uint64(digits[i]-'0')
	}
	for ; e > 0; e-- {
		u *= 10 // at most 19 digits in all: below 10^19 < 2^64
	}
	switch {
	case !neg && u <= math.MaxInt64:
		return int64(u), numOK
	case neg && u <= 1<<63:
		return -int64(u-1) - 1, numOK
	}
	return 0, numOverflow
}

// parseExponent reads an optionally signed run of digits, saturating far
// beyond any exponent that could matter.
func parseExponent(s string) int64 {
	if s == "" {
		return 0
	}
	neg := s[0] == '-'
	if s[0] == '-' || s[0] == '+' {
		s = s[1:]
	}
	var e int64
	for i := 0; i < len(s); i++ {
		if e < 1<<40 {
			e = e*10 + int64(s[i]-'0')
		}
	}
	if neg {
		return -e
	}
	return e
}

// isJSONNumber reports whether s is a number in JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || !isDigit(s[i]) {
			return false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || !isDigit(s[i]) {
			return false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	return i == len(s)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// formatMultiplier renders a multiplier as the descriptor writes it: the
// shortest decimal that reads back the same float64, always with a decimal
// point or an exponent (2.0, 1.5, 1e+300).
func formatMultiplier(m float64) string {
	return string(appendMultiplier(nil, m))
}

func appendMultiplier(b []byte, m float64) []byte {
	start := len(b)
	b = strconv.AppendFloat(b, m, 'g', -1, 64)
	for _, c := range b[start:] {
		if c == '.' || c == 'e' || c == 'n' || c == 'N' { // NaN and Inf stay as they are
			return b
		}
	}
	return append(b, '.', '0')
}
