// Package tick is the controller's tick, in one place for every what-if tool.
//
// It says when a retry starts under a tick (docs/semantics.md, section 5),
// the tick's bounds, and the default the command and the server assume.
package tick

import (
	"fmt"
	"time"

	"github.com/retrypolicy/retrypolicy/internal/say"
)

// Max is the longest tick any tool takes: a day.
const Max = 24 * time.Hour

// Default is the tick the command, the server and its page assume unless
// told otherwise: the controller's one-minute check.
const Default = time.Minute

// longest is the largest offset: a later start saturates to it.
const longest = time.Duration(1<<63 - 1)

// Next returns when a retry due at offset due, of a failure at offset
// failure, starts, both offsets from a tick: at due with no tick (0), and
// under a tick at the first multiple of it at or after due that is strictly
// after failure, so that a job that fails on a tick is seen at the next
// one. It saturates at the largest Duration rather than wrap.
func Next(due, failure, tick time.Duration) time.Duration {
	if tick <= 0 {
		return due
	}
	if failure >= longest {
		return longest
	}
	at := max(due, failure+1)
	if at%tick == 0 {
		return at
	}
	if at > longest-tick {
		return longest
	}
	return at - at%tick + tick
}

// Check returns the rule d breaks, for its caller to name the option,
// unless d is a tick the tools take: from 0 to Max.
func Check(d time.Duration) error {
	if d < 0 || d > Max {
		return fmt.Errorf("must be from 0 to %s, got %v", say.GoDuration(Max), d)
	}
	return nil
}
