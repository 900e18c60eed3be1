package fleet

import (
	"math"
	"time"
)

// MaxLoadBuckets is the most buckets a [Load] holds, whatever the time its
// attempts span: twice the points a chart draws.
const MaxLoadBuckets = 4096

// Load is the attempts a minute of a replay (or of a log as recorded)
// over time, in at most MaxLoadBuckets buckets: a bucket is a minute while
// the attempts span fewer than MaxLoadBuckets minutes, and its width doubles
// as often as a longer span needs.
type Load struct {
	// From is the start of the first bucket: the minute (from the Unix
	// epoch) of the log's first attempt.
	From time.Time
	// Width is each bucket's span: a minute times a power of two.
	Width time.Duration
	// Busiest is, for each bucket, the most attempts that start in one of
	// its minutes; 0 for a bucket with none. The last bucket is the last
	// with an attempt.
	Busiest []int
}

// loadSeries builds a Load from per-minute counts that come in order.
type loadSeries struct {
	from, width int64 // in minutes from the epoch
	busiest     []int
}

func newLoadSeries(from int64) *loadSeries { return &loadSeries{from: from, width: 1} }

// add counts c, a minute after every minute added before it.
func (l *loadSeries) add(c minuteCount) {
	at := max(c.minute-l.from, 0)
	for at/l.width >= MaxLoadBuckets {
		l.coarsen()
	}
	b := int(at / l.width)
	for len(l.busiest) <= b {
		l.busiest = append(l.busiest, 0)
	}
	l.busiest[b] = max(l.busiest[b], c.n)
}

// coarsen doubles the buckets' width, each new bucket the busier of two.
func (l *loadSeries) coarsen() {
	n := (len(l.busiest) + 1) / 2
	for i := range n {
		v := l.busiest[2*i]
		if 2*i+1 < len(l.busiest) {
			v = max(v, l.busiest[2*i+1])
		}
		l.busiest[i] = v
	}
	clear(l.busiest[n:])
	l.busiest, l.width = l.busiest[:n], l.width*2
}

// load returns the series as a Load.
func (l *loadSeries) load() Load {
	return Load{From: epoch.Add(time.Duration(l.from) * time.Minute), Width: time.Duration(l.width) * time.Minute,
		Busiest: append([]int(nil), l.busiest...)}
}

// minuteStream counts attempts a minute as they come in time order, with
// the counts of recorded attempts (in order of their minutes) merged in,
// and hands each minute's total to emit once the minute is over, in order:
// it holds one minute at a time, however long the run.
type minuteStream struct {
	recorded []minuteCount
	cur      minuteCount
	open     bool
	emit     func(minuteCount)
}

// add counts an attempt that starts at at, no earlier than the last.
func (s *minuteStream) add(at time.Duration) {
	m := int64(at / time.Minute)
	if s.open && s.cur.minute == m {
		s.cur.n++
		return
	}
	s.flush(m)
	s.cur, s.open = minuteCount{m, 1}, true
}

// flush hands out the minute being counted, with the recorded attempts of
// that minute, and every recorded minute before until.
func (s *minuteStream) flush(until int64) {
	if s.open {
		s.recordedBefore(s.cur.minute)
		if len(s.recorded) > 0 && s.recorded[0].minute == s.cur.minute {
			s.cur.n += s.recorded[0].n
			s.recorded = s.recorded[1:]
		}
		s.emit(s.cur)
		s.open = false
	}
	s.recordedBefore(until)
}

// recordedBefore hands out the recorded minutes before m.
func (s *minuteStream) recordedBefore(m int64) {
	for len(s.recorded) > 0 && s.recorded[0].minute < m {
		s.emit(s.recorded[0])
		s.recorded = s.recorded[1:]
	}
}

// close hands out what is left.
func (s *minuteStream) close() { s.flush(math.MaxInt64) }
