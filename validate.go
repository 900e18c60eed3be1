package retrypolicy

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/retrypolicy/retrypolicy/internal/capped"
)

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

// naming says how problems name fields and count delays: by JSON path or by
// flag, and in the descriptor's whole seconds or in Go's nanoseconds.
type naming struct {
	names   [numFields]string
	flags   bool // rules tied to another field are phrased on the flag, as ampctl does
	secs    bool // delays are whole seconds, at least 1 s
	goUnits bool // durations are written as Go writes them ("90s"), not as seconds
}

var jsonNames = [numFields]string{"strategy", "max_attempts", "window_secs", "backoff",
	"backoff.kind", "backoff.base_delay_secs", "backoff.multiplier", "backoff.max_delay_secs"}

var (
	// goNaming checks Go values: fields by their Go names, delays of any
	// positive whole nanoseconds, durations as Go writes them.
	goNaming = naming{names: [numFields]string{"Kind", "MaxAttempts", "Window", "Backoff",
		"Backoff.Kind", "Backoff.BaseDelay", "Backoff.Multiplier", "Backoff.MaxDelay"}, goUnits: true}
	// jsonNaming checks the descriptor, and what may be encoded as one.
	jsonNaming = naming{names: jsonNames, secs: true}
	// flagNaming checks the ampctl flags.
	flagNaming = naming{names: [numFields]string{"--retry-strategy", "--retry-max-attempts", "--retry-window-secs", "",
		"--retry-backoff", "--retry-base-delay-secs", "--retry-multiplier", "--retry-max-delay-secs"}, flags: true, secs: true}
)

// given says which fields a strategy was given and, for the descriptor, how
// each was written; a Go value is given the fields that are not zero.
type given struct {
	set [numFields]bool
	raw *[numFields]string // as written, for messages; nil or "" shows the Go value
}

func givenOf(s *Strategy) given {
	var g given
	g.set[fStrategy] = s.Kind != 0
	g.set[fMaxAttempts] = s.MaxAttempts != 0
	g.set[fWindow] = s.Window != 0
	g.set[fBackoff] = s.Backoff != Backoff{}
	g.set[fKind] = s.Backoff.Kind != 0
	g.set[fBase] = s.Backoff.BaseDelay != 0
	g.set[fMultiplier] = s.Backoff.Multiplier != 0
	g.set[fMaxDelay] = s.Backoff.MaxDelay != 0
	return g
}

// Validate reports whether s, its zero fields taken as defaults, is a
// strategy the rules of docs/semantics.md allow. It returns nil or a *ValidationError naming
// each field by its Go name ("Backoff.BaseDelay"), durations as Go writes
// them. It does not allocate when s is valid.
func (s Strategy) Validate() error { return s.effective().validate() }

// validate is Validate for a strategy whose defaults are filled in.
func (s Strategy) validate() error {
	p := problems{nm: &goNaming}
	g := givenOf(&s)
	check(&s, &g, &p)
	return p.err()
}

// check records every rule of the descriptor that s breaks: the rules live
// here alone, for Go values, the JSON descriptor and the flags alike.
func check(s *Strategy, g *given, p *problems) {
	known := strategyEnum.valid(uint8(s.Kind))
	switch {
	case s.Kind == 0:
		p.add(fStrategy, "required, "+oneOf(strategyEnum.names), "")
	case !known:
		p.add(fStrategy, "must be "+oneOf(strategyEnum.names), strconv.Itoa(int(s.Kind)))
	}
	// With an unknown strategy, which fields apply is unknown, but a field
	// given is still held to its own range.
	checkMaxAttempts(s, g, p)
	checkWindow(s, g, p)
	switch {
	case s.Kind == None:
		checkNoBackoff(g, p)
	case p.bad[fBackoff]: // not an object: its fields are unknown
	case s.Kind == Bounded || s.Kind == UnlessStopped || g.set[fBackoff]:
		checkBackoff(&s.Backoff, g, p)
	}
}

