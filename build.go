package retrypolicy

import (
	"math"
	"strconv"
	"time"

	"github.com/retrypolicy/retrypolicy/internal/echo"
)

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
		return echo.Quote(v.text)
	case rawArray:
		return "an array"
	case rawObject:
		return "an object"
	case rawNull:
		return "null"
	case rawNumber:
		return echo.Number(v.text)
	}
	return v.text
}

// draft is a descriptor as read from JSON or from flags: which fields were
// given and how. build reads it into a Strategy, fills in the defaults, and
// applies the rules.
type draft struct {
	v [numFields]rawValue
	// flagDefaults: a retrying strategy's backoff is built from the fields
	// with the flags' defaults (exponential, 1 s, ×2, no cap), as there is
	// no backoff object to omit.
	flagDefaults bool
}

// build returns the strategy d describes, recording every problem in p.
func (d *draft) build(p *problems) Strategy {
	var s Strategy
	g := given{raw: new([numFields]string)}
	for f, v := range d.v {
		if v.given() {
			g.set[f], g.raw[f] = true, v.shown()
		}
	}
	s.Kind = StrategyKind(strategyEnum.read(p, fStrategy, d.v[fStrategy]))
	s.MaxAttempts = readMaxAttempts(p, d.v[fMaxAttempts])
	if v := d.v[fWindow]; v.given() {
		s.Window = readSeconds(p, fWindow, v)
	} else if s.Kind == Bounded {
		s.Window = defaultWindow
	}
	switch backoff := d.v[fBackoff]; {
	case d.flagDefaults:
		if s.Kind != None {
			s.Backoff = d.readBackoff(p, Exponential)
		}
	case backoff.kind == rawObject:
		if s.Kind != None {
			s.Backoff = d.readBackoff(p, 0)
		}
	case backoff.given():
		p.add(fBackoff, "must be an object", backoff.shown())
	case s.Kind == Bounded || s.Kind == UnlessStopped:
		s.Backoff = defaultBackoff()
	}
	check(&s, &g, p)
	return s
}

// readMaxAttempts reads max_attempts, 0 when absent or refused.
func readMaxAttempts(p *problems, v rawValue) int {
	if !v.given() {
		return 0
	}
	switch n, st := readInt(p, fMaxAttempts, v); {
	case st != numOK && st != numOverflow: // refused as it was read
	case n > math.MaxInt || st == numOverflow && n > 0:
		p.add(fMaxAttempts, "out of range: must be at most "+strconv.Itoa(math.MaxInt), v.shown())
	default:
		return int(max(n, math.MinInt))
	}
	return 0
}

// readBackoff reads the backoff's fields; defaultKind is the kind when none
// is given (0: none, which the rules refuse).
func (d *draft) readBackoff(p *problems, defaultKind BackoffKind) Backoff {
	b := Backoff{Kind: defaultKind, BaseDelay: time.Second}
	if v := d.v[fKind]; v.given() {
		b.Kind = BackoffKind(backoffEnum.read(p, fKind, v))
	}
	if v := d.v[fBase]; v.given() {
		b.BaseDelay = readSeconds(p, fBase, v)
	}
	if v := d.v[fMultiplier]; v.given() {
		b.Multiplier = readFloat(p, fMultiplier, v)
	} else if b.Kind != Fixed {
		b.Multiplier = 2
	}
	if v := d.v[fMaxDelay]; v.given() {
		b.MaxDelay = readSeconds(p, fMaxDelay, v)
	}
	return b
}

// read reads one of e's names, the value v of field f, and returns its
// value; 0 for a value absent (the rules say whether it is required) or
// not a name.
func (e *enum) read(p *problems, f field, v rawValue) uint8 {
	if !v.given() {
		return 0
	}
	if v.kind != rawString && v.kind != rawArg {
		p.notA(f, v, "a string")
		return 0
	}
	n, ok := e.lookup(v.text)
	if !ok {
		p.add(f, "must be "+oneOf(e.names), v.shown())
	}
	return n
}

// readInt reads an integer from a JSON number (or a flag's argument written
// as one), recording a problem when it is not one. Numbers beyond int64 are
// left to the caller (numOverflow, with the sign in n).
func readInt(p *problems, f field, v rawValue) (int64, numStatus) {
	if v.kind != rawNumber && v.kind != rawArg {
		p.notA(f, v, "an integer")
		return 0, numSyntax
	}
	n, st := decimalInt(v.text)
	switch st {
	case numSyntax:
		p.notA(f, v, "an integer")
	case numFraction:
		p.notA(f, v, "a whole number")
	case numOverflow:
		if v.text[0] == '-' {
			n = math.MinInt64
		} else {
			n = math.MaxInt64
		}
	}
	return n, st
}

// readSeconds reads whole seconds as a Duration. A delay beyond the longest
// Duration is out of range; a window beyond it saturates, for its own rule
// to refuse.
func readSeconds(p *problems, f field, v rawValue) time.Duration {
	n, st := readInt(p, f, v)
	if st != numOK && st != numOverflow {
		return 0
	}
	if n > maxDelaySecs && f != fWindow {
		p.add(f, "out of range: must be at most "+strconv.FormatInt(maxDelaySecs, 10), v.shown())
		return 0
	}
	return time.Duration(min(max(n, -maxDelaySecs), maxDelaySecs)) * time.Second
}

// readFloat reads a number; one too large for a float64 reads as infinite,
// which the rules refuse.
func readFloat(p *problems, f field, v rawValue) float64 {
	if (v.kind != rawNumber && v.kind != rawArg) || !isJSONNumber(v.text) {
		p.notA(f, v, "a number")
		return 0
	}
	m, _ := strconv.ParseFloat(v.text, 64) // ±Inf when out of range
	return m
}

// notA records that v, given for f, is not what the field takes ("an
// integer", "a number", …), phrased for JSON or for a flag's argument.
func (p *problems) notA(f field, v rawValue, what string) {
	if v.kind == rawArg {
		p.add(f, v.shown()+" is not "+what, "")
		return
	}
	p.add(f, "must be "+what, v.shown())
}
