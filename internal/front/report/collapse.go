package report

import (
	"bytes"
	"fmt"
	"time"

	"github.com/retrypolicy/retrypolicy/fleet"
	"github.com/retrypolicy/retrypolicy/internal/say"
	"github.com/retrypolicy/retrypolicy/internal/wire"
)

// CollapseJSON is one line of simulate --json for the collapse scenario:
// the policy's outcome, its counts a second, and the settings it ran with.
func CollapseJSON(c fleet.Collapse, r fleet.CollapseResult) []byte {
	b := []byte(`{"policy":`)
	b = wire.AppendString(b, r.Policy)
	b = fmt.Appendf(b, `,"recovered":%t,"recovery_secs":`, r.Recovered)
	if r.Recovered {
		b = fmt.Appendf(b, "%d", r.RecoverySecs)
	} else {
		b = append(b, "null"...)
	}
	b = fmt.Appendf(b, `,"amplification":%s`, number(r.Amplification))
	b = appendTruncated(b, r.Truncated != "", r.Truncated)
	b = appendInts(append(b, `,"arrivals_per_sec":`...), r.Arrivals)
	b = appendInts(append(b, `,"attempts_per_sec":`...), r.Attempts)
	b = appendInts(append(b, `,"goodput_per_sec":`...), r.Goodput)
	b = appendInts(append(b, `,"queue_per_sec":`...), r.Queue)
	b = appendInts(append(b, `,"retries_per_sec":`...), r.Retries)
	b = appendInts(append(b, `,"wasted_per_sec":`...), r.Wasted)
	return append(appendCollapseSettings(append(b, `,"settings":`...), c), '}')
}

// appendCollapseSettings appends c's settings as a JSON object.
func appendCollapseSettings(b []byte, c fleet.Collapse) []byte {
	secs := func(d time.Duration) string { return string(wire.AppendSeconds(nil, d)) }
	strategy, _ := c.Strategy.MarshalJSON() // a strategy Run validated
	return fmt.Appendf(b, `{"workers":%d,"service_secs":%s,"exponential_service":%t,"queue":%d,"check_deadlines":%t,`+
		`"rate":%s,"clients":%d,"timeout_secs":%s,"spike":%s,"drop":%s,"trigger_at_secs":%s,"trigger_for_secs":%s,`+
		`"duration_secs":%s,"seed":%d,"strategy":%s,"budget_ratio":%s,"budget_burst":%d,"budget_percent":%s,"budget_interval_secs":%s,"budget_min_retries":%d}`,
		c.Workers, secs(c.Service), c.ExponentialService, c.Queue, c.CheckDeadlines,
		number(c.Rate), c.Clients, secs(c.Timeout), number(c.Spike), number(c.Drop), secs(c.TriggerAt), secs(c.TriggerFor),
		secs(c.Duration), c.Seed, strategy, number(c.BudgetRatio), c.BudgetBurst, number(c.BudgetPercent), secs(c.BudgetInterval), c.BudgetMinRetries)
}

// CollapseChart draws each policy's goodput a second, on a log scale,
// with the trigger shaded.
func CollapseChart(c fleet.Collapse, results []fleet.CollapseResult) []byte {
	secs, peak := 1, 1
	for _, r := range results {
		secs = max(secs, len(r.Goodput))
		for _, n := range r.Goodput {
			peak = max(peak, n)
		}
	}
	ch := newLoadChart(secs, time.Second, peak)
	ch.xLabel = "time since the run began"
	var b bytes.Buffer
	trigger := fmt.Sprintf("%gx the load", c.Spike)
	if c.Drop > 0 {
		trigger = fmt.Sprintf("%g%% of the workers lost", c.Drop*100)
	}
	ch.start(&b, fmt.Sprintf("%s calls a second to %d workers of %s: goodput a second (log scale), %s for %s",
		number(c.Rate), c.Workers, say.Duration(c.Service), trigger, say.Duration(c.TriggerFor)), 0, "")
	ch.shade(&b, c.TriggerAt.Seconds(), (c.TriggerAt + c.TriggerFor).Seconds(), "trigger")
	for i, r := range results {
		ch.line(&b, i, r.Goodput, nil)
		note := "recovered " + say.Duration(time.Duration(r.RecoverySecs)*time.Second) + " after"
		if !r.Recovered {
			note = "never recovered"
		}
		ch.legend(&b, i, fmt.Sprintf("%s (%.2fx)", r.Policy, r.Amplification), note)
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}