// checkMaxAttempts records what is wrong with s.MaxAttempts.
func checkMaxAttempts(s *Strategy, g *given, p *problems) {
	bounded := s.Kind == Bounded
	switch {
	case !bounded && g.set[fMaxAttempts] && strategyEnum.valid(uint8(s.Kind)):
		p.tied(fMaxAttempts, onlyWhenBounded, g.show(fMaxAttempts, strconv.Itoa(s.MaxAttempts)))
	case bounded && !g.set[fMaxAttempts]:
		p.requiredWith(fMaxAttempts, Bounded)
	case (bounded || g.set[fMaxAttempts]) && s.MaxAttempts < 1:
		p.add(fMaxAttempts, "must be at least 1", g.show(fMaxAttempts, strconv.Itoa(s.MaxAttempts)))
	}
}

// checkWindow records what is wrong with s.Window.
func checkWindow(s *Strategy, g *given, p *problems) {
	bounded := s.Kind == Bounded
	switch {
	case !bounded && g.set[fWindow] && strategyEnum.valid(uint8(s.Kind)):
		p.tied(fWindow, onlyWhenBounded, p.showDuration(g, fWindow, s.Window))
	case !bounded && !g.set[fWindow]:
	case s.Window%time.Second != 0:
		p.add(fWindow, "must be a whole number of seconds", p.showDuration(g, fWindow, s.Window))
	case s.Window < time.Second || s.Window > maxWindow:
		rule := rangeRule(1, int64(maxWindow/time.Second))
		if p.nm.goUnits {
			rule = "must be between 1s and " + maxWindow.String()
		}
		p.add(fWindow, rule, p.showDuration(g, fWindow, s.Window))
	}
}

// checkNoBackoff records a backoff given to the strategy none: the object
// in JSON and Go, each backoff flag on the command line.
func checkNoBackoff(g *given, p *problems) {
	if !p.nm.flags && g.set[fBackoff] {
		p.tied(fBackoff, notWhenNone, "")
	}
	for f := fKind; f < numFields && p.nm.flags; f++ {
		if g.set[f] {
			p.tied(f, notWhenNone, g.show(f, ""))
		}
	}
}

// checkBackoff records every rule that b, the backoff of a strategy that
// retries, breaks.
func checkBackoff(b *Backoff, g *given, p *problems) {
	switch {
	case b.Kind == 0:
		p.add(fKind, "required, "+oneOf(backoffEnum.names), "")
	case !backoffEnum.valid(uint8(b.Kind)):
		p.add(fKind, "must be "+oneOf(backoffEnum.names), strconv.Itoa(int(b.Kind)))
	}
	baseOK := p.checkDelay(fBase, b.BaseDelay, g)
	if b.Kind == Fixed {
		if g.set[fMultiplier] {
			p.tied(fMultiplier, notWhenFixed, g.show(fMultiplier, formatMultiplier(b.Multiplier)))
		}
		if g.set[fMaxDelay] {
			p.tied(fMaxDelay, notWhenFixed, p.showDuration(g, fMaxDelay, b.MaxDelay))
		}
		return
	}
	if !b.Kind.exponential() {
		return // the kind is wrong: which fields apply is unknown
	}
	switch m := b.Multiplier; {
	case math.IsNaN(m) || math.IsInf(m, 0):
		p.add(fMultiplier, "must be finite", g.show(fMultiplier, formatMultiplier(m)))
	case !(m > 0):
		p.add(fMultiplier, "must be greater than 0", g.show(fMultiplier, formatMultiplier(m)))
	}
	if g.set[fMaxDelay] && p.checkDelay(fMaxDelay, b.MaxDelay, g) && baseOK && b.MaxDelay < b.BaseDelay {
		p.add(fMaxDelay, "must be at least "+p.nm.names[fBase]+" ("+p.delayText(b.BaseDelay)+")", p.showDuration(g, fMaxDelay, b.MaxDelay))
	}
}

// checkDelay records a problem unless d is a delay: whole seconds of at
// least 1 s in the descriptor, at least 1 ns in Go.
func (p *problems) checkDelay(f field, d time.Duration, g *given) bool {
	if p.bad[f] {
		return false // already refused as it was read
	}
	unit, name := minDelay, "nanoseconds"
	if p.nm.secs {
		unit, name = time.Second, "seconds"
	}
	switch {
	case d%unit != 0:
		p.add(f, "must be a whole number of "+name, p.showDuration(g, f, d))
	case d < unit:
		p.add(f, "must be at least "+p.delayText(unit), p.showDuration(g, f, d))
	default:
		return true
	}
	return false
}

