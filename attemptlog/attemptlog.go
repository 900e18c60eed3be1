// Package attemptlog reads and writes attempt logs: one JSON line for each attempt of a job.
//
// A log records, for each attempt, the job it belongs to, when it started
// and ended, and whether it succeeded:
//
//	{"job": "42", "started_at": "2026-11-02T15:00:00Z", "ended_at": "2026-11-02T15:00:03.2Z", "outcome": "failed"}
//	{"job": "42", "started_at": "2026-11-02T15:01:00Z", "ended_at": "2026-11-02T15:01:00.5Z", "outcome": "succeeded"}
//
// The outcome is "failed" or "succeeded". A line may add "jitter_seed": the
// job's jitter seed, a string (hashed as retrypolicy.SeedFromString hashes)
// or an unsigned integer (taken as it is); the first attempt of a job by
// start gives it, and without one the seed is the hash of the job's name.
// Times are RFC 3339, from 1970 to 2262 (what a time.Duration from the Unix
// epoch holds). Other fields are ignored. Lines may come in any order;
// attempts of one job may overlap, and lines may repeat.
//
// A queue adapter writes a log of what its queue holds with a [Writer]
// (riverretry.WriteLog does for River); the command's replay, and the fleet
// package's ReadLog, read one with a [Reader] to replay it under other
// strategies. The package depends on the standard library and the
// retrypolicy module alone, so an adapter that writes logs links no
// simulator.
package attemptlog

import (
	"bufio"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/retrypolicy/retrypolicy/internal/wire"
)

// MaxLine is the longest line a Reader takes: 1 MiB.
const MaxLine = 1 << 20

// Outcomes as a log writes them.
const (
	Failed    = "failed"
	Succeeded = "succeeded"
)

// Attempt is one attempt of a job, as an attempt log records it.
type Attempt struct {
	// Job names the job.
	Job string
	// Start and End are when the attempt started and ended: from 1970 to
	// 2262 (what a time.Duration from the Unix epoch holds), End not
	// before Start.
	Start, End time.Time
	// Succeeded reports whether the attempt succeeded; else it failed.
	Succeeded bool
	// Seed is the job's jitter seed, when HasSeed. A job's first attempt
	// by Start gives it; without one there, the job's seed is its name's
	// hash (retrypolicy.SeedFromString).
	Seed    uint64
	HasSeed bool
}

var (
	// First and Last are the earliest and the latest instant a log holds:
	// the Unix epoch, and the last instant a time.Duration from it holds.
	First = time.Unix(0, 0).UTC()
	Last  = First.Add(time.Duration(1<<63 - 1))
)

// InRange reports whether t is from First to Last.
func InRange(t time.Time) bool { return !t.Before(First) && !t.After(Last) }

// Check returns what is wrong with a, naming the field as a log line names
// it, or nil.
func (a Attempt) Check() error {
	switch {
	case a.Job == "":
		return errors.New("job: must not be empty")
	case !InRange(a.Start):
		return errors.New("started_at: must be from 1970 to 2262, got " + a.Start.Format(time.RFC3339Nano))
	case !InRange(a.End):
		return errors.New("ended_at: must be from 1970 to 2262, got " + a.End.Format(time.RFC3339Nano))
	case a.End.Before(a.Start):
		return errors.New("ended_at: must not be before started_at")
	}
	return nil
}

// AppendLine appends a as a line of an attempt log, as a Reader reads it:
// its times in RFC 3339 to the nanosecond, in UTC, its jitter seed, when
// it has one, an integer, and a newline.
func (a Attempt) AppendLine(b []byte) []byte {
	b = wire.AppendString(append(b, `{"job":`...), a.Job)
	b = append(a.Start.UTC().AppendFormat(append(b, `,"started_at":"`...), time.RFC3339Nano), '"')
	b = append(a.End.UTC().AppendFormat(append(b, `,"ended_at":"`...), time.RFC3339Nano), '"')
	outcome := Failed
	if a.Succeeded {
		outcome = Succeeded
	}
	b = append(append(append(b, `,"outcome":"`...), outcome...), '"')
	if a.HasSeed {
		b = strconv.AppendUint(append(b, `,"jitter_seed":`...), a.Seed, 10)
	}
	return append(b, "}\n"...)
}

// Writer writes attempts to an io.Writer as log lines, buffered: call
// Flush when done. A Writer is not safe for concurrent use.
type Writer struct {
	w    *bufio.Writer
	line []byte
	n    int
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriterSize(w, 64<<10)} }

// Write writes a as a line. It returns an error, and writes nothing, for
// an attempt a Reader would refuse (see Attempt.Check), or the underlying
// writer's error.
func (w *Writer) Write(a Attempt) error {
	if err := a.Check(); err != nil {
		return err
	}
	w.line = a.AppendLine(w.line[:0])
	if _, err := w.w.Write(w.line); err != nil {
		return err
	}
	w.n++
	return nil
}

// Lines returns how many lines w has written.
func (w *Writer) Lines() int { return w.n }

// Flush writes what w holds to the underlying writer.
func (w *Writer) Flush() error { return w.w.Flush() }
