package report

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/retrypolicy/retrypolicy/fleet"
	"github.com/retrypolicy/retrypolicy/internal/say"
	"github.com/retrypolicy/retrypolicy/internal/wire"
)

// CollapseJSON is one line of simulate --json for the collapse scenario:
// the policy's outcome, its counts a second, and the settings it ran with.
// A run not judged has its verdicts and their seconds null.
func CollapseJSON(c fleet.Collapse, r fleet.CollapseResult) []byte {
	b := []byte(`{"policy":`)
	b = wire.AppendString(b, r.Policy.String())
	b = fmt.Appendf(b, `,"judged":%t`, r.Judged)
	b = appendVerdicts(b, r)
	b = fmt.Appendf(b, `,"amplification":%s,"trigger_arrivals":%d,"trigger_succeeded":%d`,
		Hundredths(r.Amplification), r.TriggerArrivals, r.TriggerSucceeded)
	b = appendTruncated(b, r.Truncated, r.TruncatedBy)
	b = appendInts(append(b, `,"arrivals_per_sec":`...), r.Arrivals)
	b = appendInts(append(b, `,"attempts_per_sec":`...), r.Attempts)
	b = appendInts(append(b, `,"goodput_per_sec":`...), r.Goodput)
	b = appendInts(append(b, `,"queue_per_sec":`...), r.Queue)
	b = appendInts(append(b, `,"retries_per_sec":`...), r.Retries)
	b = appendInts(append(b, `,"wasted_per_sec":`...), r.Wasted)
	b = appendInts(append(b, `,"throttled_per_sec":`...), r.Throttled)
	return append(appendCollapseSettings(append(b, `,"settings":`...), c), '}')
}

// appendVerdicts appends r's verdicts, recovered and settled, each with
// its seconds after the trigger (recovery_secs, settled_secs): all null
// when the run was not judged, the seconds null for a no.
func appendVerdicts(b []byte, r fleet.CollapseResult) []byte {
	for _, v := range []struct {
		name, secs string
		yes        bool
		n          int
	}{{"recovered", "recovery_secs", r.Recovered, r.RecoverySecs}, {"settled", "settled_secs", r.Settled, r.SettledSecs}} {
		switch {
		case !r.Judged:
			b = fmt.Appendf(b, `,%q:null,%q:null`, v.name, v.secs)
		case !v.yes:
			b = fmt.Appendf(b, `,%q:false,%q:null`, v.name, v.secs)
		default:
			b = fmt.Appendf(b, `,%q:true,%q:%d`, v.name, v.secs, v.n)
		}
	}
	return b
}

// Hundredths writes f to two decimals at most, as the collapse's table
// shows attempts a call; null for NaN or an infinity.
func Hundredths(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "null"
	}
	return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64)
}

// appendCollapseSettings appends c's settings as a JSON object.
func appendCollapseSettings(b []byte, c fleet.Collapse) []byte {
	secs := func(d time.Duration) string { return string(wire.AppendSeconds(nil, d)) }
	strategy, _ := c.Strategy.MarshalJSON() // a strategy Run validated
	return fmt.Appendf(b, `{"workers":%d,"service_secs":%s,"exponential_service":%t,"queue":%d,"check_deadlines":%t,`+
		`"rate":%s,"clients":%d,"timeout_secs":%s,"spike":%s,"drop":%s,"fail_share":%s,"trigger_at_secs":%s,"trigger_for_secs":%s,`+
		`"duration_secs":%s,"seed":%d,"strategy":%s,"budget_ratio":%s,"budget_burst":%d,"budget_percent":%s,"budget_interval_secs":%s,"budget_min_retries":%d,`+
		`"throttle_k":%s,"throttle_window_secs":%s,"hedge_delay_secs":%s}`,
		c.Workers, secs(c.Service), c.ExponentialService, c.Queue, c.CheckDeadlines,
		number(c.Rate), c.Clients, secs(c.Timeout), number(c.Spike), number(c.Drop), Hundredths(c.FailShare), secs(c.TriggerAt), secs(c.TriggerFor),
		secs(c.Duration), c.Seed, strategy, number(c.BudgetRatio), c.BudgetBurst, number(c.BudgetPercent), secs(c.BudgetInterval), c.BudgetMinRetries,
		number(c.ThrottleK), secs(c.ThrottleWindow), secs(c.HedgeDelay))
}

// CollapseTrigger says what c's trigger does: "3x the load", "50% of the
// workers lost" or "90% of the attempts failing".
func CollapseTrigger(c fleet.Collapse) string {
	switch {
	case c.Drop > 0:
		return fmt.Sprintf("%g%% of the workers lost", c.Drop*100)
	case c.FailShare > 0:
		return fmt.Sprintf("%g%% of the attempts failing", c.FailShare*100)
	}
	return fmt.Sprintf("%gx the load", c.Spike)
}

