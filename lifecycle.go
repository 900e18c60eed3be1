package retrypolicy

import (
	"errors"
	"strconv"
	"time"
)

// Status is where a job is in its life, by its name. The ten statuses are the
// Status constants; the empty Status is a job that does not exist yet, the
// status the EventCreated event starts from.
//
// A name the library does not know (from a newer version, say) behaves as
// StatusUnknown and keeps its text, so that it encodes back unchanged: use
// Known, or Is(StatusUnknown), rather than == StatusUnknown to test for it.
type Status string

// The statuses of a job.
const (
	// StatusScheduled: the job waits for its worker to start it.
	StatusScheduled Status = "SCHEDULED"
	// StatusRunning: its worker runs it.
	StatusRunning Status = "RUNNING"
	// StatusCompleted: it finished its work. Finished.
	StatusCompleted Status = "COMPLETED"
	// StatusError: it failed with an error a retry may fix; it waits for a
	// retry.
	StatusError Status = "ERROR"
	// StatusFatal: it failed for good. Finished.
	StatusFatal Status = "FATAL"
	// StatusStopRequested: someone asked to stop it; its worker has not
	// acted on it yet.
	StatusStopRequested Status = "STOP_REQUESTED"
	// StatusStopping: its worker is stopping it.
	StatusStopping Status = "STOPPING"
	// StatusStopped: its worker stopped it. Finished.
	StatusStopped Status = "STOPPED"
	// StatusCancelled: a job on a trigger gave up waiting for a retry,
	// because its next run was due.
	StatusCancelled Status = "CANCELLED"
	// StatusUnknown: a status this version does not know.
	StatusUnknown Status = "UNKNOWN"
)

// Statuses lists the ten statuses in the order the lifecycle describes them.
func Statuses() []Status {
	return []Status{StatusScheduled, StatusRunning, StatusCompleted, StatusError, StatusFatal,
		StatusStopRequested, StatusStopping, StatusStopped, StatusCancelled, StatusUnknown}
}

// Known reports whether s is one of the ten statuses.
func (s Status) Known() bool {
	switch s {
	case StatusScheduled, StatusRunning, StatusCompleted, StatusError, StatusFatal,
		StatusStopRequested, StatusStopping, StatusStopped, StatusCancelled, StatusUnknown:
		return true
	}
	return false
}

// Is reports whether s and t are the same status, an unknown name being
// StatusUnknown.
func (s Status) Is(t Status) bool { return s.canonical() == t.canonical() }

// canonical is s, or StatusUnknown for a name the library does not know. The
// empty Status stays empty.
func (s Status) canonical() Status {
	if s == "" || s.Known() {
		return s
	}
	return StatusUnknown
}

// Finished reports whether a job in s will not run again on its own:
// COMPLETED, FATAL and STOPPED.
func (s Status) Finished() bool {
	return s == StatusCompleted || s == StatusFatal || s == StatusStopped
}

// Active reports whether s is a status of a job that exists and is not
// finished; an unknown name is active, as UNKNOWN is.
func (s Status) Active() bool { return s != "" && !s.Finished() }

// String returns the status name as read, or "(none)" for the empty Status.
func (s Status) String() string {
	if s == "" {
		return "(none)"
	}
	return string(s)
}

// MarshalText returns the name as read: an unknown name encodes back to its
// own text. The empty Status is not encoded.
func (s Status) MarshalText() ([]byte, error) {
	if s == "" {
		return nil, errors.New("retrypolicy: a job without a status has no name")
	}
	return []byte(s), nil
}

// UnmarshalText reads a status name. It never fails: a name the library does
// not know is kept as it is and behaves as StatusUnknown; an empty name reads
// as StatusUnknown.
func (s *Status) UnmarshalText(text []byte) error {
	if len(text) == 0 {
		*s = StatusUnknown
		return nil
	}
	*s = Status(text)
	return nil
}

// Event is what moves a job from one status to the next.
type Event uint8

// The events of a job's life. The zero Event is not an event.
const (
	// EventCreated: the job is created (by a deployment or a create command).
	EventCreated Event = iota + 1
	// EventWorkerStarted: its worker starts it.
	EventWorkerStarted
	// EventCompleted: it finishes its work.
	EventCompleted
	// EventFailedRetryably: it fails with an error a retry may fix.
	EventFailedRetryably
	// EventFailedFatally: it fails with an error a retry cannot fix.
	EventFailedFatally
	// EventRetryDue: the controller retries it: retries are left and the
	// backoff has passed.
	EventRetryDue
	// EventRetriesExhausted: its retry strategy has no retries left.
	EventRetriesExhausted
	// EventStopRequested: someone stops it.
	EventStopRequested
	// EventWorkerStopping: its worker starts stopping it.
	EventWorkerStopping
	// EventWorkerStopped: its worker has stopped it.
	EventWorkerStopped
	// EventTriggerFired: the trigger of a job that runs on one fires.
	EventTriggerFired
	// EventCreatedAgain: a job is created with the same idempotency key.
	EventCreatedAgain
)

var eventNames = [...]string{"", "created", "worker_started", "completed", "failed_retryably", "failed_fatally",
	"retry_due", "retries_exhausted", "stop_requested", "worker_stopping", "worker_stopped",
	"trigger_fired", "created_again"}

// Events lists every event.
func Events() []Event {
	out := make([]Event, 0, len(eventNames)-1)
	for e := EventCreated; int(e) < len(eventNames); e++ {
		out = append(out, e)
	}
	return out
}

