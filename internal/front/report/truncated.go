package report

import (
	"fmt"
	"strconv"

	"github.com/retrypolicy/retrypolicy/fleet"
	"github.com/retrypolicy/retrypolicy/internal/wire"
)

// boundWords say a bound as the command's user knows it.
var boundWords = map[fleet.Bound]string{
	fleet.BoundMaxRuns:       "--max-runs runs",
	fleet.BoundMaxCalls:      "--max-runs calls, all layers counted",
	fleet.BoundMaxMessages:   "its messages in all",
	fleet.BoundEvents:        fmt.Sprintf("its events (attempts, hops, timeouts and arrivals: %d for each of --max-runs calls)", fleet.EventsPerCall),
	fleet.BoundPendingEvents: fmt.Sprintf("%d events waiting at once", fleet.MaxPendingEvents),
	fleet.BoundJobFailures:   fmt.Sprintf("a job with %d failures in its window", fleet.MaxJobFailures),
	fleet.BoundHeldFailures:  fmt.Sprintf("%d failures held in all", fleet.MaxHeldFailures),
	fleet.BoundCallsInFlight: "a million calls in flight at once",
	fleet.BoundContext:       "its time budget",
}

// Truncated is the line that says a run named name stopped at bound b,
// and what its figures then are.
func Truncated(name string, b fleet.Bound, figures string) string {
	words, ok := boundWords[b]
	if !ok {
		words = string(b)
	}
	return fmt.Sprintf("%s: truncated at %s: %s\n", name, words, figures)
}

// appendTruncated appends the JSON fields that say whether a run was cut:
// "truncated", and "truncated_by" (the bound's name) when it was.
func appendTruncated(b []byte, truncated bool, by fleet.Bound) []byte {
	b = append(b, `,"truncated":`...)
	b = strconv.AppendBool(b, truncated)
	if truncated {
		b = append(b, `,"truncated_by":`...)
		b = wire.AppendString(b, string(by))
	}
	return b
}
