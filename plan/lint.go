package plan

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/say"
	"github.com/retrypolicy/retrypolicy/internal/tick"
)

// MaxFailures is the most failures of a crash loop that Lint follows
// before it reports the loop as it stands.
const MaxFailures = 200_000

// loopStart is the instant a linted crash loop starts from: the earliest
// from which every offset a History can reach is a time.Duration.
var loopStart = time.Unix(0, 0).UTC()

// Severity says how much a finding matters.
type Severity uint8

const (
	// Info is a behaviour worth knowing that may be what was meant.
	Info Severity = iota + 1
	// Warning is a trap: the strategy does not do what it seems to.
	Warning
)

// String returns "info" or "warning", or "Severity(N)".
func (s Severity) String() string {
	switch s {
	case Info:
		return "info"
	case Warning:
		return "warning"
	}
	return "Severity(" + strconv.Itoa(int(s)) + ")"
}

// MarshalText returns the severity's name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Finding is one thing a strategy does that its reader may not expect.
type Finding struct {
	// Code names the finding; codes are stable: never-fatal, gives-up-fast,
	// zero-delay, shrinking-delays, no-cap, window-forgets, never-retries,
	// unsettled.
	Code string `json:"code"`
	// Severity is Warning for a trap, Info for what may be meant.
	Severity Severity `json:"severity"`
	// Message says what happens, on one line, with the numbers.
	Message string `json:"message"`
	// Fix says what to change.
	Fix string `json:"fix"`
	// Field and Value, when one field's value fixes the finding, are that
	// field, named as Fix names it (MaxAttempts, or max_attempts for
	// Lint), and the value, written as Fix writes it (time.Hour, or 3600):
	// what a tool may apply. Both are "" otherwise; the command does not
	// print them.
	Field string `json:"-"`
	Value string `json:"-"`
}

// Summary is what a strategy does in its crash loop.
type Summary struct {
	// Tick is the controller tick the loop ran under (WithTick); 0 is none.
	Tick time.Duration
	// Fatal reports whether the strategy gives up; FailuresToFatal counts
	// the failures until it does, the fatal one included, and TimeToFatal is
	// the time from the first failure to the fatal one (0 for none).
	Fatal           bool
	FailuresToFatal int
	TimeToFatal     time.Duration
	// LongestWait is the longest wait anywhere in the loop, the first climb
	// included, and LongestAt the failure (from 1) that waits it first; both
	// are 0 when the strategy never waits. A wait is the time from a failure
	// to the run after it: the delay, or under a tick the time to the tick
	// that runs the retry.
	LongestWait time.Duration
	LongestAt   int
	// RetriesFirstHour counts the retries (runs started after a wait, the
	// one that ends fatal included) that start within an hour of the first
	// failure.
	RetriesFirstHour int
	// MostInWindow is the most failures the window holds at once.
	MostInWindow int
	// FirstStepUptime is the shortest uptime after which the retry from
	// the longest wait waits only the backoff's first step: 0 when that
	// wait is the first step already, -1 when no uptime does or the
	// strategy never waits.
	FirstStepUptime time.Duration
	// Settled reports whether the loop gave up or came back to where it
	// had been (and from there repeats forever) within MaxFailures failures
	// and the first hour; otherwise the figures cover Failures failures.
	Settled bool
	// Failures counts the failures the loop was followed for.
	Failures int
}

// Report is what Lint finds in a strategy.
type Report struct {
	// Strategy is the strategy linted, its zero fields filled with their
	// defaults.
	Strategy retrypolicy.Strategy
	// Summary is what its crash loop does.
	Summary Summary
	// Findings are its traps, warnings first, each code at most once.
	Findings []Finding
}

// Warnings counts the findings of severity Warning.
func (r Report) Warnings() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == Warning {
			n++
		}
	}
	return n
}

