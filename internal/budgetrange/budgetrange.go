// Package budgetrange holds the ranges of a retry budget's settings, once.
//
// Retry's constructors, the windowed budget's slots and the what-if's
// options check against them.
package budgetrange

import (
	"strconv"
	"time"
)

// Problem is a setting out of its range: the argument's name as the
// budget's constructor calls it ("ratio") and the rule it breaks, with the
// value it got ("must be between 0 and 1000, got -1").
type Problem struct{ Arg, Rule string }

// Token returns the problems of a token budget's ratio (0 to 1000) and
// burst (1 to 1e9), in that order.
func Token(ratio float64, burst int) []Problem {
	var out []Problem
	if !(ratio >= 0 && ratio <= 1000) {
		out = append(out, Problem{"ratio", "must be between 0 and 1000, got " + strconv.FormatFloat(ratio, 'g', -1, 64)})
	}
	if burst < 1 || burst > 1e9 {
		out = append(out, Problem{"burst", "must be between 1 and 1000000000, got " + strconv.Itoa(burst)})
	}
	return out
}

// Window returns the problems of a windowed budget's percent (0 to 100),
// interval (1 ms to 1 h) and minRetries (0 to 1e9), in that order.
func Window(percent float64, interval time.Duration, minRetries int) []Problem {
	var out []Problem
	if !(percent >= 0 && percent <= 100) {
		out = append(out, Problem{"percent", "must be between 0 and 100, got " + strconv.FormatFloat(percent, 'g', -1, 64)})
	}
	if interval < time.Millisecond || interval > time.Hour {
		out = append(out, Problem{"interval", "must be between 1ms and 1h, got " + interval.String()})
	}
	if minRetries < 0 || minRetries > 1e9 {
		out = append(out, Problem{"minRetries", "must be between 0 and 1000000000, got " + strconv.Itoa(minRetries)})
	}
	return out
}
