package retry

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/retrypolicy/retrypolicy/internal/slots"
	"github.com/retrypolicy/retrypolicy/internal/splitmix"
)

// Throttle rejects new calls locally while a dependency accepts too few
// of the attempts sent to it: client-side throttling, the adaptive form
// of a circuit breaker.
//
// Over a trailing window it counts requests (every attempt sent, and
// every call it rejected) and accepts (the attempts that ended well: a
// success, or an answer that is not transient). A call's first attempt is
// rejected with probability
//
//	max(0, (requests - k × accepts) / (requests + 1))
//
// computed before the call is counted, and never while the window holds
// fewer than 5 requests. So while the dependency accepts more than 1/k of
// what is sent, nothing is rejected; as accepts fall, a growing share of
// calls never leaves the client, and enough still go out to see the
// dependency come back. An attempt that the caller ended, or that lost a
// hedged race, is a request and never an accept.
//
// A client cannot tell an overloaded dependency from one that fails at
// random: a throttle sheds good calls in the second case, as a budget
// does. It is off by default for that reason; the window should hold five
// requests or more of one client.
//
// The window is kept as 10 slots of window/10, counted from the first time
// the throttle is given; a time earlier than the latest counts as the
// latest. The forms without a time read the monotonic clock. The draws
// come from a source of its own (Seed sets it), never from a loop's
// jitter seed.
//
// A Throttle is safe for concurrent use by multiple goroutines; each
// method takes one lock, is O(1) and allocates nothing.
type Throttle struct {
	k float64

	mu    sync.Mutex
	ring  slots.Ring // requests (A) and accepts (B)
	state uint64     // the random source's
}

// throttleFloor is the fewest requests in the window for which a throttle
// rejects anything.
const throttleFloor = 5

// NewThrottle returns a throttle that rejects calls once requests exceed
// k times accepts over the trailing window. k must be in [1, 10] (2 is
// the usual choice: a dependency may fail half of what it is sent before
// anything is rejected) and window in [100ms, 10m] (a second suits a
// client of tens of calls a second; see the type's doc).
func NewThrottle(k float64, window time.Duration) (*Throttle, error) {
	switch {
	case math.IsNaN(k) || k < 1 || k > 10:
		return nil, errors.New("retrypolicy: NewThrottle: k must be between 1 and 10, got " + strconv.FormatFloat(k, 'g', -1, 64))
	case window < 100*time.Millisecond || window > 10*time.Minute:
		return nil, errors.New("retrypolicy: NewThrottle: window must be between 100ms and 10m, got " + window.String())
	}
	return &Throttle{k: k, ring: slots.NewRing(window / slots.N), state: rand.Uint64()}, nil
}

// Seed sets the throttle's source of random draws, so that a run of
// decisions can be repeated.
func (t *Throttle) Seed(seed uint64) {
	t.mu.Lock()
	t.state = seed
	t.mu.Unlock()
}

// Allow decides on a call's first attempt now; see AllowAt.
func (t *Throttle) Allow() bool {
	t.mu.Lock()
	ok := t.allow(t.ring.Now())
	t.mu.Unlock()
	return ok
}

// AllowAt decides on a call's first attempt at now: false rejects the
// call, which must not be sent. Either way the call counts as a request.
func (t *Throttle) AllowAt(now time.Time) bool {
	t.mu.Lock()
	ok := t.allow(t.ring.At(now))
	t.mu.Unlock()
	return ok
}

// allow decides on a call in slot i and counts it. t.mu is held.
func (t *Throttle) allow(i int) bool {
	r := t.ring.SumA
	ok := r < throttleFloor || !t.draw(float64(r)-t.k*float64(t.ring.SumB), float64(r+1))
	t.ring.AddA(i, 1)
	return ok
}

// Sent records another attempt of an allowed call sent now (a retry or a
// hedge); see SentAt.
func (t *Throttle) Sent() { t.SentAt(time.Now()) }

// SentAt records another attempt of an allowed call sent at now: a
// request.
func (t *Throttle) SentAt(now time.Time) {
	t.mu.Lock()
	t.ring.AddA(t.ring.At(now), 1)
	t.mu.Unlock()
}

// Accept records an attempt that ended well now; see AcceptAt.
func (t *Throttle) Accept() { t.AcceptAt(time.Now()) }

// AcceptAt records an attempt that ended well (a success, or an answer
// that is not transient) at now, when its answer arrived: an accept.
func (t *Throttle) AcceptAt(now time.Time) {
	t.mu.Lock()
	t.ring.AddB(t.ring.At(now), 1)
	t.mu.Unlock()
}

// Rejection returns the probability with which a call now would be
// rejected; see RejectionAt.
func (t *Throttle) Rejection() float64 { return t.RejectionAt(time.Now()) }

// RejectionAt returns the probability with which a call at now would be
// rejected, max(0, (requests - k × accepts) / (requests + 1)) over the
// window, or 0 while it holds fewer than 5 requests. A metrics exporter
// reads it as the throttle's state.
func (t *Throttle) RejectionAt(now time.Time) float64 {
	t.mu.Lock()
	t.ring.At(now)
	p := t.rejection()
	t.mu.Unlock()
	return p
}

// draw reports whether a draw u in [0, 1) falls below excess/total, the
// probability of a rejection, without dividing: u × total < excess. t.mu
// is held.
func (t *Throttle) draw(excess, total float64) bool {
	u := float64(splitmix.Next(&t.state)>>11) * (1.0 / (1 << 53))
	return u*total < excess
}

// rejection is the probability of a rejection on the window's counts.
// t.mu is held.
func (t *Throttle) rejection() float64 {
	if t.ring.SumA < throttleFloor {
		return 0
	}
	r := float64(t.ring.SumA)
	return max(0, (r-t.k*float64(t.ring.SumB))/(r+1))
}
