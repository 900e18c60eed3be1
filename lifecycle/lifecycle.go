// Package lifecycle is a job's life as a scheduler that retries sees it.
//
// It holds the ten statuses, the twelve events that move a job between
// them, the table of legal moves, the controller's step for a job in ERROR
// under [retrypolicy], and a deployment's status from its children's.
//
// A scheduler keeps one status per job and moves it only with [Next] (or
// [Step] for a failed job), which refuses every move the table does not
// have. [Legal] lists the moves a status allows, to offer only those.
// Statuses read from storage never fail to decode: a name from a newer
// version is kept as written and behaves as UNKNOWN.
//
// Everything here is a plain value or a pure function, safe for concurrent
// use.
package lifecycle

import (
	"errors"
	"slices"
	"strconv"

	"github.com/retrypolicy/retrypolicy"
)

// Status is where a job is in its life, by name. The empty Status is a job
// that does not exist yet, the status EventCreated starts from. A name the
// package does not know behaves as StatusUnknown and keeps its text.
type Status string

// The ten statuses of a job.
const (
	// StatusScheduled: the job waits for its worker to start it.
	StatusScheduled Status = "SCHEDULED"
	// StatusRunning: its worker runs it.
	StatusRunning Status = "RUNNING"
	// StatusCompleted: it finished its work. Finished.
	StatusCompleted Status = "COMPLETED"
	// StatusError: it failed with an error a retry may fix, and waits.
	StatusError Status = "ERROR"
	// StatusFatal: it failed for good. Finished.
	StatusFatal Status = "FATAL"
	// StatusStopRequested: it was asked to stop; its worker has not acted.
	StatusStopRequested Status = "STOP_REQUESTED"
	// StatusStopping: its worker is stopping it.
	StatusStopping Status = "STOPPING"
	// StatusStopped: its worker stopped it. Finished.
	StatusStopped Status = "STOPPED"
	// StatusCancelled: a job on a trigger dropped its retry because its
	// next run was due.
	StatusCancelled Status = "CANCELLED"
	// StatusUnknown: a status this version does not know.
	StatusUnknown Status = "UNKNOWN"
)

// Statuses returns the ten statuses in the order the lifecycle lists them.
func Statuses() []Status {
	return []Status{StatusScheduled, StatusRunning, StatusCompleted, StatusError, StatusFatal,
		StatusStopRequested, StatusStopping, StatusStopped, StatusCancelled, StatusUnknown}
}

// ParseStatus reads a status name a person typed (a flag, a query): one of
// the ten, exactly. Decoding a stored status with UnmarshalText never fails.
func ParseStatus(name string) (Status, error) {
	if s := Status(name); s.Known() {
		return s, nil
	}
	return "", errors.New("lifecycle: " + strconv.Quote(name) + " is not a status")
}

// Known reports whether s is one of the ten statuses.
func (s Status) Known() bool { return slices.Contains(Statuses(), s) }

// Is reports whether s and t are the same status: the same name, or UNKNOWN
// and a name the package does not know. Two different unknown names are
// different statuses.
func (s Status) Is(t Status) bool {
	return s == t || s == StatusUnknown && t.foreign() || t == StatusUnknown && s.foreign()
}

// foreign reports whether s is a name the package does not know.
func (s Status) foreign() bool { return s != "" && !s.Known() }

// Finished reports whether a job in s will not run again on its own:
// COMPLETED, FATAL and STOPPED.
func (s Status) Finished() bool {
	return s == StatusCompleted || s == StatusFatal || s == StatusStopped
}

// Active reports whether s is the status of a job that exists and is not
// finished; an unknown name is active, as UNKNOWN is.
func (s Status) Active() bool { return s != "" && !s.Finished() }

// String returns the name as written, or "(none)" for the empty Status.
func (s Status) String() string {
	if s == "" {
		return "(none)"
	}
	return string(s)
}

// MarshalText returns the name as written, an unknown one included.
func (s Status) MarshalText() ([]byte, error) { return []byte(s), nil }

// UnmarshalText keeps the name as written, even empty or unknown: it never
// fails.
func (s *Status) UnmarshalText(text []byte) error {
	*s = Status(text)
	return nil
}

// Event is what moves a job from one status to the next. The zero Event,
// EventNone, is no event: what Step returns for a job that waits. It
// prints, logs and encodes as "none", and no transition takes it.
type Event uint8

// EventNone is no event.
const EventNone Event = 0

