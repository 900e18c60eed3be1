package retryhttp

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/retrypolicy/retrypolicy/internal/echo"
	"github.com/retrypolicy/retrypolicy/retry"
)

// hostKey is a host table's key: one server however its URL spells it.
type hostKey struct {
	scheme string // in lower case
	host   string // in lower case ASCII, without a trailing dot
	port   int    // the scheme's default filled in
}

// keyOf returns the key of the server u names, and false when its port is
// not a number from 0 to 65535.
func keyOf(u *url.URL) (hostKey, bool) {
	k := hostKey{scheme: lowerASCII(u.Scheme), host: strings.TrimSuffix(lowerASCII(u.Hostname()), ".")}
	port := u.Port()
	if port == "" {
		switch k.scheme {
		case "http", "ws":
			k.port = 80
		case "https", "wss":
			k.port = 443
		}
		return k, true
	}
	for _, c := range []byte(port) {
		if c < '0' || c > '9' || k.port > 65535 {
			return k, false
		}
		k.port = k.port*10 + int(c-'0')
	}
	return k, k.port <= 65535
}

// lowerASCII returns s with its ASCII letters in lower case, s itself
// (allocating nothing) when it has none in upper case.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// hostEntry is a host's loop: the transport's, with the host's budget
// and throttle.
type hostEntry struct {
	loop     *retry.Loop[*http.Response]
	hedge    *retry.Loop[*hedged] // its hedged requests', with samples of the host's own; nil for none
	budget   *retry.Budget        // nil: the overflow entry's, shared, or the transport's
	full     float64              // the budget's Tokens when it was made: full
	throttle *retry.Throttle      // nil: none per host, or the overflow entry's
}

// hostTable holds each host's budget and throttle, by hostKey: at most
// MaxHosts entries, and an overflow entry that the hosts beyond them
// share.
type hostTable struct {
	newBudget   func() (*retry.Budget, error)   // nil: the transport's budget, or none
	newThrottle func() (*retry.Throttle, error) // nil: no throttle
	shared      *retry.Loop[*http.Response]     // the transport's, naming no budget unless newBudget is nil
	hedge       *retry.Loop[*hedged]            // the transport's hedging loop, nil for none
	overflow    *hostEntry

	mu     sync.RWMutex
	byHost map[hostKey]*hostEntry
}

// newHostTable returns the table of the hosts of a transport whose loop
// is shared (and whose hedging loop is h.hedge, if it hedges), making its
// overflow entry with h.newBudget and h.newThrottle (either may be nil):
// an error when one fails or makes nothing.
func newHostTable(h *hostTable) (*hostTable, error) {
	h.byHost = make(map[hostKey]*hostEntry)
	e, err := h.entry()
	if err != nil {
		return nil, err
	}
	h.overflow = e
	return h, nil
}

// errNoBudget is a host budget's constructor that made none.
var errNoBudget = errors.New("the function made no budget")

// entry returns a new entry, its budget made by newBudget and its
// throttle by newThrottle; the error of a throttle's constructor is a
// *throttleError.
func (h *hostTable) entry() (*hostEntry, error) {
	e := &hostEntry{}
	var opts []retry.Option
	if h.newBudget != nil {
		b, err := h.newBudget()
		switch {
		case err != nil:
			return nil, err
		case b == nil:
			return nil, errNoBudget
		}
		e.budget, e.full = b, b.Tokens()
		opts = append(opts, retry.WithBudget(b)) // the shared loop names no budget: NewTransport checked
	}
	if h.newThrottle != nil {
		th, err := newThrottle(h.newThrottle)
		if err != nil {
			return nil, err
		}
		e.throttle = th
		opts = append(opts, retry.WithThrottle(th))
	}
	l, err := h.shared.With(opts...)
	if err != nil {
		return nil, err
	}
	e.loop = l
	if h.hedge != nil {
		if e.hedge, err = h.hedge.With(opts...); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// HostBudgetError is a host's budget that the transport could not make:
// the host's requests share the transport's overflow budget, and the
// transport's observers (retry.WithObserver) are told, with an Event
// whose Failures is 0 (not a retry) and whose Err is it.
type HostBudgetError struct {
	// Host is the host, as the table keys it: "https://example.com:443".
	Host string
	// Err is the constructor's error.
	Err error
}

func (e *HostBudgetError) Error() string {
	return "retryhttp: the budget of " + echo.Quote(e.Host) + " could not be made, its requests share the overflow budget: " + e.Err.Error()
}

// Unwrap returns the constructor's error.
func (e *HostBudgetError) Unwrap() error { return e.Err }

// loop returns the loop of req's host.
func (h *hostTable) loop(req *http.Request) *retry.Loop[*http.Response] {
	return h.entryOf(req).loop
}

// entryOf returns the entry of req's host.
func (h *hostTable) entryOf(req *http.Request) *hostEntry {
	k, ok := keyOf(req.URL)
	if !ok {
		return h.overflow // a port that is no number: the request fails below
	}
	h.mu.RLock()
	e := h.byHost[k]
	h.mu.RUnlock()
	if e != nil {
		return e
	}
	return h.add(k, req)
}

// add returns the loop of a host the table has not seen, k: a new budget
// of its own while the table has room or an entry it may take the place
// of, else the overflow entry's. A budget that cannot be made is the
// overflow entry's, told to the observers (outside the table's lock, so
// that an observer may send a request).
func (h *hostTable) add(k hostKey, req *http.Request) *hostEntry {
	e, err := h.place(k)
	if err != nil {
		h.shared.Observe(retry.Event{Err: hostError(k, err), Context: req.Context()})
	}
	return e
}

// place returns k's entry, making it when the table has room for it, and
// the constructor's error when it failed (the entry is then the overflow
// entry's, kept for k so that it is not made again for each request).
func (h *hostTable) place(k hostKey) (*hostEntry, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.byHost[k]; e != nil {
		return e, nil
	}
	if len(h.byHost) >= MaxHosts && !h.evict() {
		return h.overflow, nil
	}
	e, err := h.entry()
	if err != nil {
		e = &hostEntry{loop: h.overflow.loop, hedge: h.overflow.hedge}
	}
	h.byHost[k] = e
	return e, err
}

// evict removes an entry that holds nothing a host could lose: one that
// shares the overflow entry, or whose budget is full and whose throttle
// rejects nothing. It reports false when every entry's budget has been
// drawn on or its throttle rejects, so that a new host shares the
// overflow entry rather than take such a one's place (a chain of
// redirects to new names cannot launder a budget or a throttle, nor
// starve other hosts). h.mu is held.
func (h *hostTable) evict() bool {
	for k, e := range h.byHost {
		if (e.budget == nil || e.budget.Tokens() >= e.full) && (e.throttle == nil || e.throttle.Rejection() == 0) {
			delete(h.byHost, k)
			return true
		}
	}
	return false
}

// String returns k as a URL's origin: "https://example.com:443".
func (k hostKey) String() string {
	host := k.host
	if strings.Contains(host, ":") {
		host = "[" + host + "]" // an IPv6 address
	}
	return k.scheme + "://" + host + ":" + strconv.Itoa(k.port)
}
