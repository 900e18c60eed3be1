package fleet

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/retrypolicy/retrypolicy/attemptlog"

	"github.com/retrypolicy/retrypolicy"
)

// MaxLogLine is the longest line ReadLog takes: 1 MiB.
const MaxLogLine = attemptlog.MaxLine

// epoch is the instant a replay's times count from: ticks fall at
// multiples of the tick since it.
var epoch = time.Unix(0, 0).UTC()

// Log is an attempt log read for replay: the dependency's availability
// read from its attempts (each observes it at its start: up if it
// succeeded, down if it failed), its jobs, and what it records. A Log is
// read once and replayed under as many strategies as wanted; it is not
// changed by a replay, and many goroutines may replay it at once. Reading
// one takes 370 to 510 bytes an attempt at its peak (the more, the more
// of its attempts are jobs of their own); the Log then holds
// about 20 bytes an attempt, and each job's name once with a few dozen
// bytes beside it.
type Log struct {
	avail    availability
	jobs     []logJob
	recorded ReplayResult
	// firstMinute is the minute, from the epoch, of the first attempt: a
	// Load's first bucket starts there.
	firstMinute int64
	// What the jobs that are not replayed (none of their attempts failed)
	// add to every replay: their attempts, those that start while down
	// and the minutes they start in, and their completions.
	asRecorded struct {
		attempts, down int
		downMinutes    []minuteCount
		allMinutes     []minuteCount
		completions    []time.Duration
	}
}

// logJob is a job of a log: what a replay needs of it.
type logJob struct {
	name              string
	seed              uint64
	first             time.Duration // its first attempt's start, from the epoch
	failed, succeeded time.Duration // its median failed and succeeded attempts' durations
	replayed          bool          // it has a failed attempt
	completes         bool          // it has a succeeded attempt: the log completes it
}

// minuteCount is how many attempts start in one minute from the epoch.
type minuteCount struct {
	minute int64
	n      int
}

// NewLog reads a log from its attempts, in any order; attempts of one job
// may overlap, and may repeat. It returns an error, naming the attempt
// (from 0), for one out of range, and reads nothing then.
func NewLog(attempts []attemptlog.Attempt) (*Log, error) {
	for i, a := range attempts {
		if err := a.Check(); err != nil {
			return nil, fmt.Errorf("fleet: NewLog: attempt %d: %w", i, err)
		}
	}
	return newLog(attempts), nil
}

// ReadLog reads an attempt log of JSON Lines, one attempt a line in any
// order:
//
//	{"job": "id", "started_at": RFC 3339, "ended_at": RFC 3339, "outcome": "succeeded" | "failed"}
//
// with an optional "jitter_seed", a string (hashed as
// retrypolicy.SeedFromString hashes) or an unsigned integer (taken as it
// is). Other fields are ignored, as are blank lines. A missing field, a
// time that does not parse or is out of range, an ended_at before its
// started_at, an unknown outcome, a line that is not a JSON object or one
// longer than MaxLogLine is an error naming its line (from 1) and field,
// and nothing is read. It reads r once, into memory linear in its lines.
func ReadLog(r io.Reader) (*Log, error) {
	lr := attemptlog.NewReader(r)
	var attempts []attemptlog.Attempt
	for {
		a, err := lr.Read()
		if err == io.EOF {
			return newLog(attempts), nil
		}
		if err != nil {
			return nil, fmt.Errorf("fleet: ReadLog: %w", err)
		}
		attempts = append(attempts, a)
	}
}

// newLog reads checked attempts.
func newLog(attempts []attemptlog.Attempt) *Log {
	l := &Log{avail: newAvailability(attempts)}
	byJob := map[string]int32{}
	groups := make([][]int32, 0)
	for i, a := range attempts {
		j, ok := byJob[a.Job]
		if !ok {
			j = int32(len(groups))
			byJob[a.Job] = j
			groups = append(groups, nil)
		}
		groups[j] = append(groups[j], int32(i))
	}
	l.jobs = make([]logJob, len(groups))
	var failedAll []time.Duration
	for j, g := range groups {
		failedAll = l.readJob(&l.jobs[j], attempts, g, failedAll)
	}
	failedMedian := median(failedAll)
	for j := range l.jobs {
		if l.jobs[j].replayed && l.jobs[j].failed < 0 {
			l.jobs[j].failed = failedMedian
		}
	}
	l.recorded = l.recordedResult(attempts, groups)
	return l
}

