package riverretry

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/retrypolicy/retrypolicy/retry"
)

// DefaultPage is how many jobs DeadJobs reads from the database at a
// time, unless told otherwise.
const DefaultPage = 256

// DeadJobs is an operator's view of the jobs a Policy gave up: cancelled
// jobs whose record (MetadataKey) says why. They are listed, counted and
// shown by a Filter, made available again at a rate, and deleted. It reads
// a page of cancelled jobs at a time, in the order of their ids, so that
// its memory is a function of the page, not of the table; a filter that
// matches nothing reads the cancelled jobs once. A DeadJobs is safe for
// concurrent use.
type DeadJobs[TTx any] struct {
	client *river.Client[TTx]
	page   int
	now    func() time.Time
	sleep  func(ctx context.Context, d time.Duration) error
	// beforeCommit, when set, is called before a replay's transaction
	// commits (tests interrupt a replay there).
	beforeCommit func()
}

// NewDeadJobs returns the dead jobs of client's database, read page at a
// time (DefaultPage when page is 0). The client need not be started: one
// made for inserting only (no Workers) is enough.
func NewDeadJobs[TTx any](client *river.Client[TTx], page int) (*DeadJobs[TTx], error) {
	switch {
	case client == nil:
		return nil, errors.New("riverretry: NewDeadJobs: no client")
	case page < 0 || page > 10_000:
		return nil, errors.New("riverretry: NewDeadJobs: page must be between 0 and 10000, got " + strconv.Itoa(page))
	case page == 0:
		page = DefaultPage
	}
	return &DeadJobs[TTx]{client: client, page: page}, nil
}

// DeadJob is a job the policy gave up.
type DeadJob struct {
	// Job is the job as River holds it: cancelled, its errors, its
	// metadata with the policy's record.
	Job *rivertype.JobRow
	// Reason is why the policy gave it up, a retry.Reason's name.
	Reason string
	// Error is the last error River recorded for it: its run's, without
	// the prefixes River's cancellation and the policy's FatalError add.
	Error string
	// GivenUp is when it was cancelled.
	GivenUp time.Time
	// WaitAsked is, for the reason retry_after_too_long, the wait a server
	// asked.
	WaitAsked time.Duration
}

// deadJobOf reads job as a dead job, and reports whether it is one: a
// cancelled job whose record says why the policy gave it up.
func deadJobOf(job *rivertype.JobRow) (DeadJob, bool) {
	if job.State != rivertype.JobStateCancelled || len(job.Metadata) == 0 {
		return DeadJob{}, false
	}
	var m struct {
		Record struct {
			GaveUp string  `json:"gave_up"`
			Wait   float64 `json:"wait_asked_secs"`
		} `json:"retrypolicy"`
	}
	if json.Unmarshal(job.Metadata, &m) != nil || m.Record.GaveUp == "" {
		return DeadJob{}, false
	}
	d := DeadJob{Job: job, Reason: m.Record.GaveUp}
	if n := len(job.Errors); n > 0 {
		d.Error = runError(job.Errors[n-1].Error)
	}
	if job.FinalizedAt != nil {
		d.GivenUp = *job.FinalizedAt
	}
	if m.Record.Wait > 0 && m.Record.Wait < 1e10 {
		d.WaitAsked = time.Duration(m.Record.Wait * float64(time.Second))
	}
	return d, true
}

// runError is a run's error from the text River recorded for a job the
// policy gave up: "JobCancelError: riverretry: giving up (…): " cut.
func runError(recorded string) string {
	text := strings.TrimPrefix(recorded, "JobCancelError: ")
	if rest, ok := strings.CutPrefix(text, "riverretry: giving up ("); ok {
		if _, cause, ok := strings.Cut(rest, "): "); ok {
			return cause
		}
	}
	return recorded
}

// Filter selects dead jobs: those that match every criterion given. The
// zero Filter selects none for Purge, which asks for All to purge every
// dead job, and every one for the others.
type Filter struct {
	// Reasons, when given, selects the jobs given up for any of them.
	Reasons []retry.Reason
	// Kinds, when given, selects the jobs of these kinds.
	Kinds []string
	// Since and Until, when not zero, select the jobs given up at Since or
	// later, and before Until.
	Since, Until time.Time
	// Error, when given, is a substring of the job's last error, matched
	// as it is (case and all).
	Error string
	// All selects every dead job, with no criterion: what Purge asks for
	// to purge them all.
	All bool
}

// criteria reports whether f has a criterion other than All.
func (f Filter) criteria() bool {
	return len(f.Reasons) > 0 || len(f.Kinds) > 0 || !f.Since.IsZero() || !f.Until.IsZero() || f.Error != ""
}