// Lint runs the crash loop of s (every run fails at once, each retry
// starts when due, or under WithTick at the tick that runs it, without
// jitter) and reports what it does and the traps in it. It returns a
// *retrypolicy.ValidationError for an invalid s, and an error for an
// option out of range. It
// follows at most MaxFailures failures: a few milliseconds for the usual
// strategies, under a second for any. When ctx is done it stops within a
// few thousand failures and returns the report so far (not Settled) with
// an error that wraps ctx's.
func Lint(ctx context.Context, s retrypolicy.Strategy, opts ...Option) (Report, error) {
	return descriptorNames.lint(ctx, s, opts)
}

// LintGo is Lint for a strategy built in Go: its findings name the
// Strategy's fields and Go's units (Backoff.BaseDelay, time.Hour), not the
// descriptor's (base_delay_secs, 3600).
func LintGo(ctx context.Context, s retrypolicy.Strategy, opts ...Option) (Report, error) {
	return goNames.lint(ctx, s, opts)
}

// fieldNames are the names a finding gives the strategy's fields.
type fieldNames struct {
	maxAttempts, window, base, maxDelay string
	capExample                          string // maxDelay set to an hour
	capValue                            string // the cap of capExample, as its naming writes it
	windowOf                            func(secs int64) string
	noCapIsOften                        string // why a backoff without a cap may not be meant
}

// descriptorNames name the descriptor's fields, as JSON and the flags
// have them.
var descriptorNames = fieldNames{
	maxAttempts: "max_attempts", window: "window_secs", base: "base_delay_secs", maxDelay: "max_delay_secs",
	capExample:   "max_delay_secs, for example 3600 (an hour)",
	capValue:     "3600",
	windowOf:     func(secs int64) string { return fmt.Sprintf("window_secs %d", secs) },
	noCapIsOften: "a backoff given without max_delay_secs (or --retry-strategy without --retry-max-delay-secs) has none, while an omitted backoff stops at an hour",
}

// goNames name a Strategy's Go fields.
var goNames = fieldNames{
	maxAttempts: "MaxAttempts", window: "Window", base: "Backoff.BaseDelay", maxDelay: "Backoff.MaxDelay",
	capExample:   "Backoff.MaxDelay, for example time.Hour",
	capValue:     "time.Hour",
	windowOf:     func(secs int64) string { return fmt.Sprintf("Window: %d * time.Second", secs) },
	noCapIsOften: "a Backoff that sets other fields but not MaxDelay has none, while the zero Backoff stops at an hour",
}

// lint is Lint with the findings naming fields by t.
func (t *fieldNames) lint(ctx context.Context, s retrypolicy.Strategy, opts []Option) (Report, error) {
	c, err := configure(opts)
	if err != nil {
		return Report{}, err
	}
	p, s, err := unjittered(s)
	if err != nil {
		return Report{}, err
	}
	r := Report{Strategy: s}
	facts, err := follow(ctx, p, c.tick)
	r.Summary = facts.Summary
	r.Summary.FirstStepUptime = -1
	if facts.LongestAt > 0 {
		r.Summary.FirstStepUptime = firstStepUptime(p, facts.longestCount)
	}
	r.Findings = (&finder{p: p, s: r.Strategy, f: &facts, t: t}).find()
	return r, err
}

// loopFacts is what following a crash loop shows: its summary, and what
// the findings need beside it.
type loopFacts struct {
	Summary
	longestCount int           // the window's count at the longest wait
	zeroAt       int           // the first failure that waits 0, or 0
	fallAt       int           // the first failure that owes less than the one before, or 0
	fallTo       time.Duration // what it waits
	prevOwed     time.Duration // what the failure before owed, -1 before the first
}

