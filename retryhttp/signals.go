package retryhttp

import (
	"net/http"
	"strings"
	"time"

	"github.com/retrypolicy/retrypolicy/retry"
)

// The headers by which servers of other stacks ask for a wait or say
// whether to retry; the transport reads them unless built with
// [WithoutServerSignals].
const (
	// RetryAfterMsHeader asks for a wait in milliseconds, preferred to
	// Retry-After when valid (OpenAI's and Anthropic's APIs send it).
	RetryAfterMsHeader = "Retry-After-Ms"
	// MSRetryAfterMsHeader is the same, as Azure's APIs send it.
	MSRetryAfterMsHeader = "X-Ms-Retry-After-Ms"
	// ShouldRetryHeader says "true" or "false" (in any letter case): false
	// makes a response not retried, true makes a response of status 400 or
	// more retried that the classifier would not retry.
	ShouldRetryHeader = "X-Should-Retry"
	// EnvoyOverloadedHeader, with any value, marks a request a proxy shed
	// under load: it is not retried.
	EnvoyOverloadedHeader = "X-Envoy-Overloaded"
)

// WaitAsked returns the wait a response's header asks for before the next
// request, and false when it asks for none: Retry-After-Ms, then
// X-Ms-Retry-After-Ms (milliseconds, [ParseRetryAfterMs]), each when it
// has a valid value, then Retry-After ([ParseRetryAfter]). A header sent
// more than once is read as its longest valid value. Waits past the
// longest Duration saturate.
func WaitAsked(h http.Header, now time.Time) (time.Duration, bool) {
	for _, name := range [...]string{RetryAfterMsHeader, MSRetryAfterMsHeader} {
		if d, ok := longest(h.Values(name), func(v string) (time.Duration, bool) { return ParseRetryAfterMs(v) }); ok {
			return d, true
		}
	}
	return longest(h.Values("Retry-After"), func(v string) (time.Duration, bool) { return ParseRetryAfter(v, now) })
}

// longest returns the longest of values that parse reads as valid, and
// false when none is.
func longest(values []string, parse func(string) (time.Duration, bool)) (time.Duration, bool) {
	var most time.Duration
	var found bool
	for _, v := range values {
		if d, ok := parse(v); ok {
			most, found = max(most, d), true
		}
	}
	return most, found
}

// ParseRetryAfterMs reads a wait in milliseconds as every layer of this
// module reads one ([retry.ParseMillis]): a decimal number such as "1500"
// or "20.5", with no sign, space or exponent; a fraction of a millisecond
// is rounded up to a whole one, and a wait past the longest Duration
// saturates. It returns false for anything else.
func ParseRetryAfterMs(value string) (time.Duration, bool) { return retry.ParseMillis(value) }

// serverSays is what a response's headers say of retrying it.
type serverSays uint8

const (
	saysNothing serverSays = iota
	saysNo                 // X-Should-Retry: false, or X-Envoy-Overloaded
	saysYes                // X-Should-Retry: true
)

// says reads X-Should-Retry and X-Envoy-Overloaded, every value of each:
// a refusal wins if any value says it.
func says(h http.Header) serverSays {
	for _, v := range h.Values(EnvoyOverloadedHeader) {
		if v != "" {
			return saysNo
		}
	}
	said := saysNothing
	for _, v := range h.Values(ShouldRetryHeader) {
		switch v = strings.TrimSpace(v); {
		case strings.EqualFold(v, "false"):
			return saysNo
		case strings.EqualFold(v, "true"):
			said = saysYes
		}
	}
	return said
}