// Check returns why f is not a filter: a reason without a name, an empty
// kind, a range that ends before it starts, or All with a criterion.
func (f Filter) Check() error {
	for _, r := range f.Reasons {
		if _, err := r.MarshalText(); err != nil {
			return errors.New("riverretry: Filter.Reasons: " + err.Error())
		}
	}
	if slices.Contains(f.Kinds, "") {
		return errors.New("riverretry: Filter.Kinds: a kind is not empty")
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return errors.New("riverretry: Filter.Since and Filter.Until: the range ends before it starts")
	}
	if f.All && f.criteria() {
		return errors.New("riverretry: Filter.All: selects every dead job, so it takes no other criterion")
	}
	return nil
}

// Match reports whether f selects d.
func (f Filter) Match(d DeadJob) bool {
	if len(f.Reasons) > 0 && !slices.ContainsFunc(f.Reasons, func(r retry.Reason) bool { return r.String() == d.Reason }) {
		return false
	}
	switch {
	case len(f.Kinds) > 0 && !slices.Contains(f.Kinds, d.Job.Kind),
		!f.Since.IsZero() && d.GivenUp.Before(f.Since),
		!f.Until.IsZero() && !d.GivenUp.Before(f.Until),
		f.Error != "" && !strings.Contains(d.Error, f.Error):
		return false
	}
	return true
}

// List returns the dead jobs f selects, in the order of their ids, among
// the jobs that were there when the listing began. It stops at the first
// error, which it yields.
func (d *DeadJobs[TTx]) List(ctx context.Context, f Filter) iter.Seq2[DeadJob, error] {
	return func(yield func(DeadJob, error) bool) {
		if err := f.Check(); err != nil {
			yield(DeadJob{}, err)
			return
		}
		for dj, err := range d.read(ctx, f) {
			if !yield(dj, err) || err != nil {
				return
			}
		}
	}
}

// Count returns how many dead jobs f selects, by reason.
func (d *DeadJobs[TTx]) Count(ctx context.Context, f Filter) (map[string]int, error) {
	if err := f.Check(); err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for dj, err := range d.read(ctx, f) {
		if err != nil {
			return counts, err
		}
		counts[dj.Reason]++
	}
	return counts, nil
}

// Get returns the dead job id; an error when there is none, or the job is
// not one the policy gave up.
func (d *DeadJobs[TTx]) Get(ctx context.Context, id int64) (DeadJob, error) {
	job, err := d.client.JobGet(ctx, id)
	if err != nil {
		return DeadJob{}, errors.New("riverretry: job " + strconv.FormatInt(id, 10) + ": " + err.Error())
	}
	dj, ok := deadJobOf(job)
	if !ok {
		return DeadJob{}, errors.New("riverretry: job " + strconv.FormatInt(id, 10) + " is " + string(job.State) + ", not a job the policy gave up")
	}
	return dj, nil
}

// Purge deletes the dead jobs f selects, and returns how many. A Filter
// with no criterion is refused unless it says All.
func (d *DeadJobs[TTx]) Purge(ctx context.Context, f Filter) (int, error) {
	if err := f.Check(); err != nil {
		return 0, err
	}
	if !f.All && !f.criteria() {
		return 0, errors.New("riverretry: Purge: no filter: give a criterion, or Filter.All to purge every dead job")
	}
	n := 0
	for dj, err := range d.read(ctx, f) {
		if err != nil {
			return n, err
		}
		if _, err := d.client.JobDelete(ctx, dj.Job.ID); err != nil && !errors.Is(err, river.ErrNotFound) {
			return n, errors.New("riverretry: Purge: job " + strconv.FormatInt(dj.Job.ID, 10) + ": " + err.Error())
		}
		n++
	}
	return n, nil
}

// read yields the dead jobs f selects, a page of cancelled jobs at a
// time, in the order of their ids, up to the last cancelled job when it
// began: a job given up again during a replay is left to the next.
func (d *DeadJobs[TTx]) read(ctx context.Context, f Filter) iter.Seq2[DeadJob, error] {
	return func(yield func(DeadJob, error) bool) {
		params := river.NewJobListParams().States(rivertype.JobStateCancelled).OrderBy(river.JobListOrderByID, river.SortOrderDesc).First(1)
		if len(f.Kinds) > 0 {
			params = params.Kinds(f.Kinds...)
		}
		last, err := d.client.JobList(ctx, params)
		if err != nil {
			yield(DeadJob{}, errors.New("riverretry: reading dead jobs: "+err.Error()))
			return
		}
		if len(last.Jobs) == 0 {
			return
		}
		end := last.Jobs[0].ID
		params = params.OrderBy(river.JobListOrderByID, river.SortOrderAsc).First(d.page)
		for {
			res, err := d.client.JobList(ctx, params)
			if err != nil {
				yield(DeadJob{}, errors.New("riverretry: reading dead jobs: "+err.Error()))
				return
			}
			for _, job := range res.Jobs {
				if job.ID > end {
					return
				}
				if dj, ok := deadJobOf(job); ok && f.Match(dj) && !yield(dj, nil) {
					return
				}
			}
			if len(res.Jobs) < d.page {
				return
			}
			params = params.After(res.LastCursor)
		}
	}
}