// follow runs p's crash loop under the tick every until it gives up, or
// repeats once past the first hour, or MaxFailures. The window's state is
// its failures' offsets from the newest; the same state always leads to
// the same future (every failure falls on a tick), so a state seen again
// (Brent's cycle detection) means the loop repeats. It stops early, with
// an error, when ctx is done.
func follow(ctx context.Context, p *retrypolicy.Policy, every time.Duration) (loopFacts, error) {
	var f loopFacts
	var window []time.Duration // the failures in the window, ascending
	var cycle cycleFinder
	f.Tick, f.prevOwed = every, -1
	for st := range (crashLoop{p: p, start: loopStart, every: every}).steps() {
		if f.Failures%checkEvery == 0 && ctx.Err() != nil {
			return f, fmt.Errorf("plan: Lint: stopped after %d failures: %w", f.Failures, ctx.Err())
		}
		f.Failures++
		d, at := st.Decision, st.Failure.Sub(loopStart)
		window = append(window, at)
		if drop := len(window) - d.InWindow; drop > 0 {
			window = window[drop:]
		}
		f.MostInWindow = max(f.MostInWindow, d.InWindow)
		if d.Action == retrypolicy.Fatal {
			f.Fatal, f.FailuresToFatal, f.TimeToFatal, f.Settled = true, f.Failures, at, true
			return f, nil
		}
		retry := st.Retry.Sub(loopStart)
		f.note(d, at, retry-at)
		if cycle.repeats(window) && retry >= time.Hour {
			f.Settled = true
			return f, nil
		}
		if f.Failures == MaxFailures {
			return f, nil
		}
	}
	return f, nil // the next failure is past what a History holds
}

// note records what the decision d on the failure at offset at, whose
// retry starts wait later, shows: the longest wait, the first zero delay,
// the first fall in what is owed, a retry within the first hour.
func (f *loopFacts) note(d retrypolicy.Decision, at, wait time.Duration) {
	prevOwed := f.prevOwed
	f.prevOwed = d.Owed
	if f.LongestAt == 0 || wait > f.LongestWait {
		f.LongestWait, f.LongestAt, f.longestCount = wait, f.Failures, d.InWindow
	}
	if d.Delay == 0 && f.zeroAt == 0 {
		f.zeroAt = f.Failures
	}
	if d.Owed < prevOwed && f.fallAt == 0 {
		f.fallAt, f.fallTo = f.Failures, wait
	}
	if wait < time.Hour-at {
		f.RetriesFirstHour++
	}
}

// cycleFinder is Brent's cycle detection over the window's states: it saves a
// state at each power of two steps and reports a cycle once a later state
// equals the saved one.
type cycleFinder struct {
	saved      []time.Duration // a state to meet again, newest first
	power, lam int
	cycled     bool
}

// repeats reports whether the loop has come back to a state it was in,
// the window being the current state.
func (b *cycleFinder) repeats(window []time.Duration) bool {
	if b.cycled {
		return true
	}
	if b.cycled = sameState(b.saved, window); b.cycled {
		return true
	}
	if b.power == 0 {
		b.power = 1
	}
	if b.lam++; b.lam == b.power {
		b.saved = state(b.saved[:0], window)
		b.power, b.lam = b.power*2, 0
	}
	return false
}

// state appends the window's offsets from its newest failure to b, newest
// first.
func state(b, window []time.Duration) []time.Duration {
	newest := window[len(window)-1]
	for i := len(window) - 1; i >= 0; i-- {
		b = append(b, newest-window[i])
	}
	return b
}

// sameState reports whether the window is in the state saved, comparing
// from the newest failure back, where states differ first.
func sameState(saved, window []time.Duration) bool {
	if len(saved) != len(window) {
		return false
	}
	newest := window[len(window)-1]
	for i, off := range saved {
		if newest-window[len(window)-1-i] != off {
			return false
		}
	}
	return true
}

// waitAfter returns the delay p's backoff makes n failures at one instant
// wait after a run of uptime: what is owed, less the uptime credit.
func waitAfter(p *retrypolicy.Policy, failures []time.Time, uptime time.Duration) time.Duration {
	d, _ := p.Decide(failures, uptime, 0, loopStart)
	return d.Delay
}

