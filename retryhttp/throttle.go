package retryhttp

import (
	"errors"
	"slices"

	"github.com/retrypolicy/retrypolicy/internal/echo"
	"github.com/retrypolicy/retrypolicy/retry"
)

// withHostThrottles is the transport's setting of WithHostThrottles.
var withHostThrottles = retry.NewAdapterSetting[config]("retryhttp.WithHostThrottles")

// WithHostThrottles gives each host a client-side throttle of its own
// made by newThrottle (a closure over retry.NewThrottle), in the host
// table of the package doc beside the host's budget: before a request's
// first attempt the host's throttle may reject it, and the transport then
// returns a *retry.GiveUpError with the reason Throttled (wrapping
// retry.ErrThrottled), the request unsent; see retry.WithThrottle for what
// a throttle counts. NewTransport calls newThrottle once, for the overflow
// entry, and refuses the transport when it fails; then once per new host,
// a later failure making the host share the overflow entry's throttle and
// told to the transport's observers (an Event of no failure whose Err is
// a [*HostThrottleError]). A transport takes throttles per host only: it
// refuses retry.WithThrottle. Off by default: a throttle sheds good
// requests when a host fails at random rather than from load.
func WithHostThrottles(newThrottle func() (*retry.Throttle, error)) retry.Option {
	return withHostThrottles.Option(func(c *config) {
		if newThrottle == nil {
			c.refuse("WithHostThrottles", "the function is nil")
			return
		}
		c.hostThrottle = newThrottle
	})
}

// HostThrottleError is a host's throttle that the transport could not
// make: the host's requests share the transport's overflow entry, and the
// transport's observers are told, as of a [*HostBudgetError].
type HostThrottleError struct {
	// Host is the host, as the table keys it: "https://example.com:443".
	Host string
	// Err is the constructor's error.
	Err error
}

func (e *HostThrottleError) Error() string {
	return "retryhttp: the throttle of " + echo.Quote(e.Host) + " could not be made, its requests share the overflow entry's: " + e.Err.Error()
}

// Unwrap returns the constructor's error.
func (e *HostThrottleError) Unwrap() error { return e.Err }

// throttleError is a throttle's constructor's error, told apart from a
// budget's.
type throttleError struct{ err error }

func (e *throttleError) Error() string { return e.err.Error() }

// errNoThrottle is a host throttle's constructor that made none.
var errNoThrottle = errors.New("the function made no throttle")

// newThrottle calls a throttle's constructor: its error, or a nil
// throttle, is a *throttleError.
func newThrottle(make func() (*retry.Throttle, error)) (*retry.Throttle, error) {
	th, err := make()
	switch {
	case err != nil:
		return nil, &throttleError{err}
	case th == nil:
		return nil, &throttleError{errNoThrottle}
	}
	return th, nil
}

// hostError returns what the observers are told of the host k's entry
// that could not be made for err.
func hostError(k hostKey, err error) error {
	if te, ok := err.(*throttleError); ok {
		return &HostThrottleError{Host: k.String(), Err: te.err}
	}
	return &HostBudgetError{Host: k.String(), Err: err}
}

// checkThrottles returns the error of retry.WithThrottle given to a
// transport, which takes throttles per host only.
func checkThrottles(loopOpts []retry.Option) error {
	if slices.ContainsFunc(loopOpts, retry.Option.NamesThrottle) {
		return errors.New("retryhttp: retry.WithThrottle: a transport takes throttles per host; give retryhttp.WithHostThrottles")
	}
	return nil
}
