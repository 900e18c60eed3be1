package queuekit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/echo"
	"github.com/retrypolicy/retrypolicy/plan"
	"github.com/retrypolicy/retrypolicy/retry"
)

// Config is the strategies of a queue's jobs.
type Config struct {
	// Default is the strategy of a job without its own and without one for
	// its kind in Kinds. The zero Strategy means retrypolicy.Default().
	Default retrypolicy.Strategy
	// Kinds maps a job kind to the strategy of its jobs that do not carry
	// their own.
	Kinds map[string]retrypolicy.Strategy
	// KindsField is how the adapter's own configuration names Kinds in
	// errors and warnings ("Config.Subjects"); "" is "Config.Kinds".
	KindsField string

	// WaitLimit is the job's limit: the longest wait a server may ask, or a
	// loop in a run defer, before the job runs again; a longer one makes the
	// job fatal (retry.RetryAfterTooLong), never cut. Zero is
	// retry.WaitLimit's for a durable layer under the strategy of the job's
	// kind (Kinds, else Default): its longest delay but at least an hour,
	// an hour when it has no cap. A strategy the job carries itself does
	// not change it. Each adapter gives it as Config.WaitLimit.
	WaitLimit time.Duration
}

// kindField names kind's strategy as c's adapter does.
func (c Config) kindField(kind string) string {
	name := c.KindsField
	if name == "" {
		name = "Config.Kinds"
	}
	return name + "[" + Quote(kind) + "]"
}

// Policies are the compiled strategies of a queue's jobs. The zero value is
// not usable: make one with NewPolicies. Policies are safe for concurrent
// use.
type Policies struct {
	standard *retrypolicy.Policy
	kinds    map[string]*retrypolicy.Policy
	cache    strategyCache
	limit    time.Duration // Config.WaitLimit
}

// NewPolicies compiles c's strategies. Its error names the field at fault
// as Go writes it: Config.Default or Config.Kinds["kind"] (as KindsField
// names it), matching retrypolicy.ErrInvalid, or Config.WaitLimit when it
// is negative.
func NewPolicies(c Config) (*Policies, error) {
	if c.WaitLimit < 0 {
		return nil, errors.New("Config.WaitLimit: must not be negative, got " + c.WaitLimit.String())
	}
	p := &Policies{kinds: make(map[string]*retrypolicy.Policy, len(c.Kinds)), limit: c.WaitLimit}
	var err error
	if p.standard, err = retrypolicy.Compile(c.Default); err != nil {
		return nil, fmt.Errorf("Config.Default: %w", err)
	}
	for kind, s := range c.Kinds {
		if p.kinds[kind], err = retrypolicy.Compile(s); err != nil {
			return nil, fmt.Errorf("%s: %w", c.kindField(kind), err)
		}
	}
	return p, nil
}

// Kind returns the policy of the jobs of kind that do not carry their own
// strategy: Config.Kinds of kind, else Config.Default.
func (p *Policies) Kind(kind string) *retrypolicy.Policy {
	if pol, ok := p.kinds[kind]; ok {
		return pol
	}
	return p.standard
}

// WaitLimit returns the job's limit for the jobs of kind (Config.WaitLimit):
// Config.WaitLimit when set, else retry.WaitLimit(p.Kind(kind),
// retry.Durable).
func (p *Policies) WaitLimit(kind string) time.Duration {
	if p.limit > 0 {
		return p.limit
	}
	return retry.WaitLimit(p.Kind(kind), retry.Durable)
}

// Own returns the policy of a job's own strategy, raw, a strategy
// descriptor in JSON, or a *retrypolicy.ValidationError listing what makes
// it invalid. Strategies are compiled once and cached by their bytes
// (within MaxCachedStrategies and MaxCachedBytes), so that a job's
// decision does not parse its strategy again.
func (p *Policies) Own(raw []byte) (*retrypolicy.Policy, error) {
	return p.cache.get(raw)
}

// Warning is a trap that plan.LintGo finds in one of Config's strategies.
type Warning struct {
	// Field is the strategy's field in Config: Config.Default or
	// Config.Kinds["kind"] (as KindsField names it).
	Field string
	plan.Finding
}

// Lint returns the warnings plan.LintGo finds in c's strategies, in the
// names of their Go fields, with no controller tick (a queue runs a retry
// when it is due): a bounded strategy that never gives up, one that gives
// up within a minute of an outage, waits that grow to days, a retry storm.
// Default comes first, then the kinds in order. An invalid strategy has
// none (NewPolicies refuses it).
func (c Config) Lint() []Warning {
	var out []Warning
	add := func(field string, s retrypolicy.Strategy) {
		report, err := plan.LintGo(context.Background(), s)
		if err != nil {
			return
		}
		for _, f := range report.Findings {
			if f.Severity == plan.Warning {
				out = append(out, Warning{Field: field, Finding: f})
			}
		}
	}
	add("Config.Default", c.Default)
	for _, kind := range slices.Sorted(maps.Keys(c.Kinds)) {
		add(c.kindField(kind), c.Kinds[kind])
	}
	return out
}

// LogLint logs at Warn, once each, the warnings of Lint, each message
// opening with prefix (the adapter's name and a colon), with the finding's
// code and fix, and tick: why the lint assumed no controller tick, in the
// adapter's words.
func (c Config) LogLint(logger *slog.Logger, prefix, tick string) {
	for _, w := range c.Lint() {
		logger.Warn(prefix+" "+w.Field+": "+w.Message, "code", w.Code, "fix", w.Fix, "tick", tick)
	}
}

// Quote returns s quoted for a message: at most 64 bytes of it, with
// quotes, backslashes, control characters and invalid UTF-8 escaped, so
// that a name from outside (a job's kind) cannot forge a second line or
// drive a terminal.
func Quote(s string) string { return echo.Quote(s) }

// Escape returns s with control characters (C0, DEL, C1, and the line and
// paragraph separators), quotes, backslashes and invalid UTF-8 escaped
// visibly, whole and without quotes: text from outside (a dead letter's
// reason, error or subject) printed on its own cannot drive a terminal or
// forge a line. It is Quote's rule.
func Escape(s string) string { return echo.Escape(s) }

// EscapeJSON returns the JSON text j with DEL, the C1 controls, U+2028 and
// U+2029 (which encoding/json leaves as they are) as \u escapes: the same
// values once decoded, and no character a terminal acts on.
func EscapeJSON(j []byte) []byte { return echo.JSON(j) }