// The twelve events of a job's life.
const (
	// EventCreated: the job is created.
	EventCreated Event = iota + 1
	// EventWorkerStarted: its worker starts it.
	EventWorkerStarted
	// EventCompleted: it finishes its work.
	EventCompleted
	// EventFailedRetryably: it fails with an error a retry may fix.
	EventFailedRetryably
	// EventFailedFatally: it fails with an error a retry cannot fix.
	EventFailedFatally
	// EventRetryDue: the controller retries it: its backoff has passed.
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

var eventNames = [...]string{"none", "created", "worker_started", "completed", "failed_retryably", "failed_fatally",
	"retry_due", "retries_exhausted", "stop_requested", "worker_stopping", "worker_stopped",
	"trigger_fired", "created_again"}

// Events returns the twelve events in their order.
func Events() []Event {
	out := make([]Event, 0, len(eventNames)-1)
	for e := EventCreated; int(e) < len(eventNames); e++ {
		out = append(out, e)
	}
	return out
}

// ParseEvent reads an event's name ("trigger_fired"), or "none" for
// EventNone, exactly.
func ParseEvent(name string) (Event, error) {
	if i := slices.Index(eventNames[:], name); i >= 0 {
		return Event(i), nil
	}
	return 0, errors.New("lifecycle: " + strconv.Quote(name) + " is not an event")
}

// String returns the event's name, "none" for EventNone, or "Event(N)".
func (e Event) String() string {
	if int(e) < len(eventNames) {
		return eventNames[e]
	}
	return "Event(" + strconv.Itoa(int(e)) + ")"
}

// MarshalText returns the event's name, "none" for EventNone; it fails for
// a value that is neither.
func (e Event) MarshalText() ([]byte, error) {
	if int(e) >= len(eventNames) {
		return nil, errors.New("lifecycle: " + e.String() + " is not an event")
	}
	return []byte(eventNames[e]), nil
}

// UnmarshalText reads an event's name, as ParseEvent does.
func (e *Event) UnmarshalText(text []byte) error {
	v, err := ParseEvent(string(text))
	if err == nil {
		*e = v
	}
	return err
}

// transition is one row of the lifecycle: from, on event, to. A trigger row
// applies only to a job that runs on a trigger.
type transition struct {
	from    Status
	event   Event
	to      Status
	trigger bool
}

// transitions is the whole set of legal moves, as the lifecycle table gives
// them.
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
var ErrIllegalTransition = errors.New("lifecycle: illegal status transition")

// TransitionError reports an event the lifecycle does not allow in a status.
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
	msg := "lifecycle: no transition from " + e.From.String() + " on " + e.Event.String()
	if !e.OnTrigger && slices.Contains(Legal(e.From, true), e.Event) {
		return msg + " for a job without a trigger"
	}
	return msg
}

// Is reports whether target is ErrIllegalTransition.
func (e *TransitionError) Is(target error) bool { return target == ErrIllegalTransition }

// Next returns the status a job in from moves to on event e, or a
// *TransitionError when the lifecycle has no such move. onTrigger says
// whether the job runs on a trigger: only such a job can be stopped between
// runs (from COMPLETED, FATAL or CANCELLED) or see its trigger fire. A
// status the package does not know has no moves.
func Next(from Status, e Event, onTrigger bool) (Status, error) {
	for _, t := range transitions {
		if t.from == from && t.event == e && (onTrigger || !t.trigger) {
			return t.to, nil
		}
	}
	return from, &TransitionError{From: from, Event: e, OnTrigger: onTrigger}
}

// Legal returns the events that move a job out of status from, in event
// order: what a scheduler or a UI may offer.
func Legal(from Status, onTrigger bool) []Event {
	var out []Event
	for _, t := range transitions {
		if t.from == from && (onTrigger || !t.trigger) {
			out = append(out, t.event)
		}
	}
	slices.Sort(out)
	return out
}

// ParentStatus returns a deployment parent's status from its children's:
// RUNNING while any child is active; once every child is finished, FATAL if
// any is FATAL, else COMPLETED, a STOPPED child counting as neither;
// STOPPED if every child was stopped; COMPLETED without children.
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

// notInError is Step's error for a job that is not in ERROR.
type notInError struct{ status Status }

func (e notInError) Error() string {
	return "lifecycle: Step decides on a job in ERROR, and this one is " + e.status.String()
}

func (e notInError) Is(target error) bool { return target == ErrIllegalTransition }

// Step is the controller's move for a job in ERROR, given the decision on
// its newest failure (from [retrypolicy.Decide], a [retrypolicy.Policy] or a
// [retrypolicy.History]): FATAL on EventRetriesExhausted when the decision
// is Fatal, SCHEDULED on EventRetryDue when it is RetryNow, and still ERROR
// on EventNone when it is Wait. For a job that is not in ERROR it returns
// an error that says so and matches ErrIllegalTransition; for a decision
// without an action, an error.
func Step(status Status, d retrypolicy.Decision) (Status, Event, error) {
	if status != StatusError {
		return status, EventNone, notInError{status}
	}
	var e Event
	switch d.Action {
	case retrypolicy.Fatal:
		e = EventRetriesExhausted
	case retrypolicy.RetryNow, retrypolicy.Wait:
		e = EventRetryDue
	default:
		return status, 0, errors.New("lifecycle: a decision without an action")
	}
	next, err := Next(status, e, false)
	switch {
	case err != nil:
		return status, 0, err
	case d.Action == retrypolicy.Wait:
		return status, 0, nil
	}
	return next, e, nil
}
