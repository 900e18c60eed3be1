package retrypolicy

import (
	"errors"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/retrypolicy/retrypolicy/internal/histcode"
)

// History is one job's failure history, kept in memory by a scheduler that
// decides often. It records failures in any order and keeps those in the
// window of the newest (older ones can never count again), 8 bytes each
// beside a 48-byte header: deciding costs the same at a million failures as
// at one. It keeps the uptime of the run that failed last, so a scheduler
// stores nothing beside it. Histories share one compiled [Policy].
// A History saves itself as binary or as JSON, its times in UTC without a
// monotonic reading. The zero History is empty, under the Default strategy.
// A History is safe for concurrent use; encoding one copies it under its lock.
//
// Its life follows the job's: each failed run is a [History.Record], each
// controller tick a [History.Decide] for a job in ERROR. A run that succeeds
// changes nothing: failures leave the window as they age, so a job that
// fails again soon after a success is decided with its recent failures
// still counted (a job that fails on every run of a trigger still ends
// fatal under a bounded strategy). [History.Reset] is for a job that starts
// over as a new one, created again with the same idempotency key.
type History struct {
	mu sync.Mutex
	p  *Policy       // nil: the Default strategy
	t  []int64       // the failures held, ascending, Unix nanoseconds
	up time.Duration // the uptime of the run that failed at t[len(t)-1]
}

// errTimeOutOfRange is Record's error for an instant a History cannot hold.
var errTimeOutOfRange = errors.New("retrypolicy: failure time outside 1677-09-21 to 2262-04-11")

// NewHistory returns an empty history for a job under p, which it refers
// to and never copies. NewHistory(nil) is under the Default strategy, as
// the zero History is.
func NewHistory(p *Policy) *History { return &History{p: p} }

// defaultPolicy is the Default strategy compiled, once per process.
var defaultPolicy = sync.OnceValue(func() *Policy {
	p, _ := Compile(Default()) // valid: TestDefaultIsTheSeedsDefault
	return p
})

// policy returns the history's policy.
func (h *History) policy() *Policy {
	if h.p == nil {
		return defaultPolicy()
	}
	return h.p
}

// Record adds a failure at failedAt of a run that lasted uptime: when it is
// the newest failure held, its uptime is the one [History.Decide] credits.
// failedAt is when the run ended with the error; uptime is how long it ran,
// from when it started running to that failure, and 0 for a job that failed
// before it started running. A negative uptime is taken as 0, not refused. It returns an error, and
// records nothing, for an instant outside 1677-09-21 to 2262-04-11 (int64
// nanoseconds).
func (h *History) Record(failedAt time.Time, uptime time.Duration) error {
	ns, ok := unixNano(failedAt)
	if !ok {
		return errTimeOutOfRange
	}
	window := int64(h.policy().window)
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(h.t)
	switch {
	case n == 0 || ns >= h.t[n-1]:
		h.t, h.up = append(h.t, ns), max(uptime, 0)
		if from := ns - window; h.t[0] < from {
			h.t = h.t[sort.Search(len(h.t), func(i int) bool { return h.t[i] >= from }):]
		}
	case ns >= h.t[n-1]-window:
		// Out of order, within the window: after any equal to it.
		h.t = slices.Insert(h.t, sort.Search(n, func(i int) bool { return h.t[i] > ns }), ns)
	}
	return nil
}

// Decide is [Decide] for the recorded failures under the history's
// strategy, the newest failure's run credited with its uptime: every
// failure it holds is in the window. It returns an error for an empty
// history, and does not allocate.
func (h *History) Decide(seed uint64, now time.Time) (Decision, error) {
	h.mu.Lock()
	n, newest, uptime := len(h.t), int64(0), h.up
	if n > 0 {
		newest = h.t[n-1]
	}
	h.mu.Unlock()
	var d Decision
	if n == 0 {
		return d, errNoFailures
	}
	h.policy().decideCounted(&d, counted{n, instantOf(time.Unix(0, newest)), time.UTC}, asked{uptime, seed, now})
	return d, nil
}

// Len returns how many failures the history holds: those in the window of
// the newest.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.t)
}

// Reset forgets every failure and uptime; the strategy stays. Call it when
// the job starts over as a new job, not after a success: a success leaves
// the failures to age out of the window.
func (h *History) Reset() { h.replace(nil, 0) }

// failures returns a copy of the failures held, and the last uptime.
func (h *History) failures() ([]int64, time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.t), h.up
}

// replace makes ns, ascending, the failures held, keeping only those within
// the window of the newest, and up the last uptime. It keeps ns.
func (h *History) replace(ns []int64, up time.Duration) {
	window := int64(h.policy().window)
	if len(ns) > 0 {
		from := ns[len(ns)-1] - window
		ns = ns[sort.Search(len(ns), func(i int) bool { return ns[i] >= from }):]
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.t, h.up = slices.Clip(ns), up
}

// MarshalBinary encodes the history: a version byte and a unit (the
// coarsest of a second, a millisecond, a microsecond and a nanosecond that
// holds every instant and the uptime exactly), the count of failures and the
// first instant as varints, each gap to the next as a uvarint, then the last
// uptime, all in that unit. Failures to the millisecond a few minutes apart
// take 3 bytes each.
func (h *History) MarshalBinary() ([]byte, error) {
	ts, up := h.failures()
	return histcode.Append(nil, ts, up), nil
}

// UnmarshalBinary replaces the history with one MarshalBinary encoded,
// keeping the failures within the window of the newest. On error the
// history is left unchanged.
func (h *History) UnmarshalBinary(data []byte) error {
	ns, up, err := histcode.Decode(data, nil)
	if err != nil {
		return errors.New("retrypolicy: history: " + err.Error())
	}
	h.replace(ns, up)
	return nil
}

// unixNano returns t's nanoseconds since the Unix epoch, or false when they
// do not fit in an int64.
func unixNano(t time.Time) (int64, bool) {
	const secMax = math.MaxInt64 / int64(time.Second)
	sec, nsec := t.Unix(), int64(t.Nanosecond())
	if sec < -secMax || sec > secMax || (sec == secMax && nsec > math.MaxInt64%int64(time.Second)) {
		return 0, false
	}
	return sec*int64(time.Second) + nsec, true
}
