package riverretry

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"

	"github.com/retrypolicy/retrypolicy/queuekit"
)

// DeadJobs is the jobs a Policy gave up (cancelled jobs whose record,
// MetadataKey, says why) as the dead-letter kit reads them: a
// queuekit.Driver. queuekit.DeadLetters lists, counts, purges and replays
// them; each letter's ID is its job's id, GivenUp when it was cancelled.
// A DeadJobs is safe for concurrent use.
//
// A page is read in the order of the jobs' cancellation, by a keyset that
// River's index on a job's state and end time serves (its cost linear in
// the jobs read), and among the jobs cancelled before the read began: a
// job replayed and given up again meanwhile is left to the next read.
//
// A replay makes a job available again only if it is still the same
// cancelled job (its state and the time it was cancelled, read under a
// lock on its row, in the transaction that makes it available: on
// PostgreSQL a row lock, on SQLite the database's write lock), so that
// two replays at once, or a replay and a purge, never make one job
// available twice nor touch a job another made available (running,
// completed). With queuekit.Route.ResetAttempts, a job of the same kind,
// args, queue, priority, tags and metadata (the policy's record dropped,
// so that no failure of its earlier life counts) is inserted and the dead
// one deleted, in that transaction; without it, the job itself is made
// available, its attempts and the policy's record kept.
type DeadJobs[TTx any] struct {
	client *river.Client[TTx]
	// beforeCommit, when set, is called before a send's or a removal's
	// transaction commits (tests interrupt there).
	beforeCommit func()
}

// NewDeadJobs returns the dead jobs of client's database. The client need
// not be started: one made for inserting only (no Workers) is enough.
func NewDeadJobs[TTx any](client *river.Client[TTx]) (*DeadJobs[TTx], error) {
	if client == nil {
		return nil, errors.New("riverretry: NewDeadJobs: no client")
	}
	return &DeadJobs[TTx]{client: client}, nil
}

