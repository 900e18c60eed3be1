package riverretry

import (
	"strconv"
	"time"

	"github.com/retrypolicy/retrypolicy/queuekit"
	"github.com/riverqueue/river/rivertype"
)

// MaxClockSkew is how far the clocks of a queue's clients may disagree. A
// failure instant in a job's record up to MaxClockSkew after the reading
// client's clock (or after the job's current attempt started) counts as a
// failure at that moment, so that the failure being decided is always the
// newest; one further ahead, or more than MaxClockSkew before the job was
// created, makes the record untrustworthy, and the failures are rebuilt
// from River's own errors.
const MaxClockSkew = time.Hour

// readMetadata reads the policy's keys from a job's metadata.
func readMetadata(metadata []byte) queuekit.Metadata {
	return queuekit.ReadMetadata(metadata, MetadataStrategy, MetadataKey)
}

// checkRecord returns the failures of m's record that rd's job can have
// had, at most limit, ascending, in rd.room, with instants later than the
// job's current attempt or rd.now moved back to the earlier of the two;
// or what is wrong with the record, checked against River's own columns:
// more attempts seen than the job has had, more failures than it has had
// attempts or errors, or instants further than MaxClockSkew after that
// moment or before the job was created.
func checkRecord(rd reading, m queuekit.Metadata, limit int) (queuekit.Record, string) {
	job, now, room := rd.job, rd.now, rd.room
	if m.Problem != "" || !m.HasRecord {
		return queuekit.Record{Failures: room[:0]}, m.Problem
	}
	if m.Seen >= max(job.Attempt, 1) {
		return queuekit.Record{Failures: room[:0]}, "its record has seen attempt " + strconv.Itoa(m.Seen) + ", and the job is at attempt " + strconv.Itoa(job.Attempt)
	}
	most := min(m.Seen, len(job.Errors))
	failures, more, ok := m.Failures(room, min(most, limit))
	switch {
	case !ok:
		return queuekit.Record{Failures: room[:0]}, `its record's failures are not a list of failure times`
	case more && limit >= most:
		return queuekit.Record{Failures: room[:0]}, "its record holds more failures than the job's " + strconv.Itoa(m.Seen) + " attempts and " + strconv.Itoa(len(job.Errors)) + " errors"
	}
	latest := now
	if job.AttemptedAt != nil && job.AttemptedAt.Before(latest) {
		latest = *job.AttemptedAt
	}
	if n := len(failures); n > 0 {
		if newest := failures[n-1]; newest > unixNano(latest.Add(MaxClockSkew)) {
			return queuekit.Record{Failures: room[:0]}, "its record holds a failure at " + time.Unix(0, newest).UTC().Format(time.RFC3339) + ", after the allowed clock skew"
		}
		if oldest := failures[0]; oldest < unixNano(job.CreatedAt.Add(-MaxClockSkew)) {
			return queuekit.Record{Failures: room[:0]}, "its record holds a failure at " + time.Unix(0, oldest).UTC().Format(time.RFC3339) + ", before the job was created"
		}
	}
	latestNs := latest.UnixMilli() * int64(time.Millisecond)
	for i := range failures {
		failures[i] = min(failures[i], latestNs)
	}
	return queuekit.Record{Seen: m.Seen, Failures: failures}, ""
}

// unixNano is t in Unix nanoseconds, held within what they hold.
func unixNano(t time.Time) int64 {
	const most = 1<<63 - 1
	switch {
	case t.Unix() >= most/int64(time.Second):
		return most
	case t.Unix() <= -most/int64(time.Second):
		return -most
	}
	return t.UnixNano()
}

// unseen appends to rec's failures those River holds that the middleware
// never saw end (past rec.Seen: a run rescued after its process died, a
// failure before the middleware ran), at the time River gives each to the
// millisecond, no later than now, and returns how many it appended. River
// appends its errors in attempt order.
func unseen(job *rivertype.JobRow, rec *queuekit.Record, now time.Time) int {
	n := len(rec.Failures)
	nowMs := now.UnixMilli()
	for i := len(job.Errors) - 1; i >= 0 && job.Errors[i].Attempt > rec.Seen; i-- {
		if e := job.Errors[i]; e.Attempt < job.Attempt {
			rec.Failures = append(rec.Failures, min(e.At.UnixMilli(), nowMs)*int64(time.Millisecond))
		}
	}
	return len(rec.Failures) - n
}
