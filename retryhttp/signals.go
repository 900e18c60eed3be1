package retryhttp

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
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
// X-Ms-Retry-After-Ms (milliseconds, a non-negative decimal number,
// fractions rounded up to a whole millisecond), each when valid, then
// Retry-After ([ParseRetryAfter]). Waits past the longest Duration
// saturate.
func WaitAsked(h http.Header, now time.Time) (time.Duration, bool) {
	for _, name := range [...]string{RetryAfterMsHeader, MSRetryAfterMsHeader} {
		if d, ok := ParseRetryAfterMs(h.Get(name)); ok {
			return d, true
		}
	}
	return ParseRetryAfter(h.Get("Retry-After"), now)
}

// ParseRetryAfterMs reads a wait in milliseconds: a non-negative decimal
// number such as "1500" or "20.5", with white space around it; a fraction
// of a millisecond is rounded up to a whole one, and a wait past the
// longest Duration saturates. It returns false for anything else.
func ParseRetryAfterMs(value string) (time.Duration, bool) {
	whole, frac, dotted := strings.Cut(strings.TrimSpace(value), ".")
	if whole == "" || !digits(whole) || dotted && (frac == "" || !digits(frac)) {
		return 0, false
	}
	const most = uint64(math.MaxInt64 / int64(time.Millisecond))
	ms, err := strconv.ParseUint(whole, 10, 64)
	if err != nil || ms > most {
		return math.MaxInt64, true // digits past uint64's range: saturate
	}
	if strings.Trim(frac, "0") != "" {
		ms++ // rounded up to a whole millisecond
	}
	if ms > most {
		return math.MaxInt64, true
	}
	return time.Duration(ms) * time.Millisecond, true
}

// digits reports whether s is made of ASCII digits only.
func digits(s string) bool { return strings.Trim(s, "0123456789") == "" }

// serverSays is what a response's headers say of retrying it.
type serverSays uint8

const (
	saysNothing serverSays = iota
	saysNo                 // X-Should-Retry: false, or X-Envoy-Overloaded
	saysYes                // X-Should-Retry: true
)

// says reads X-Should-Retry and X-Envoy-Overloaded: a refusal wins.
func says(h http.Header) serverSays {
	if h.Get(EnvoyOverloadedHeader) != "" {
		return saysNo
	}
	switch v := strings.TrimSpace(h.Get(ShouldRetryHeader)); {
	case strings.EqualFold(v, "false"):
		return saysNo
	case strings.EqualFold(v, "true"):
		return saysYes
	}
	return saysNothing
}