// firstStepUptime returns the shortest uptime after which n failures in
// the window wait only the first step, or -1 when none does.
func firstStepUptime(p *retrypolicy.Policy, n int) time.Duration {
	failures := slices.Repeat([]time.Time{loopStart}, n)
	first := waitAfter(p, failures[:1], 0)
	if waitAfter(p, failures, 0) <= first {
		return 0
	}
	if waitAfter(p, failures, math.MaxInt64) > first {
		return -1
	}
	lo, hi := time.Duration(0), time.Duration(math.MaxInt64) // waitAfter(lo) > first >= waitAfter(hi)
	for hi-lo > 1 {
		if mid := lo + (hi-lo)/2; waitAfter(p, failures, mid) <= first {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// climb returns how long after the first failure the n-th comes when no
// failure leaves the window, each retry at the first tick of every after
// its due time (every 0: when due), or false when that is past 7 days or
// MaxFailures failures away.
func climb(p *retrypolicy.Policy, n int, every time.Duration) (time.Duration, bool) {
	const longest = 7 * 24 * time.Hour
	h := retrypolicy.NewHistory(p)
	var sum time.Duration
	for k := 1; k < n; k++ {
		if k > MaxFailures {
			return 0, false
		}
		_ = h.Record(loopStart, 0) // all at one instant: every one counts
		d, _ := h.Decide(0, loopStart)
		if sum += tick.Next(d.Delay, 0, every); sum > longest {
			return 0, false
		}
	}
	return sum, true
}

// plural returns noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// finder gathers the findings of s, compiled as p (unjittered), whose
// crash loop showed f, naming fields by t.
type finder struct {
	p   *retrypolicy.Policy
	s   retrypolicy.Strategy
	f   *loopFacts
	t   *fieldNames
	out []Finding
}

// add records a finding: its code, severity and fix, and its message as
// format and args.
func (fd *finder) add(finding Finding, format string, args ...any) {
	finding.Message = fmt.Sprintf(format, args...)
	fd.out = append(fd.out, finding)
}

// find returns the findings, the warnings first.
func (fd *finder) find() []Finding {
	s, f, t := fd.s, fd.f, fd.t
	if s.Kind == retrypolicy.Bounded {
		fd.bounded()
	}
	switch {
	case f.zeroAt > 0 && f.Tick > 0:
		fd.add(Finding{Code: "zero-delay", Severity: Info, Fix: "raise " + t.base + " or the multiplier, so that no delay floors to 0 ns"},
			"from failure %d the delay is 0s: each retry waits only for the next %s tick, so a failing job runs on every tick", f.zeroAt, say.Duration(f.Tick))
	case f.zeroAt > 0:
		fd.add(Finding{Code: "zero-delay", Severity: Warning, Fix: "raise " + t.base + " or the multiplier, so that no delay floors to 0 ns"},
			"from failure %d the crash loop waits 0s: every retry is due at once, a retry storm (under a controller, a retry on every tick)", f.zeroAt)
	}
	if b := s.Backoff; b.Kind == retrypolicy.Exponential || b.Kind == retrypolicy.ExponentialWithJitter {
		fd.exponential()
	}
	if s.Kind == retrypolicy.None {
		fd.add(Finding{Code: "never-retries", Severity: Info, Fix: "use bounded or unless_stopped for a job that should survive a transient error"},
			"none: the first failure is FATAL, so a blip in a dependency ends the job")
	}
	if !f.Settled {
		fd.add(Finding{Code: "unsettled", Severity: Info, Fix: "the figures are a lower bound on what the loop does; retrypolicy plan shows its start"},
			"the crash loop neither gave up nor repeated within %d failures", f.Failures)
	}
	fd.fieldFixes()
	slices.SortStableFunc(fd.out, func(a, b Finding) int { return int(b.Severity) - int(a.Severity) })
	return fd.out
}

// fieldFixes fills Field and Value of the findings that one field's value
// fixes: a never-fatal bounded strategy gives up with MaxAttempts at most
// what its window holds; a backoff without a cap gets the example's.
func (fd *finder) fieldFixes() {
	for i := range fd.out {
		switch fd.out[i].Code {
		case "never-fatal":
			fd.out[i].Field, fd.out[i].Value = fd.t.maxAttempts, strconv.Itoa(fd.f.MostInWindow)
		case "no-cap":
			fd.out[i].Field, fd.out[i].Value = fd.t.maxDelay, fd.t.capValue
		}
	}
}

// bounded records the traps of a bounded strategy: it never gives up, or
// gives up within a minute.
func (fd *finder) bounded() {
	s, f, t := fd.s, fd.f, fd.t
	if f.Settled && !f.Fatal {
		under := ""
		if f.Tick > 0 {
			under = " under a " + say.Duration(f.Tick) + " tick"
		}
		fd.add(Finding{Code: "never-fatal", Severity: Warning, Fix: fd.neverFatalFix()},
			"bounded never gives up when every run crashes%s: its %s window holds at most %d %s, short of %s %d, so it retries forever as unless_stopped does",
			under, say.Duration(s.Window), f.MostInWindow, plural(f.MostInWindow, "failure"), t.maxAttempts, s.MaxAttempts)
	}
	if f.Fatal && f.TimeToFatal < time.Minute {
		fd.add(Finding{Code: "gives-up-fast", Severity: Warning, Fix: "raise " + t.base + ", the multiplier or " + t.maxAttempts + ", so that the failures that make it fatal take longer than the outages the job should ride out"},
			"gives up %s after its first failure when every run crashes (failure %d): an outage that long makes the job FATAL", say.Duration(f.TimeToFatal), f.FailuresToFatal)
	}
}

// exponential records the traps of an exponential backoff: delays that
// shrink, no cap, a window that forgets before the cap.
func (fd *finder) exponential() {
	b := fd.s.Backoff
	if b.Multiplier < 1 {
		fd.add(Finding{Code: "shrinking-delays", Severity: Warning, Fix: "use a multiplier of at least 1 (2 doubles each delay), or a fixed backoff"},
			"multiplier %v is below 1: each delay is shorter than the one before (%s)", b.Multiplier, firstDelays(fd.p))
	}
	if b.Multiplier <= 1 {
		return
	}
	if b.MaxDelay == 0 {
		fd.noCap()
	}
	if fd.f.Settled && !fd.f.Fatal {
		fd.windowForgets()
	}
}

// noCap records that an exponential backoff has no cap: a warning when its
// waits pass a day, else an info, since a backoff without max_delay_secs
// is often the flags' default rather than a choice.
func (fd *finder) noCap() {
	f, t := fd.f, fd.t
	fix := "set " + t.capExample
	if f.LongestWait > 24*time.Hour {
		fd.add(Finding{Code: "no-cap", Severity: Warning, Fix: fix}, "no %s: when every run crashes the waits grow to %s (failure %d)", t.maxDelay, say.Duration(f.LongestWait), f.LongestAt)
		return
	}
	fd.add(Finding{Code: "no-cap", Severity: Info, Fix: fix + ", if a cap was meant: " + t.noCapIsOften},
		"no %s: no cap but the 100-year ceiling, though in the crash loop the waits stay under a day (at most %s)", t.maxDelay, say.Duration(f.LongestWait))
}

// windowForgets records that a loop that never gives up settles below the
// delay's limit: the window forgets failures before the delay reaches it,
// so the waits cycle, or stay on a plateau (docs/semantics.md, section 5).
func (fd *finder) windowForgets() {
	s, f, t := fd.s, fd.f, fd.t
	limit, limitText := 100*365*24*time.Hour, "the 100-year ceiling"
	if s.Backoff.MaxDelay > 0 {
		limit, limitText = s.Backoff.MaxDelay, "its cap of "+say.Duration(s.Backoff.MaxDelay)
	}
	switch {
	case f.LongestWait >= limit:
	case f.fallAt > 0:
		top, bottom := showApart(f.LongestWait, f.fallTo)
		fd.add(Finding{Code: "window-forgets", Severity: Info, Fix: "to settle at a longer wait, lower " + t.maxDelay + " or the multiplier until the window holds the failures that reach it" + planShows(f.fallAt+12, f.Tick, "cycle")},
			"the %s window forgets failures before the delay reaches %s: waits climb to %s, fall back to %s at failure %d, and cycle",
			say.Duration(windowOf(s)), limitText, top, bottom, f.fallAt)
	default:
		fd.add(Finding{Code: "window-forgets", Severity: Info, Fix: "to climb further, lengthen " + t.window + " until it holds the failures that reach the cap, or lower the multiplier" + planShows(f.MostInWindow+6, f.Tick, "plateau")},
			"the %s window forgets failures before the delay reaches %s: it never holds more than %d, so the waits climb to %s and stay there",
			say.Duration(windowOf(s)), limitText, f.MostInWindow, say.Duration(f.LongestWait))
	}
}

// MaxPlanFailures is the most failures the command's plan (and the API's
// /v1/plan) lists: a finding points to a plan only within it.
const MaxPlanFailures = 1000

// planShows is a finding's pointer to the plan of n failures under the
// tick every that shows what, when the command's plan lists that many;
// nothing otherwise.
func planShows(n int, every time.Duration, what string) string {
	if n > MaxPlanFailures {
		return ""
	}
	tickFlag := ""
	if every != tick.Default {
		tickFlag = " --tick " + every.String()
		if every == 0 {
			tickFlag = " --tick 0"
		}
	}
	return fmt.Sprintf(" (retrypolicy plan --failures %d%s shows the %s)", n, tickFlag, what)
}

// showApart shows two waits, exactly when their rounded forms are the same:
// a climb of less than a millisecond is still a climb.
func showApart(a, b time.Duration) (string, string) {
	if sa, sb := say.Duration(a), say.Duration(b); sa != sb || a == b {
		return sa, sb
	}
	return a.String(), b.String()
}

// neverFatalFix says which window, or which max_attempts, would make a
// never-fatal strategy give up.
func (fd *finder) neverFatalFix() string {
	p, s, f, t := fd.p, fd.s, fd.f, fd.t
	fix := fmt.Sprintf("set %s to at most %d, or shorten the delays", t.maxAttempts, f.MostInWindow)
	under := ""
	if f.Tick > 0 {
		under = " under the " + say.Duration(f.Tick) + " tick"
	}
	if need, ok := climb(p, s.MaxAttempts, f.Tick); ok {
		secs := int64((need + time.Second - 1) / time.Second)
		return fmt.Sprintf("a window of at least %ds (%s) holds %d failures%s; or %s", secs, t.windowOf(secs), s.MaxAttempts, under, fix)
	}
	return fmt.Sprintf("no window of up to 7 days holds %d failures with these delays%s: %s", s.MaxAttempts, under, fix)
}

// firstDelays lists the first three delays of p's backoff.
func firstDelays(p *retrypolicy.Policy) string {
	at := slices.Repeat([]time.Time{loopStart}, 3)
	return say.Duration(waitAfter(p, at[:1], 0)) + ", " + say.Duration(waitAfter(p, at[:2], 0)) + ", " + say.Duration(waitAfter(p, at, 0)) + ", …"
}

// windowOf returns the window s counts failures over.
func windowOf(s retrypolicy.Strategy) time.Duration {
	if s.Kind == retrypolicy.Bounded {
		return s.Window
	}
	return time.Hour
}

// checkEvery is how many failures a crash loop follows between looks at
// its context.
const checkEvery = 4096