// condition is a field holding a value, which other fields are tied to:
// only valid under it, or not allowed under it.
type condition struct {
	f     field
	value string
	only  bool
}

// The conditions of the descriptor's rules.
var (
	onlyWhenBounded = condition{fStrategy, Bounded.String(), true}
	notWhenNone     = condition{fStrategy, None.String(), false}
	notWhenFixed    = condition{fKind, Fixed.String(), false}
)

// tied records that f is only valid, or not allowed, under c; shown is
// f's value.
func (p *problems) tied(f field, c condition, shown string) {
	verb := "not allowed when "
	if c.only {
		verb = "only valid when "
	}
	if p.nm.flags {
		p.addPhrased(f, "is "+verb+p.nm.names[c.f]+"="+c.value)
		return
	}
	p.add(f, verb+p.nm.names[c.f]+" is "+c.value, shown)
}

// requiredWith records that f is missing though the strategy kind needs it.
func (p *problems) requiredWith(f field, kind StrategyKind) {
	if p.nm.flags {
		p.addPhrased(f, "is required when "+p.nm.names[fStrategy]+"="+kind.String())
		return
	}
	p.add(f, "required when "+p.nm.names[fStrategy]+" is "+kind.String(), "")
}

// show returns f's value as written, or else goValue.
func (g *given) show(f field, goValue string) string {
	if g.raw != nil && g.raw[f] != "" {
		return g.raw[f]
	}
	return goValue
}

// showDuration returns f's value as written, or else d as Go writes it
// for Go names, in the descriptor's seconds when d is whole seconds.
func (p *problems) showDuration(g *given, f field, d time.Duration) string {
	switch {
	case g.raw != nil && g.raw[f] != "":
		return g.raw[f]
	case p.nm.goUnits:
		return d.String()
	}
	return secondsText(d)
}

// delayText writes d as the naming counts delays.
func (p *problems) delayText(d time.Duration) string {
	if p.nm.secs {
		return secondsText(d)
	}
	return d.String()
}

// secondsText writes whole seconds as an integer, anything else as a Go
// duration ("1.5s").
func secondsText(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10)
	}
	return d.String()
}

// rangeRule phrases the integer range [lo, hi].
func rangeRule(lo, hi int64) string {
	return "must be between " + strconv.FormatInt(lo, 10) + " and " + strconv.FormatInt(hi, 10)
}

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

// add records a problem with field f, whose value was value.
func (p *problems) add(f field, rule, value string) {
	p.put(f, FieldError{Rule: rule, Value: value})
}

// addPhrased records a problem with field f that its rule words whole
// ("--retry-window-secs is only valid when …"), with no value.
func (p *problems) addPhrased(f field, rule string) {
	p.put(f, FieldError{Rule: rule, phrase: true})
}

// put records e, a problem with field f, unless f has one already.
func (p *problems) put(f field, e FieldError) {
	if p.bad[f] {
		return
	}
	p.bad[f] = true
	e.Field = p.nm.names[f]
	p.list = append(p.list, problem{order: int(f) * 2, err: e})
}

// addDoc records a problem with the document, or the arguments, as a
// whole ("$").
func (p *problems) addDoc(rule, value string) {
	p.list = append(p.list, problem{order: orderDoc, err: FieldError{Field: "$", Rule: rule, Value: value}})
}

// addUnknown records a key or flag, at path, that is not a known field.
func (p *problems) addUnknown(order int, path, rule string) {
	p.list = append(p.list, problem{order: order, err: FieldError{Field: path, Rule: rule}})
}

// err returns the problems as a *ValidationError, or nil when there are none.
func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	slices.SortStableFunc(p.list, func(a, b problem) int { return a.order - b.order })
	var shown capped.List[FieldError]
	for _, pr := range p.list {
		shown.Add(pr.err)
	}
	return &ValidationError{Errors: shown.Kept, Omitted: shown.More}
}