// String returns the event's name, such as "trigger_fired".
func (e Event) String() string {
	if e >= EventCreated && int(e) < len(eventNames) {
		return eventNames[e]
	}
	return "Event(" + strconv.Itoa(int(e)) + ")"
}

// transition is one row of the lifecycle: from, on event, to. A trigger row
// applies only to a job that runs on a trigger.
type transition struct {
	from    Status
	event   Event
	to      Status
	trigger bool
}

// transitions is the whole set of legal moves, row by row as the lifecycle
// table gives them.
var transitions = [...]transition{
	{"", EventCreated, StatusScheduled, false},
	{StatusScheduled, EventWorkerStarted, StatusRunning, false},
	{StatusRunning, EventCompleted, StatusCompleted, false},
	{StatusScheduled, EventFailedRetryably, StatusError, false},
	{StatusRunning, EventFailedRetryably, StatusError, false},
	{StatusRunning, EventFailedFatally, StatusFatal, false},
	{StatusError, EventRetryDue, StatusScheduled, false},
	{StatusError, EventRetriesExhausted, StatusFatal, false},
	{StatusScheduled, EventStopRequested, StatusStopRequested, false},
	{StatusRunning, EventStopRequested, StatusStopRequested, false},
	{StatusError, EventStopRequested, StatusStopRequested, false},
	{StatusCompleted, EventStopRequested, StatusStopRequested, true},
	{StatusFatal, EventStopRequested, StatusStopRequested, true},
	{StatusCancelled, EventStopRequested, StatusStopRequested, true},
	{StatusStopRequested, EventWorkerStopping, StatusStopping, false},
	{StatusStopping, EventWorkerStopped, StatusStopped, false},
	{StatusCompleted, EventTriggerFired, StatusScheduled, true},
	{StatusFatal, EventTriggerFired, StatusScheduled, true},
	{StatusCancelled, EventTriggerFired, StatusScheduled, true},
	{StatusError, EventTriggerFired, StatusCancelled, true},
	{StatusCompleted, EventCreatedAgain, StatusScheduled, false},
	{StatusStopped, EventCreatedAgain, StatusScheduled, false},
	{StatusFatal, EventCreatedAgain, StatusScheduled, false},
}

// ErrIllegalTransition is the sentinel a *TransitionError matches with
// errors.Is.
var ErrIllegalTransition = errors.New("retrypolicy: illegal status transition")

// TransitionError reports an event that the lifecycle does not allow in a
// status.
type TransitionError struct {
	// From is the status the job was in, as given.
	From Status
	// Event is the event that cannot happen in it.
	Event Event
	// OnTrigger says whether the job runs on a trigger.
	OnTrigger bool
}

// Error names the status and the event.
func (e *TransitionError) Error() string {
	msg := "retrypolicy: no transition from " + e.From.String() + " on " + e.Event.String()
	if !e.OnTrigger {
		for _, t := range transitions {
			if t.trigger && t.from == e.From.canonical() && t.event == e.Event {
				return msg + " for a job without a trigger"
			}
		}
	}
	return msg
}

// Is reports whether target is ErrIllegalTransition.
func (e *TransitionError) Is(target error) bool { return target == ErrIllegalTransition }

// Next returns the status a job in from moves to on event e, or a
// *TransitionError naming both when the lifecycle has no such move. onTrigger
// says whether the job runs on a trigger: only such a job can be stopped
// between runs (from COMPLETED, FATAL or CANCELLED) or see its trigger fire.
// An unknown status name has no moves.
func Next(from Status, e Event, onTrigger bool) (Status, error) {
	for _, t := range transitions {
		if t.from == from && t.event == e && (onTrigger || !t.trigger) {
			return t.to, nil
		}
	}
	return from, &TransitionError{From: from, Event: e, OnTrigger: onTrigger}
}

// ParentStatus returns a deployment parent's status from its children's:
// RUNNING while any child is active; once every child is finished, FATAL if
// any is FATAL, else COMPLETED, a STOPPED child counting as neither; STOPPED
// if every child was stopped; COMPLETED for a parent without children.
func ParentStatus(children []Status) Status {
	fatal, stopped := false, 0
	for _, c := range children {
		switch {
		case c.Active():
			return StatusRunning
		case c == StatusFatal:
			fatal = true
		case c == StatusStopped:
			stopped++
		}
	}
	switch {
	case fatal:
		return StatusFatal
	case len(children) > 0 && stopped == len(children):
		return StatusStopped
	}
	return StatusCompleted
}

// Step is the controller's move for a job in ERROR at time now: it decides
// under strategy s and returns the job's next status with the decision:
// FATAL when no retries are left, SCHEDULED when the backoff has passed, and
// still ERROR (until the decision's Due) otherwise. It returns a
// *TransitionError for a job that is not in ERROR, and Decide's errors.
func Step(s Strategy, status Status, in Input, now time.Time) (Status, Decision, error) {
	if status != StatusError {
		return status, Decision{}, &TransitionError{From: status, Event: EventRetryDue}
	}
	d, err := Decide(s, in, now)
	if err != nil {
		return status, Decision{}, err
	}
	switch d.Action {
	case Fatal:
		status, err = Next(status, EventRetriesExhausted, false)
	case RetryNow:
		status, err = Next(status, EventRetryDue, false)
	}
	return status, d, err
}
