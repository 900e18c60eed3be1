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
// decides often. It records failures in any order and keeps exactly those
// within the window of the newest one (an older failure can never count
// again, as the newest only moves forward), 8 bytes each, so that deciding
// costs the same at a million failures as at one. It saves and restores
// itself as binary or as a JSON list of RFC 3339 times.
//
// Failures are kept as instants: they come back in UTC, without a monotonic
// clock reading. The zero History is an empty history under the Default
// strategy. A History is safe for concurrent use by multiple goroutines, and
// its lock is never held for a walk over the failures.
type History struct {
	mu     sync.Mutex
	p      *Policy // nil until first used: the Default strategy
	chunks []chunk // ascending, each non-empty
	n      int     // failures retained
}

// chunkCap is the most failures a chunk holds, which bounds the work of
// any change: a Record copies at most one chunk.
const chunkCap = 1024

// chunk is a run of ascending failure instants, Unix nanoseconds. An
// element, once written, never changes: a change writes a new array, and
// appends write past the end that a snapshot has seen.
type chunk struct {
	t []int64
}

// errTimeOutOfRange is Record's error for an instant a History cannot hold.
var errTimeOutOfRange = errors.New("retrypolicy: failure time outside 1677-09-21 to 2262-04-11")

// NewHistory returns an empty history for a job under strategy s. It
// returns a *ValidationError for an invalid s.
func NewHistory(s Strategy) (*History, error) {
	p, err := Compile(s)
	if err != nil {
		return nil, err
	}
	return &History{p: p}, nil
}

// policy returns the history's policy; h.mu is held.
func (h *History) policy() *Policy {
	if h.p == nil {
		h.p, _ = Compile(Default())
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
	h.mu.Lock()
	defer h.mu.Unlock()
	window := int64(h.policy().s.window())
	if h.n == 0 {
		h.chunks = append(h.chunks[:0], chunk{t: append(make([]int64, 0, 4), ns)})
		h.n = 1
		return nil
	}
	newest := h.newest()
	switch {
	case ns < newest-window:
		return nil // older than the newest failure's window: it never counts
	case ns >= newest:
		h.append(ns)
		h.prune(ns - window)
	default:
		h.insert(ns)
	}
	return nil
}

// newest returns the newest failure; h.n > 0.
func (h *History) newest() int64 {
	last := h.chunks[len(h.chunks)-1].t
	return last[len(last)-1]
}

// append adds ns, not before any failure held, at the end: into the last
// chunk's room, into a copy of it twice as large while it is less than half
// a chunk (so a short history stays small), or into a new chunk.
func (h *History) append(ns int64) {
	c := &h.chunks[len(h.chunks)-1]
	switch {
	case len(c.t) < cap(c.t):
		c.t = append(c.t, ns)
	case len(c.t) < chunkCap/2:
		c.t = append(make([]int64, 0, min(2*len(c.t)+4, chunkCap)), c.t...)
		c.t = append(c.t, ns)
	default:
		h.chunks = append(h.chunks, chunk{t: append(make([]int64, 0, 4), ns)})
	}
	h.n++
}

// insert adds ns among the failures held, after any equal to it, copying
// the one chunk it goes into (splitting it when full).
func (h *History) insert(ns int64) {
	i := max(sort.Search(len(h.chunks), func(i int) bool { return h.chunks[i].t[0] > ns })-1, 0)
	old := h.chunks[i].t
	j := sort.Search(len(old), func(j int) bool { return old[j] > ns })
	if len(old) < chunkCap {
		t := make([]int64, len(old)+1, min(2*len(old)+2, chunkCap))
		copy(t, old[:j])
		t[j] = ns
		copy(t[j+1:], old[j:])
		h.chunks[i].t = t
	} else {
		half := len(old) / 2
		lo, hi := slices.Clone(old[:half]), slices.Clone(old[half:])
		if j <= half {
			lo = slices.Insert(lo, j, ns)
		} else {
			hi = slices.Insert(hi, j-half, ns)
		}
		h.chunks[i].t = lo
		h.chunks = slices.Insert(h.chunks, i+1, chunk{t: hi})
	}
	h.n++
}

// prune drops the failures before from: whole chunks, then the first
// chunk's head, which it re-slices without changing an element.
func (h *History) prune(from int64) {
	drop := sort.Search(len(h.chunks), func(i int) bool {
		t := h.chunks[i].t
		return t[len(t)-1] >= from
	})
	for _, c := range h.chunks[:drop] {
		h.n -= len(c.t)
	}
	clear(h.chunks[:drop])
	h.chunks = h.chunks[drop:]
	first := h.chunks[0].t
	k := sort.Search(len(first), func(j int) bool { return first[j] >= from })
	h.chunks[0].t = first[k:]
	h.n -= k
}

// Decide is [Decide] for the recorded failures under the history's
// strategy: every failure it holds is in the window. It returns an error
// for an empty history, and does not allocate.
func (h *History) Decide(uptime time.Duration, seed uint64, now time.Time) (Decision, error) {
	h.mu.Lock()
	n, p := h.n, h.policy()
	var newest int64
	if n > 0 {
		newest = h.newest()
	}
	h.mu.Unlock()
	if n == 0 {
		return Decision{}, errNoFailures
	}
	d := Decision{Failures: n}
	last := [1]time.Time{time.Unix(0, newest).UTC()}
	p.decideOn(&d, last[:], uptime, seed, now)
	return d, nil
}

// Reset forgets every failure; the strategy stays.
func (h *History) Reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	clear(h.chunks)
	h.chunks, h.n = h.chunks[:0], 0
}

// snapshot returns the failures held, as chunks that will not change.
func (h *History) snapshot() []chunk {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.chunks)
}

// replace makes ns, ascending, the failures held, keeping only those within
// the window of the newest. It does not keep ns.
func (h *History) replace(ns []int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(ns) > 0 {
		from := ns[len(ns)-1] - int64(h.policy().s.window())
		ns = ns[sort.Search(len(ns), func(i int) bool { return ns[i] >= from }):]
	}
	chunks := make([]chunk, 0, (len(ns)+chunkCap-1)/chunkCap)
	for part := range slices.Chunk(ns, chunkCap) {
		chunks = append(chunks, chunk{t: slices.Clone(part)})
	}
	h.chunks, h.n = chunks, len(ns)
}

// historyVersion is the first byte of MarshalBinary's encoding.
const historyVersion = 1

// MarshalBinary encodes the failures held: a version byte, their count and
// the first instant as varints, then each gap to the next as a uvarint.
func (h *History) MarshalBinary() ([]byte, error) {
	chunks := h.snapshot()
	b := []byte{historyVersion}
	n := 0
	for _, c := range chunks {
		n += len(c.t)
	}
	b = binary.AppendUvarint(b, uint64(n))
	prev := int64(0)
	for i, c := range chunks {
		for j, ns := range c.t {
			if i == 0 && j == 0 {
				b = binary.AppendVarint(b, ns)
			} else {
				b = binary.AppendUvarint(b, uint64(ns-prev))
			}
			prev = ns
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
		var gap uint64
		if i == 0 {
			var v int64
			v, k = binary.Varint(data)
			ns[0] = v
		} else {
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
