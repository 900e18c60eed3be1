package retrypolicy

import (
	"flag"
	"strings"

	"github.com/retrypolicy/retrypolicy/internal/echo"
)

// The ampctl-style flags, in the order they are listed, and their help.
var (
	flagFields = [...]field{fStrategy, fMaxAttempts, fWindow, fKind, fBase, fMultiplier, fMaxDelay}
	flagUsage  = [numFields]string{
		fStrategy:    "retry strategy: none, bounded or unless_stopped (default: unless_stopped with the default backoff)",
		fMaxAttempts: "failures within the window that make the job fatal; required with bounded, only valid with it",
		fWindow:      "how far back failures count, 1 to 604800 seconds (default 3600); bounded only",
		fKind:        "how the delay grows: fixed, exponential or exponential_with_jitter (default exponential)",
		fBase:        "the first delay, or every delay with fixed, in seconds (default 1)",
		fMultiplier:  "what each delay is multiplied by, greater than 0 (default 2.0); exponential backoffs only",
		fMaxDelay:    "the longest delay, in seconds, at least the base delay (default: no cap); exponential backoffs only",
	}
)

// flagValue is a flag.Value that keeps its argument and counts how often it
// was set; the rules judge it later, with the other flags.
type flagValue struct {
	text string
	set  int
}

func (v *flagValue) String() string { return v.text }

func (v *flagValue) Set(s string) error {
	v.text = s
	v.set++
	return nil
}

// flagValues holds the seven flags' values, by field.
type flagValues [numFields]flagValue

// RegisterFlags defines the seven ampctl flags on fs (--retry-strategy,
// --retry-max-attempts, --retry-window-secs, --retry-backoff,
// --retry-base-delay-secs, --retry-multiplier, --retry-max-delay-secs) and
// returns a function that, once fs has parsed, builds the strategy they
// describe as [ParseFlags] does.
func RegisterFlags(fs *flag.FlagSet) func() (Strategy, error) {
	var f flagValues
	for _, fd := range flagFields {
		fs.Var(&f[fd], strings.TrimPrefix(flagNaming.names[fd], "--"), flagUsage[fd])
	}
	return func() (Strategy, error) {
		p := problems{nm: &flagNaming}
		return f.strategy(&p)
	}
}

// ParseFlags builds a strategy from ampctl flags (--flag value or
// --flag=value) under Parse's rules. No flag at all is the Default
// strategy; any other flag needs --retry-strategy, whose backoff is built
// from the flags' defaults (exponential, 1 s, ×2, no cap unless
// --retry-max-delay-secs). Every problem, unknown flags and stray arguments
// too, comes at once in a *ValidationError naming each flag as users type it
// (--retry-max-attempts is only valid when --retry-strategy=bounded).
func ParseFlags(args []string) (Strategy, error) {
	var f flagValues
	p := problems{nm: &flagNaming}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" { // the rest are arguments, not flags
			for _, rest := range args[i+1:] {
				p.addDoc("unexpected argument", echo.Quote(rest))
			}
			break
		}
		name, isFlag := strings.CutPrefix(arg, "-")
		if !isFlag || name == "" {
			p.addDoc("unexpected argument", echo.Quote(arg))
			continue
		}
		name = strings.TrimPrefix(name, "-")
		name, value, hasValue := strings.Cut(name, "=")
		fd, known := flagByName(name)
		switch {
		case !known:
			p.addUnknown(orderDoc, "--"+echo.Text(name), "unknown flag"+echo.SuggestFrom("--"+name, flagNaming.names[:]))
			if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++ // its value, most likely
			}
			continue
		case !hasValue && i+1 == len(args):
			p.addPhrased(fd, "needs a value")
			continue
		case !hasValue:
			i++
			value = args[i]
		}
		f[fd].Set(value)
	}
	return f.strategy(&p)
}

// flagByName returns the field of the flag named name (without dashes).
func flagByName(name string) (field, bool) {
	for _, fd := range flagFields {
		if flagNaming.names[fd][2:] == name {
			return fd, true
		}
	}
	return 0, false
}

// strategy builds the strategy the flags describe, adding its problems to
// those p already holds.
func (f *flagValues) strategy(p *problems) (Strategy, error) {
	anySet := false
	for _, fd := range flagFields {
		if f[fd].set > 1 {
			p.addPhrased(fd, "is given more than once")
		}
		anySet = anySet || f[fd].set > 0
	}
	var s Strategy
	switch {
	case !anySet:
		s = Default()
	case f[fStrategy].set == 0:
		for _, fd := range flagFields[1:] {
			if f[fd].set > 0 {
				p.addPhrased(fd, "requires "+flagNaming.names[fStrategy])
			}
		}
	default:
		d := draft{flagDefaults: true}
		for _, fd := range flagFields {
			if v := f[fd]; v.set > 0 {
				d.v[fd] = rawValue{kind: rawArg, text: v.text}
			}
		}
		s = d.build(p)
	}
	if err := p.err(); err != nil {
		return Strategy{}, err
	}
	return s, nil
}