// letterOf reads job as a dead letter, and reports whether it is one: a
// cancelled job whose record says why the policy gave it up.
func letterOf(job *rivertype.JobRow) (queuekit.Letter, bool) {
	if job.State != rivertype.JobStateCancelled || len(job.Metadata) == 0 || job.FinalizedAt == nil {
		return queuekit.Letter{}, false
	}
	var m struct {
		Record struct {
			GaveUp string  `json:"gave_up"`
			Wait   float64 `json:"wait_asked_secs"`
		} `json:"retrypolicy"`
	}
	if json.Unmarshal(job.Metadata, &m) != nil || m.Record.GaveUp == "" {
		return queuekit.Letter{}, false
	}
	l := queuekit.Letter{ID: uint64(job.ID), GivenUp: *job.FinalizedAt, Reason: m.Record.GaveUp, Origin: job.Kind,
		Failures: job.Attempt, Header: map[string][]string{"metadata": {string(job.Metadata)}}, Payload: job.EncodedArgs}
	if n := len(job.Errors); n > 0 {
		l.Error = runError(job.Errors[n-1].Error)
	}
	if m.Record.Wait > 0 && m.Record.Wait < 1e10 {
		l.WaitAsked = time.Duration(m.Record.Wait * float64(time.Second))
	}
	return l, true
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

// Filter selects dead jobs: those that match every criterion given,
// queuekit.Filter's and its own.
type Filter struct {
	queuekit.Filter
	// Kinds, when given, selects the jobs of these kinds.
	Kinds []string
}

// Criteria reports whether f has a criterion other than All.
func (f Filter) Criteria() bool { return f.Filter.Criteria() || len(f.Kinds) > 0 }

// Check returns why f is not a filter: queuekit.Filter's reasons, an
// empty kind, or All with a criterion.
func (f Filter) Check() error {
	if err := f.Filter.Check(); err != nil {
		return errors.New("riverretry: " + strings.TrimPrefix(err.Error(), "queuekit: "))
	}
	if slices.Contains(f.Kinds, "") {
		return errors.New("riverretry: Filter.Kinds: a kind is not empty")
	}
	if f.All && f.Criteria() {
		return errors.New("riverretry: Filter.All: selects every dead letter, so it takes no other criterion")
	}
	return nil
}

// Match reports whether f selects l.
func (f Filter) Match(l queuekit.Letter) bool {
	return f.Filter.Match(l) && (len(f.Kinds) == 0 || slices.Contains(f.Kinds, l.Origin))
}

// Page reads the next page of dead jobs after c (queuekit.Driver): the
// jobs cancelled at or before c.Began, in the order of their end time
// then id, after the last read. It reads pages of cancelled jobs until one
// holds a job the policy gave up, or none is left.
func (d *DeadJobs[TTx]) Page(ctx context.Context, c *queuekit.Cursor) ([]queuekit.Letter, error) {
	exec := d.client.Driver().GetExecutor()
	size := min(max(c.Size, 1), queuekit.MaxPage)
	for {
		jobs, err := exec.JobList(ctx, &riverdriver.JobListParams{Max: int32(size),
			WhereClause: "state = 'cancelled' AND finalized_at IS NOT NULL AND finalized_at <= @began AND " +
				"(finalized_at > @after_at OR (finalized_at = @after_at AND id > @after_id))",
			NamedArgs:     map[string]any{"began": c.Began, "after_at": c.AfterGivenUp, "after_id": int64(c.After)},
			OrderByClause: "finalized_at ASC, id ASC"})
		if err != nil {
			return nil, errors.New("riverretry: reading dead jobs: " + err.Error())
		}
		page := make([]queuekit.Letter, 0, len(jobs))
		for _, job := range jobs {
			if l, ok := letterOf(job); ok {
				page = append(page, l)
			}
			c.After, c.AfterGivenUp = uint64(job.ID), *job.FinalizedAt
		}
		c.Done = len(jobs) < size
		if len(page) > 0 || c.Done {
			return page, nil
		}
	}
}

// Get returns the dead job id, in full; an error wrapping queuekit.ErrGone
// when there is none, or it is not a job the policy gave up.
func (d *DeadJobs[TTx]) Get(ctx context.Context, id uint64) (queuekit.Letter, error) {
	job, err := d.client.JobGet(ctx, int64(min(id, 1<<62)))
	name := "riverretry: job " + strconv.FormatUint(id, 10)
	switch {
	case errors.Is(err, river.ErrNotFound):
		return queuekit.Letter{}, queuekit.Mark(queuekit.ErrGone, name+": not found")
	case err != nil:
		return queuekit.Letter{}, errors.New(name + ": " + err.Error())
	}
	l, ok := letterOf(job)
	if !ok {
		return l, queuekit.Mark(queuekit.ErrGone, "riverretry: job "+strconv.FormatUint(id, 10)+" is "+string(job.State)+", not a job the policy gave up")
	}
	return l, nil
}

// Send makes l available again, or with r.ResetAttempts a job anew, if it
// is still the same cancelled job (DeadJobs), in one transaction.
func (d *DeadJobs[TTx]) Send(ctx context.Context, l queuekit.Letter, r queuekit.Route) (queuekit.Sent, error) {
	if r.Stream != "" {
		return queuekit.Sent{}, errors.New("riverretry: Route.Stream: a River job goes back to its own queue: no stream")
	}
	var id int64
	err := d.claimed(ctx, l, func(tx TTx, job *rivertype.JobRow) error {
		id = job.ID
		if !r.ResetAttempts {
			_, err := d.client.JobRetryTx(ctx, tx, job.ID)
			return err
		}
		res, err := d.client.InsertTx(ctx, tx, rawArgs{kind: job.Kind, args: job.EncodedArgs}, &river.InsertOpts{
			Queue: job.Queue, Priority: job.Priority, Tags: job.Tags, MaxAttempts: job.MaxAttempts, Metadata: withoutRecord(job.Metadata)})
		if err == nil {
			id = res.Job.ID
			_, err = d.client.JobDeleteTx(ctx, tx, job.ID)
		}
		return err
	})
	if err != nil {
		return queuekit.Sent{}, err
	}
	return queuekit.Sent{ID: uint64(id), Removed: true}, nil
}

// Remove deletes l, if it is still the same cancelled job, in one
// transaction.
func (d *DeadJobs[TTx]) Remove(ctx context.Context, l queuekit.Letter) error {
	return d.claimed(ctx, l, func(tx TTx, job *rivertype.JobRow) error {
		_, err := d.client.JobDeleteTx(ctx, tx, job.ID)
		return err
	})
}

// claimed runs do on l's job in a transaction of its own, once the job's
// row is locked and found still the same cancelled job; an error wrapping
// queuekit.ErrGone when it is not.
func (d *DeadJobs[TTx]) claimed(ctx context.Context, l queuekit.Letter, do func(tx TTx, job *rivertype.JobRow) error) error {
	name := "riverretry: job " + strconv.FormatUint(l.ID, 10) + ": "
	driver := d.client.Driver()
	exec, err := driver.GetExecutor().Begin(ctx)
	if err != nil {
		return errors.New(name + err.Error())
	}
	defer exec.Rollback(context.WithoutCancel(ctx)) // after a commit, it does nothing
	id := int64(min(l.ID, 1<<62))
	// A write first: the row's lock on PostgreSQL (as SELECT … FOR
	// UPDATE), the database's write lock on SQLite (as an immediate
	// transaction), held until the commit, before the job is read.
	if err := exec.Exec(ctx, "UPDATE river_job SET state = state WHERE id = "+strconv.FormatInt(id, 10)); err != nil {
		return errors.New(name + err.Error())
	}
	job, err := exec.JobGetByID(ctx, &riverdriver.JobGetByIDParams{ID: id})
	switch {
	case errors.Is(err, rivertype.ErrNotFound):
		return queuekit.Mark(queuekit.ErrGone, name+"deleted since it was read")
	case err != nil:
		return errors.New(name + err.Error())
	case job.State != rivertype.JobStateCancelled || job.FinalizedAt == nil || !job.FinalizedAt.Equal(l.GivenUp):
		return queuekit.Mark(queuekit.ErrGone, name+"no longer the job given up when it was read (now "+string(job.State)+")")
	}
	if err := do(driver.UnwrapTx(exec), job); err != nil {
		return errors.New(name + err.Error())
	}
	if d.beforeCommit != nil {
		d.beforeCommit()
	}
	if err := exec.Commit(ctx); err != nil {
		return errors.New(name + err.Error())
	}
	return nil
}

// rawArgs are a job's args as River stored them, under its kind: a dead
// job's, inserted anew.
type rawArgs struct {
	kind string
	args []byte
}

// Kind returns the job's kind.
func (a rawArgs) Kind() string { return a.kind }

// MarshalJSON returns the args as they were stored.
func (a rawArgs) MarshalJSON() ([]byte, error) { return a.args, nil }

// withoutRecord is metadata without the policy's record (MetadataKey); the
// rest, a job's own strategy included, as it was.
func withoutRecord(metadata []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(metadata, &m) != nil {
		return nil
	}
	delete(m, MetadataKey)
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return b
}