// readJob reads job j's attempts (their indexes g), and returns failedAll
// with the durations of its failed ones added.
func (l *Log) readJob(j *logJob, attempts []attemptlog.Attempt, g []int32, failedAll []time.Duration) []time.Duration {
	slices.SortStableFunc(g, func(a, b int32) int { return attempts[a].Start.Compare(attempts[b].Start) })
	first := attempts[g[0]]
	j.name, j.first, j.seed = first.Job, first.Start.Sub(epoch), retrypolicy.SeedFromString(first.Job)
	if first.HasSeed { // the first line by start gives the seed, or none does
		j.seed = first.Seed
	}
	var failed, succeeded []time.Duration
	for _, i := range g {
		a := attempts[i]
		if a.Succeeded {
			succeeded = append(succeeded, a.End.Sub(a.Start))
		} else {
			failed = append(failed, a.End.Sub(a.Start))
		}
	}
	j.replayed, j.completes = len(failed) > 0, len(succeeded) > 0
	j.failed, j.succeeded = -1, 0
	if j.replayed {
		j.failed = median(failed)
	}
	if j.completes {
		j.succeeded = median(succeeded)
	}
	return append(failedAll, failed...)
}

// median returns the median of ds, the lower of the two middle ones for
// an even count, and 0 for none; it sorts ds.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[(len(ds)-1)/2]
}

// recordedResult is the figures of the log as it records them, and it
// keeps what the jobs that are not replayed add to every replay.
func (l *Log) recordedResult(attempts []attemptlog.Attempt, groups [][]int32) ReplayResult {
	r := ReplayResult{Jobs: len(l.jobs), Attempts: len(attempts)}
	var all, asRecorded []int64 // the minutes of the attempts that start while down
	var every, everyAsRecorded []int64
	for j, g := range groups {
		job := &l.jobs[j]
		done := time.Duration(-1) // when the job completes: its first success's end
		for _, i := range g {
			a := attempts[i]
			at := a.Start.Sub(epoch)
			every = append(every, int64(at/time.Minute))
			if !job.replayed {
				everyAsRecorded = append(everyAsRecorded, int64(at/time.Minute))
			}
			if l.avail.downAt(at) {
				r.AttemptsDown++
				all = append(all, int64(at/time.Minute))
				if !job.replayed {
					l.asRecorded.down++
					asRecorded = append(asRecorded, int64(at/time.Minute))
				}
			}
			if a.Succeeded && done < 0 {
				done = a.End.Sub(epoch)
			}
		}
		if !job.replayed {
			l.asRecorded.attempts += len(g)
			l.asRecorded.completions = append(l.asRecorded.completions, done)
		}
		if done >= 0 {
			r.Completed++
		}
	}
	r.Fatal = r.Jobs - r.Completed
	for _, c := range countMinutes(all) {
		r.PeakPerMin = max(r.PeakPerMin, c.n)
	}
	l.asRecorded.downMinutes = countMinutes(asRecorded)
	l.asRecorded.allMinutes = countMinutes(everyAsRecorded)
	counts := countMinutes(every)
	if len(counts) > 0 {
		l.firstMinute = counts[0].minute
	}
	load := newLoadSeries(l.firstMinute)
	for _, c := range counts {
		load.add(c)
	}
	r.Load = load.load()
	r.Recovery, r.Recovered = l.recoveries(completionsOf(attempts, groups))
	return r
}

// completionsOf returns when each job that completes does: its first
// success's end.
func completionsOf(attempts []attemptlog.Attempt, groups [][]int32) []time.Duration {
	var out []time.Duration
	for _, g := range groups {
		for _, i := range g {
			if a := attempts[i]; a.Succeeded {
				out = append(out, a.End.Sub(epoch))
				break
			}
		}
	}
	return out
}