// CollapseVerdict says how a policy's run fared, for a table or a legend:
// how long after the trigger's end it recovered and settled ("0s",
// "never"), or "not judged" for both.
func CollapseVerdict(r fleet.CollapseResult) (recovered, settled string) {
	if !r.Judged {
		return "not judged", "not judged"
	}
	after := func(yes bool, secs int) string {
		if !yes {
			return "never"
		}
		return say.Duration(time.Duration(secs) * time.Second)
	}
	return after(r.Recovered, r.RecoverySecs), after(r.Settled, r.SettledSecs)
}

// CollapseUnjudged says why a run was not judged: "cut short" or
// "collapsed before the trigger"; "" for a run judged.
func CollapseUnjudged(r fleet.CollapseResult) string {
	switch {
	case r.Judged:
		return ""
	case r.Truncated:
		return "cut short"
	}
	return "collapsed before the trigger"
}

// CollapseNotJudged is the line that says why policy r was not judged
// (cut short at a bound, or collapsed before its trigger), "" for a run
// judged.
func CollapseNotJudged(r fleet.CollapseResult) string {
	const figures = "its counts are lower bounds, and whether it recovered or settled is not judged"
	switch {
	case r.Judged:
		return ""
	case r.TruncatedBy == fleet.BoundMaxCalls:
		return fmt.Sprintf("%s: truncated at --max-runs calls: %s\n", r.Policy, figures)
	case r.Truncated:
		return Truncated(r.Policy.String(), r.TruncatedBy, figures)
	}
	return fmt.Sprintf("%s: its goodput over the 30s before the trigger was below half its arrivals (it collapsed with no trigger): whether it recovered or settled is not judged\n", r.Policy)
}

// CollapseChart draws each policy's goodput a second, on a log scale,
// with the trigger shaded. Each key says when the policy recovered and
// settled, or that it was not judged, and which line hides it, if one
// does.
func CollapseChart(c fleet.Collapse, results []fleet.CollapseResult) []byte {
	secs, peak := 1, 1
	for _, r := range results {
		secs = max(secs, len(r.Goodput))
		for _, n := range r.Goodput {
			peak = max(peak, n)
		}
	}
	ch := newLoadChart(secs, time.Second, peak)
	ch.xLabel, ch.keyGap = "time since the run began", 46 // a key of three lines
	ch.tall(len(results))
	ch.start(fmt.Sprintf("%s calls a second to %d workers of %s: goodput a second (log scale), %s for %s",
		number(c.Rate), c.Workers, say.Duration(c.Service), CollapseTrigger(c), say.Duration(c.TriggerFor)), 0, "")
	ch.shade(c.TriggerAt.Seconds(), (c.TriggerAt + c.TriggerFor).Seconds(), "trigger")
	for i, r := range results {
		ch.line(i, r.Goodput, nil)
		note := collapseNote(r)
		under := ""
		if j := ch.under(results, i); j >= 0 {
			under = "its line is under " + results[j].Policy.String() + "'s"
		}
		notes := []string{note, under}
		if !r.Judged {
			notes = []string{note, CollapseUnjudged(r), under}
		}
		ch.legend(i, key{fmt.Sprintf("%s (%.2fx)", r.Policy, r.Amplification), notes})
	}
	return ch.end()
}

// collapseNote says in a legend's few words how r fared: "recovered 32s,
// settled 0s after", "never recovered nor settled", "not judged" (why on
// the line after it, CollapseUnjudged).
func collapseNote(r fleet.CollapseResult) string {
	recovered, settled := CollapseVerdict(r)
	switch {
	case !r.Judged:
		return "not judged:"
	case r.Recovered && r.Settled:
		return "recovered " + recovered + ", settled " + settled + " after"
	case r.Recovered:
		return "recovered " + recovered + " after, never settled"
	case r.Settled:
		return "never recovered, settled " + settled + " after"
	}
	return "never recovered nor settled"
}

// under returns the last policy drawn after the i-th whose goodput line
// lies on the i-th's, within 2 pixels at every point, so that it hides
// it; or -1.
func (c *loadChart) under(results []fleet.CollapseResult, i int) int {
	n := (c.units + c.per - 1) / c.per
	for j := len(results) - 1; j > i; j-- {
		on := true
		for p := 0; p < n && on; p++ {
			a, _ := c.bucket(results[i].Goodput, p)
			b, _ := c.bucket(results[j].Goodput, p)
			on = math.Abs(c.y(a)-c.y(b)) <= 2
		}
		if on {
			return j
		}
	}
	return -1
}
