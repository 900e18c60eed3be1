package retrypolicy

import (
	"math"
	"time"
)

// instant is a time's place on the wall clock, seconds and nanoseconds since
// the Unix epoch, as a stored failure time is read back by every replica.
// It orders times as Before does for times without a monotonic clock
// reading and ignores such a reading where there is one. Unlike Before, its
// comparison inlines, which matters on Decide's path.
type instant struct {
	sec  int64
	nsec int32
}

func instantOf(t time.Time) instant { return instant{t.Unix(), int32(t.Nanosecond())} }

func (a instant) before(b instant) bool {
	return a.sec < b.sec || a.sec == b.sec && a.nsec < b.nsec
}

// minus returns a - d for 0 <= d <= 7 days, saturating at the earliest
// instant.
func (a instant) minus(d time.Duration) instant {
	s, ns := a.sec-int64(d/time.Second), a.nsec-int32(d%time.Second)
	if ns < 0 {
		s, ns = s-1, ns+int32(time.Second)
	}
	if s > a.sec { // wrapped below the earliest second
		return instant{math.MinInt64, 0}
	}
	return instant{s, ns}
}

// plus returns a + d for 0 <= d, saturating at the latest instant.
func (a instant) plus(d time.Duration) instant {
	u := uint64(d) // unsigned: the division by a constant is a multiplication
	s, ns := a.sec+int64(u/uint64(time.Second)), a.nsec+int32(u%uint64(time.Second))
	if ns >= int32(time.Second) {
		s, ns = s+1, ns-int32(time.Second)
	}
	if s < a.sec { // wrapped past the latest second
		return instant{math.MaxInt64, int32(time.Second) - 1}
	}
	return instant{s, ns}
}

// maxUnix is the latest second since 1970 a time.Time holds: it counts
// seconds from the year 1 in an int64.
const maxUnix = math.MaxInt64 - 62135596800

// time returns a, at most maxUnix, as a time.Time in loc, without a monotonic clock reading.
func (a instant) time(loc *time.Location) time.Time {
	return time.Unix(a.sec, int64(a.nsec)).In(loc)
}
