package riverretry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/retrypolicy/retrypolicy/attemptlog"
	"github.com/retrypolicy/retrypolicy/queuekit"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// LogOptions says which attempts WriteLog writes.
type LogOptions struct {
	// Kinds are the kinds of the jobs written; none is every kind.
	Kinds []string
	// From and To bound the attempts written to those that start at or
	// after From and before To; a zero one is no bound.
	From, To time.Time
	// Mended, if not nil, is called for each attempt River holds that a
	// log cannot hold as it is, with what WriteLog did: an attempt that
	// ends before it starts (a clock stepped back) is written as ending as
	// it starts; one outside 1970 to 2262 (an error stamped year 1) is
	// left out. Each is logged at Warn too.
	Mended func(Mended)
	// Logger receives those warnings; nil is slog.Default().
	Logger *slog.Logger
}

// Mended is an attempt that WriteLog mended or left out.
type Mended struct {
	// JobID is the River job's id.
	JobID int64
	// Attempt is the attempt as River holds it.
	Attempt attemptlog.Attempt
	// Problem says what a log could not hold, naming the field.
	Problem error
	// Written reports whether the attempt was written, clamped; else it
	// was left out.
	Written bool
}

// mend returns a as a log can hold it, and false when it cannot: an end
// before the start is taken as the start, a time out of range leaves the
// attempt out. It reports each attempt it mends or leaves out.
func (o LogOptions) mend(ctx context.Context, id int64, a attemptlog.Attempt) (attemptlog.Attempt, bool) {
	problem := a.Check()
	if problem == nil {
		return a, true
	}
	m := Mended{JobID: id, Attempt: a, Problem: problem}
	if attemptlog.InRange(a.Start) && attemptlog.InRange(a.End) && a.End.Before(a.Start) {
		a.End, m.Written = a.Start, true
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger.WarnContext(ctx, "riverretry: WriteLog: an attempt a log cannot hold as River holds it",
		slog.Int64("job_id", id), slog.String("problem", problem.Error()), slog.Bool("written_clamped", m.Written))
	if o.Mended != nil {
		o.Mended(m)
	}
	return a, m.Written
}

// selects reports whether a starts within o's bounds.
func (o LogOptions) selects(a attemptlog.Attempt) bool {
	return (o.From.IsZero() || !a.Start.Before(o.From)) && (o.To.IsZero() || a.Start.Before(o.To))
}

// logPage is how many jobs WriteLog reads from River at a time.
const logPage = 1000

// WriteLog writes each attempt that River still holds of the jobs o
// selects, as an attempt log (package attemptlog) that retrypolicy replay
// reads: a JSON line an attempt, the job named by its decimal id, with the
// jitter seed the policy decides it with. It returns how many lines it
// wrote. It reads River's jobs a page at a time through client, on SQLite
// or PostgreSQL, and holds one page at once.
//
// What River holds decides what the log says. A failed attempt is one of
// the job's errors, which River stamps with the attempt's start; it ended
// at the failure instant the policy's record keeps for it, to the
// millisecond, and where the record has forgotten it (a failure out of
// every window), as it started. A completed job's last attempt
// succeeded, from attempted_at to finalized_at. A running
// attempt has not ended and is left out. An attempt a log cannot hold as
// River holds it is mended or left out (LogOptions.Mended), so that what
// WriteLog writes always reads back. River deletes completed jobs after a
// day by default (Config.CompletedJobRetentionPeriod), cancelled
// and discarded ones after a week: a log of an older outage lacks the jobs
// that succeeded, and a replay of it sees their dependency as down.
func WriteLog[TTx any](ctx context.Context, w io.Writer, client *river.Client[TTx], o LogOptions) (int, error) {
	lw := attemptlog.NewWriter(w)
	params := river.NewJobListParams().First(logPage)
	if len(o.Kinds) > 0 {
		params = params.Kinds(o.Kinds...)
	}
	for {
		res, err := client.JobList(ctx, params)
		if err != nil {
			return lw.Lines(), fmt.Errorf("riverretry: WriteLog: %w", err)
		}
		for _, job := range res.Jobs {
			for _, a := range attemptsOf(job) {
				a, ok := o.mend(ctx, job.ID, a)
				if !ok || !o.selects(a) {
					continue
				}
				if err := lw.Write(a); err != nil {
					return lw.Lines(), fmt.Errorf("riverretry: WriteLog: %w", err)
				}
			}
		}
		if len(res.Jobs) < logPage || res.LastCursor == nil {
			break
		}
		params = params.After(res.LastCursor)
	}
	if err := lw.Flush(); err != nil {
		return lw.Lines(), fmt.Errorf("riverretry: WriteLog: %w", err)
	}
	return lw.Lines(), nil
}

// attemptsOf returns the attempts of job that River holds, in order.
func attemptsOf(job *rivertype.JobRow) []attemptlog.Attempt {
	name := strconv.FormatInt(job.ID, 10)
	seed := queuekit.Seed(job.ID)
	errs := slices.Clone(job.Errors)
	slices.SortStableFunc(errs, func(a, b rivertype.AttemptError) int { return a.Attempt - b.Attempt })
	// The record's failures, ascending, are the newest failed attempts'
	// ends.
	var ends []int64
	if m := readMetadata(job.Metadata); m.HasRecord {
		ends, _, _ = m.Failures(nil, len(errs))
	}
	out := make([]attemptlog.Attempt, 0, len(errs)+1)
	for i, e := range errs {
		end := e.At
		if k := len(errs) - 1 - i; k < len(ends) { // the k-th newest
			if t := time.Unix(0, ends[len(ends)-1-k]); !t.Before(e.At) {
				end = t
			}
		}
		out = append(out, attemptlog.Attempt{Job: name, Start: e.At, End: end, Seed: seed, HasSeed: true})
	}
	if job.State == rivertype.JobStateCompleted && job.AttemptedAt != nil && job.FinalizedAt != nil {
		out = append(out, attemptlog.Attempt{Job: name, Start: *job.AttemptedAt, End: *job.FinalizedAt, Succeeded: true, Seed: seed, HasSeed: true})
	}
	return out
}
