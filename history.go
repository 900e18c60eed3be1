package retrypolicy

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"sort"
	"sync"
	"time"
)

// History is one job's failure history, kept in memory by a scheduler that
// decides often. It records failures in any order and keeps those in the
// window of the newest (older ones can never count again), 8 bytes each
// beside a 40-byte header: deciding costs the same at a million failures as
// at one. Histories share one compiled [Policy]. It saves its failures as
// binary or as a JSON list of RFC 3339 times, in UTC without a monotonic
// reading. The zero History is empty, under the Default strategy. A History
// is safe for concurrent use; encoding one copies its failures under its lock.
type History struct {
	mu sync.Mutex
	p  *Policy // nil: the Default strategy
	t  []int64 // the failures held, ascending, Unix nanoseconds
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

// Record adds a failure at t. It returns an error, and records nothing, for
// an instant outside 1677-09-21 to 2262-04-11 (int64 nanoseconds).
func (h *History) Record(t time.Time) error {
	ns, ok := unixNano(t)
	if !ok {
		return errTimeOutOfRange
	}
	window := int64(h.policy().window)
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(h.t)
	switch {
	case n == 0 || ns >= h.t[n-1]:
		h.t = append(h.t, ns)
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
// strategy: every failure it holds is in the window. It returns an error
// for an empty history, and does not allocate.
func (h *History) Decide(uptime time.Duration, seed uint64, now time.Time) (Decision, error) {
	h.mu.Lock()
	n := len(h.t)
	var newest int64
	if n > 0 {
		newest = h.t[n-1]
	}
	h.mu.Unlock()
	var d Decision
	if n == 0 {
		return d, errNoFailures
	}
	h.policy().decideCounted(&d, n, instantOf(time.Unix(0, newest)), time.UTC, uptime, seed, now)
	return d, nil
}

// Len returns how many failures the history holds: those in the window of
// the newest.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.t)
}

// Reset forgets every failure; the strategy stays.
func (h *History) Reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.t = nil
}

// failures returns a copy of the failures held.
func (h *History) failures() []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.t)
}

// replace makes ns, ascending, the failures held, keeping only those within
// the window of the newest. It keeps ns.
func (h *History) replace(ns []int64) {
	window := int64(h.policy().window)
	if len(ns) > 0 {
		from := ns[len(ns)-1] - window
		ns = ns[sort.Search(len(ns), func(i int) bool { return ns[i] >= from }):]
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.t = slices.Clip(ns)
}

// historyVersion is the first byte of MarshalBinary's encoding.
const historyVersion = 1

// MarshalBinary encodes the failures held: a version byte, their count and
// the first instant as varints, then each gap to the next as a uvarint.
func (h *History) MarshalBinary() ([]byte, error) {
	ts := h.failures()
	b := []byte{historyVersion}
	b = binary.AppendUvarint(b, uint64(len(ts)))
	for i, ns := range ts {
		if i == 0 {
			b = binary.AppendVarint(b, ns)
		} else {
			b = binary.AppendUvarint(b, uint64(ns-ts[i-1]))
		}
	}
	return b, nil
}

// UnmarshalBinary replaces the failures held with those MarshalBinary
// encoded, keeping those within the window of the newest. On error the
// history is left unchanged.
func (h *History) UnmarshalBinary(data []byte) error {
	bad := func(what string) error { return errors.New("retrypolicy: history: " + what) }
	if len(data) == 0 || data[0] != historyVersion {
		return bad("not a history encoding")
	}
	data = data[1:]
	n, k := binary.Uvarint(data)
	if k <= 0 || n > uint64(len(data)) { // every failure takes a byte at least
		return bad("bad count")
	}
	data = data[k:]
	ns := make([]int64, n)
	for i := range ns {
		if i == 0 {
			ns[0], k = binary.Varint(data)
		} else {
			var gap uint64
			gap, k = binary.Uvarint(data)
			if gap > uint64(math.MaxInt64-ns[i-1]) {
				return bad("failure time out of range")
			}
			ns[i] = ns[i-1] + int64(gap)
		}
		if k <= 0 {
			return bad("truncated")
		}
		data = data[k:]
	}
	if len(data) > 0 {
		return bad("trailing data")
	}
	h.replace(ns)
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
