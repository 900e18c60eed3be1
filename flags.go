package retrypolicy

import (
	"flag"
	"io"
	"strconv"
	"strings"
)

// Flags holds the ampctl-style --retry-* command-line flags and builds a
// Strategy from them under the same rules as Parse:
//
//	--retry-strategy         none, bounded or unless_stopped
//	--retry-max-attempts     integer >= 1; required with bounded, only valid with it
//	--retry-window-secs      1 to 604800 (default 3600); bounded only
//	--retry-backoff          fixed, exponential (default) or exponential_with_jitter
//	--retry-base-delay-secs  integer >= 1 (default 1)
//	--retry-multiplier       number > 0 (default 2.0); exponential kinds only
//	--retry-max-delay-secs   integer >= the base delay (default: no cap); exponential kinds only
//
// With no retry flag at all, the strategy is [Default]. Any other retry flag
// needs --retry-strategy. With --retry-strategy, the backoff is built from the
// flags and their defaults: unlike the default strategy's, it has no cap
// unless --retry-max-delay-secs is given.
//
// The zero Flags is ready to use. Register it with a flag.FlagSet, or hand
// its values to any CLI library built on flag.Value with Visit. Each value
// records its argument as given, so that Strategy can report every problem at
// once, naming the flag as users type it. A Flags is not safe for concurrent
// use; it belongs to one command line.
type Flags struct {
	values [numFields]flagValue // indexed by field; fBackoff is unused
}

// flagValue is a flag.Value that keeps its argument and counts how often it
// was set.
type flagValue struct {
	text string
	set  int
}

// String returns the argument as given ("" when the flag was not set).
func (v *flagValue) String() string { return v.text }

// Set records the argument; checking it is left to Flags.Strategy.
func (v *flagValue) Set(s string) error {
	v.text = s
	v.set++
	return nil
}

// flagUsage is each flag's help text.
var flagUsage = [numFields]string{
	fStrategy:    "retry strategy: none, bounded or unless_stopped (default: unless_stopped with the default backoff)",
	fMaxAttempts: "failures within the window that make the job fatal; required with bounded, only valid with it",
	fWindow:      "how far back failures count, 1 to 604800 seconds (default 3600); bounded only",
	fKind:        "how the delay grows: fixed, exponential or exponential_with_jitter (default exponential)",
	fBase:        "the first delay, or every delay with fixed, in seconds (default 1)",
	fMultiplier:  "what each delay is multiplied by, greater than 0 (default 2.0); exponential backoffs only",
	fMaxDelay:    "the longest delay, in seconds, at least the base delay (default: no cap); exponential backoffs only",
}

// flagFields lists the flags' fields in the order they are registered.
var flagFields = [...]field{fStrategy, fMaxAttempts, fWindow, fKind, fBase, fMultiplier, fMaxDelay}

// Visit calls fn for each of the seven flags with its name without dashes
// ("retry-strategy"), its usage text and its value, in a fixed order.
func (f *Flags) Visit(fn func(name, usage string, value flag.Value)) {
	for _, fd := range flagFields {
		fn(strings.TrimPrefix(flagNaming.names[fd], "--"), flagUsage[fd], &f.values[fd])
	}
}

// Register defines the seven flags on fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	f.Visit(func(name, usage string, value flag.Value) { fs.Var(value, name, usage) })
}

// Strategy builds the strategy the flags describe. It returns a
// *ValidationError naming each flag at fault as users type it
// ("--retry-max-attempts is only valid when --retry-strategy=bounded",
// `--retry-max-attempts: "x" is not an integer`), which matches ErrInvalid.
func (f *Flags) Strategy() (Strategy, error) {
	p := problems{nm: &flagNaming}
	any := false
	for _, fd := range flagFields {
		if f.values[fd].set > 1 {
			p.addPhrase(fd, "is given more than once")
		}
		any = any || f.values[fd].set > 0
	}
	if !any {
		return Default(), nil
	}
	if f.values[fStrategy].set == 0 {
		for _, fd := range flagFields[1:] {
			if f.values[fd].set > 0 {
				p.addPhrase(fd, "requires "+flagNaming.names[fStrategy])
			}
		}
		return Strategy{}, p.err()
	}
	d := draft{flagDefaults: true}
	for _, fd := range flagFields {
		if v := f.values[fd]; v.set > 0 {
			d.v[fd] = rawValue{kind: rawArg, text: v.text}
		}
	}
	s := d.build(&p)
	if err := p.err(); err != nil {
		return Strategy{}, err
	}
	return s, nil
}

// ParseFlags builds a strategy from a command line that holds only --retry-*
// flags, as `--flag value` or `--flag=value`. Anything else on it is an
// error, as is every problem Flags.Strategy reports.
func ParseFlags(args []string) (Strategy, error) {
	var f Flags
	fs := flag.NewFlagSet("retrypolicy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.Register(fs)
	if err := fs.Parse(args); err != nil {
		return Strategy{}, &ValidationError{Errors: []*FieldError{{Field: "$", Rule: err.Error()}}}
	}
	if fs.NArg() > 0 {
		return Strategy{}, &ValidationError{Errors: []*FieldError{{Field: "$", Rule: "unexpected argument", Value: strconv.Quote(fs.Arg(0))}}}
	}
	return f.Strategy()
}