// recoveries returns the percentiles of the time from the dependency's
// recovery to each completion at or after it, and how many there are.
func (l *Log) recoveries(completions []time.Duration) (Percentiles, int) {
	if !l.avail.recovered {
		return Percentiles{}, 0
	}
	var after []time.Duration
	for _, c := range completions {
		if c >= l.avail.recovery {
			after = append(after, c-l.avail.recovery)
		}
	}
	return percentiles(after), len(after)
}

// countMinutes counts the minutes given, in order.
func countMinutes(minutes []int64) []minuteCount {
	slices.Sort(minutes)
	var out []minuteCount
	for _, m := range minutes {
		if n := len(out); n > 0 && out[n-1].minute == m {
			out[n-1].n++
		} else {
			out = append(out, minuteCount{m, 1})
		}
	}
	return out
}

// Recorded returns the figures of the log as it records them: its jobs;
// those with a succeeded attempt Completed and the rest Fatal (a log
// cannot tell a fatal job from one still waiting); its attempts, those
// that start while the dependency is down and the most of those in one
// minute; and the time from the dependency's recovery to each completion.
func (l *Log) Recorded() ReplayResult { return l.recorded }

// Stretch is a time the dependency was down, as a log observed it: from
// the first down observation of a run of them to the up observation after
// it, or to the log's last observation when none came.
type Stretch struct {
	From, To time.Time
}

// Down returns the stretches the dependency was down, in order.
func (l *Log) Down() []Stretch {
	av := &l.avail
	var out []Stretch
	for i := 0; i < len(av.at); i++ {
		if !av.down[i] {
			continue
		}
		k := i
		for k < len(av.at) && av.down[k] {
			k++
		}
		to := av.last
		if k < len(av.at) {
			to = av.at[k]
		}
		out = append(out, Stretch{epoch.Add(av.at[i]), epoch.Add(to)})
		i = k
	}
	return out
}

// Jobs returns how many jobs the log has, and how many of them a replay
// replays: those with a failed attempt.
func (l *Log) Jobs() (all, replayed int) {
	for _, j := range l.jobs {
		if j.replayed {
			replayed++
		}
	}
	return len(l.jobs), replayed
}

// availability is the dependency's state over time, as a log's attempts
// observed it.
type availability struct {
	at   []time.Duration // each instant observed, from the epoch, ascending
	down []bool          // the state observed then: down if any attempt then failed
	// recovery is the first up observation after the last down one, when
	// recovered; last is the last observation.
	recovery  time.Duration
	recovered bool
	last      time.Duration
}

// newAvailability reads the availability from the attempts' starts.
func newAvailability(attempts []attemptlog.Attempt) availability {
	type obs struct {
		at   time.Duration
		down bool
	}
	all := make([]obs, len(attempts))
	for i, a := range attempts {
		all[i] = obs{a.Start.Sub(epoch), !a.Succeeded}
	}
	slices.SortFunc(all, func(a, b obs) int { return int(min(max(a.at-b.at, -1), 1)) })
	var av availability
	for _, o := range all {
		if n := len(av.at); n > 0 && av.at[n-1] == o.at {
			av.down[n-1] = av.down[n-1] || o.down // disagreeing at one instant: down
			continue
		}
		av.at, av.down = append(av.at, o.at), append(av.down, o.down)
	}
	if n := len(av.at); n > 0 {
		av.last = av.at[n-1]
	}
	for i := len(av.down) - 1; i >= 0; i-- {
		if av.down[i] {
			if i+1 < len(av.at) {
				av.recovery, av.recovered = av.at[i+1], true
			}
			break
		}
	}
	return av
}

// downAt reports whether the dependency is down at t: the state of the
// latest observation at or before t, before the first one the first's.
func (av *availability) downAt(t time.Duration) bool {
	if len(av.at) == 0 {
		return false
	}
	i, found := slices.BinarySearch(av.at, t)
	if !found {
		i--
	}
	return av.down[max(i, 0)]
}
