package lifecycle

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// seedTable is the lifecycle's table of moves, written from the job
// lifecycle document: "FROM event" → TO, with the rows about jobs on a
// trigger in triggerOnly.
var seedTable = map[string]Status{
	"(none) created":                 StatusScheduled,
	"SCHEDULED worker_started":       StatusRunning,
	"RUNNING completed":              StatusCompleted,
	"SCHEDULED failed_retryably":     StatusError,
	"RUNNING failed_retryably":       StatusError,
	"RUNNING failed_fatally":         StatusFatal,
	"ERROR retry_due":                StatusScheduled,
	"ERROR retries_exhausted":        StatusFatal,
	"SCHEDULED stop_requested":       StatusStopRequested,
	"RUNNING stop_requested":         StatusStopRequested,
	"ERROR stop_requested":           StatusStopRequested,
	"STOP_REQUESTED worker_stopping": StatusStopping,
	"STOPPING worker_stopped":        StatusStopped,
	"COMPLETED created_again":        StatusScheduled,
	"STOPPED created_again":          StatusScheduled,
	"FATAL created_again":            StatusScheduled,
}

var triggerOnly = map[string]Status{
	"COMPLETED stop_requested": StatusStopRequested,
	"FATAL stop_requested":     StatusStopRequested,
	"CANCELLED stop_requested": StatusStopRequested,
	"COMPLETED trigger_fired":  StatusScheduled,
	"FATAL trigger_fired":      StatusScheduled,
	"CANCELLED trigger_fired":  StatusScheduled,
	"ERROR trigger_fired":      StatusCancelled,
}

// want returns the table's answer for a move.
func want(from Status, e Event, trigger bool) (Status, bool) {
	key := from.String() + " " + e.String()
	if to, ok := triggerOnly[key]; ok && trigger {
		return to, true
	}
	to, ok := seedTable[key]
	return to, ok
}

func allFroms() []Status {
	return append([]Status{"", Status("PAUSED")}, Statuses()...)
}

// TestEveryStatusEventPair: over every status (with none and an unknown
// name), every event and both kinds of job, a move is legal iff the table
// has it, it leads where the table says, Legal lists it, and a refused move
// names the status and the event and leaves the status as it was.
func TestEveryStatusEventPair(t *testing.T) {
	legal := 0
	for _, from := range allFroms() {
		for _, trigger := range []bool{false, true} {
			offered := Legal(from, trigger)
			for _, e := range Events() {
				to, ok := want(from, e, trigger)
				got, err := Next(from, e, trigger)
				assert.Equal(t, ok, slices.Contains(offered, e), "Legal(%s, %v) and %s", from, trigger, e)
				if !ok {
					require.Error(t, err, "%s on %s (trigger %v) should be illegal", from, e, trigger)
					assert.ErrorIs(t, err, ErrIllegalTransition)
					assert.Equal(t, from, got)
					assert.Contains(t, err.Error(), from.String())
					assert.Contains(t, err.Error(), e.String())
					continue
				}
				legal++
				require.NoError(t, err)
				assert.Equal(t, to, got, "%s on %s", from, e)
			}
			assert.True(t, slices.IsSorted(offered))
		}
	}
	assert.Equal(t, 2*len(seedTable)+len(triggerOnly), legal)
}

func TestTransitionErrorMessages(t *testing.T) {
	_, err := Next(StatusCompleted, EventTriggerFired, false)
	assert.EqualError(t, err, "lifecycle: no transition from COMPLETED on trigger_fired for a job without a trigger")
	_, err = Next(StatusRunning, EventRetryDue, true)
	assert.EqualError(t, err, "lifecycle: no transition from RUNNING on retry_due")
	_, err = Next(Status("PAUSED"), EventWorkerStarted, false)
	assert.EqualError(t, err, "lifecycle: no transition from PAUSED on worker_started")
	var te *TransitionError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, Status("PAUSED"), te.From)
	assert.Equal(t, EventWorkerStarted, te.Event)
}

func TestStatusAndEventNames(t *testing.T) {
	finished := map[Status]bool{StatusCompleted: true, StatusFatal: true, StatusStopped: true}
	require.Len(t, Statuses(), 10)
	for _, s := range Statuses() {
		assert.True(t, s.Known())
		assert.Equal(t, finished[s], s.Finished(), s)
		assert.Equal(t, !finished[s], s.Active(), s)
		text, err := s.MarshalText()
		require.NoError(t, err)
		var back Status
		require.NoError(t, back.UnmarshalText(text))
		assert.Equal(t, s, back)
		parsed, err := ParseStatus(string(s))
		require.NoError(t, err)
		assert.Equal(t, s, parsed)
	}
	for _, bad := range []string{"", "running", "PAUSED", " RUNNING"} {
		_, err := ParseStatus(bad)
		assert.Error(t, err, bad)
	}
	assert.False(t, Status("").Active())
	assert.Equal(t, "(none)", Status("").String())

	require.Len(t, Events(), 12)
	for _, e := range Events() {
		text, err := e.MarshalText()
		require.NoError(t, err)
		var back Event
		require.NoError(t, back.UnmarshalText(text))
		assert.Equal(t, e, back)
		parsed, err := ParseEvent(e.String())
		require.NoError(t, err)
		assert.Equal(t, e, parsed)
	}
	assert.Equal(t, "created_again", EventCreatedAgain.String())
	assert.Equal(t, "none", EventNone.String())
	none, err := json.Marshal(EventNone)
	require.NoError(t, err, "a wait's event encodes")
	assert.Equal(t, `"none"`, string(none))
	parsedNone, err := ParseEvent("none")
	require.NoError(t, err)
	assert.Equal(t, EventNone, parsedNone)
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("step", "event", EventNone)
	assert.Contains(t, logged.String(), "event=none", "a wait's event logs")
	assert.Equal(t, "Event(13)", Event(13).String())
	_, err = Event(13).MarshalText()
	assert.Error(t, err)
	for _, bad := range []string{"", "Created", "13", "retry due"} {
		_, err := ParseEvent(bad)
		assert.Error(t, err, bad)
	}
	out, err := json.Marshal(map[string]Event{"event": EventTriggerFired})
	require.NoError(t, err)
	assert.Equal(t, `{"event":"trigger_fired"}`, string(out), "events encode as names")
}

func TestUnknownStatusKeepsItsName(t *testing.T) {
	var job struct {
		Status Status `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(`{"status":"PAUSED"}`), &job))
	assert.False(t, job.Status.Known())
	assert.True(t, job.Status.Is(StatusUnknown))
	assert.True(t, StatusUnknown.Is(job.Status))
	assert.True(t, job.Status.Active(), "UNKNOWN is not finished")
	out, err := json.Marshal(job)
	require.NoError(t, err)
	assert.JSONEq(t, `{"status":"PAUSED"}`, string(out), "encodes back to its own text")

	assert.False(t, Status("PAUSED").Is("ARCHIVED"), "two different unknown names are different statuses")
	assert.True(t, Status("PAUSED").Is("PAUSED"))
	assert.False(t, Status("PAUSED").Is(StatusRunning))
	assert.False(t, Status("").Is(StatusUnknown), "no status is not an unknown one")

	require.NoError(t, json.Unmarshal([]byte(`{"status":""}`), &job))
	assert.Equal(t, Status(""), job.Status, "an empty name is kept as given")
	out, err = json.Marshal(job)
	require.NoError(t, err)
	assert.JSONEq(t, `{"status":""}`, string(out))
	require.NoError(t, json.Unmarshal([]byte(`{"status":"running"}`), &job))
	assert.False(t, job.Status.Known(), "names are case-sensitive")
}

// parentOracle restates the parent rule by counting: running while any
// child is active; without children completed; all stopped: stopped; any
// fatal: fatal; else completed.
func parentOracle(children []Status) Status {
	active, fatal, stopped := 0, 0, 0
	for _, c := range children {
		switch {
		case c != StatusCompleted && c != StatusFatal && c != StatusStopped:
			active++
		case c == StatusFatal:
			fatal++
		case c == StatusStopped:
			stopped++
		}
	}
	switch {
	case active > 0:
		return StatusRunning
	case len(children) == 0:
		return StatusCompleted
	case stopped == len(children):
		return StatusStopped
	case fatal > 0:
		return StatusFatal
	}
	return StatusCompleted
}

// TestParentStatusEveryCombination checks every combination of up to four
// children, each in any status or an unknown one.
func TestParentStatusEveryCombination(t *testing.T) {
	options := append(Statuses(), Status("PAUSED"))
	var walk func(prefix []Status)
	count := 0
	walk = func(prefix []Status) {
		count++
		if got, want := ParentStatus(prefix), parentOracle(prefix); got != want {
			t.Fatalf("%v: %s, want %s", prefix, got, want)
		}
		if len(prefix) == 4 {
			return
		}
		for _, s := range options {
			walk(append(prefix[:len(prefix):len(prefix)], s))
		}
	}
	walk(nil)
	assert.Equal(t, 1+11+121+1331+14641, count)

	// The lifecycle document's cases, spelled out.
	assert.Equal(t, StatusRunning, ParentStatus([]Status{StatusCompleted, StatusRunning}))
	assert.Equal(t, StatusFatal, ParentStatus([]Status{StatusCompleted, StatusFatal, StatusStopped}))
	assert.Equal(t, StatusCompleted, ParentStatus([]Status{StatusCompleted, StatusStopped}))
	assert.Equal(t, StatusRunning, ParentStatus([]Status{StatusStopped, StatusError}), "a stopped child keeps the parent running no longer than its siblings")
	assert.Equal(t, StatusStopped, ParentStatus([]Status{StatusStopped, StatusStopped}))
	assert.Equal(t, StatusCompleted, ParentStatus(nil))
}

var t0 = time.Date(2026, 11, 2, 15, 4, 5, 0, time.UTC)

func TestStepForAJobInError(t *testing.T) {
	s := retrypolicy.Default()
	s.Kind, s.MaxAttempts, s.Window = retrypolicy.Bounded, 3, time.Hour
	decide := func(failures []time.Time, now time.Time) retrypolicy.Decision {
		d, err := retrypolicy.Decide(s, failures, 0, 0, now)
		require.NoError(t, err)
		return d
	}
	two := []time.Time{t0.Add(-10 * time.Second), t0}
	st, e, err := Step(StatusError, decide(two, t0))
	require.NoError(t, err)
	assert.Equal(t, StatusError, st, "backoff not passed: still ERROR")
	assert.Equal(t, EventNone, e, "no event applied")

	st, e, err = Step(StatusError, decide(two, t0.Add(2*time.Second)))
	require.NoError(t, err)
	assert.Equal(t, StatusScheduled, st)
	assert.Equal(t, EventRetryDue, e)

	three := append(two, t0.Add(-20*time.Second))
	st, e, err = Step(StatusError, decide(three, t0))
	require.NoError(t, err)
	assert.Equal(t, StatusFatal, st)
	assert.Equal(t, EventRetriesExhausted, e)

	for _, d := range []retrypolicy.Decision{decide(two, t0), decide(three, t0)} {
		st, _, err = Step(StatusScheduled, d)
		assert.ErrorIs(t, err, ErrIllegalTransition)
		assert.Contains(t, err.Error(), "SCHEDULED")
		assert.Equal(t, StatusScheduled, st)
	}
	_, e, err = Step(StatusRunning, decide(two, t0)) // a wait, on a job not in ERROR
	assert.ErrorIs(t, err, ErrIllegalTransition)
	assert.Equal(t, "lifecycle: Step decides on a job in ERROR, and this one is RUNNING", err.Error())
	assert.Equal(t, EventNone, e)
	_, _, err = Step(StatusError, retrypolicy.Decision{})
	assert.Error(t, err)
}

// TestTriggerWhileWaitingKeepsFailuresInTheWindow: a job on a trigger waits
// in ERROR and its trigger fires: CANCELLED, then scheduled at once. Its
// failures still count when it fails again.
func TestTriggerWhileWaitingKeepsFailuresInTheWindow(t *testing.T) {
	s := retrypolicy.Default()
	s.Kind, s.MaxAttempts, s.Window = retrypolicy.Bounded, 3, time.Hour
	st, err := Next(StatusError, EventTriggerFired, true)
	require.NoError(t, err)
	require.Equal(t, StatusCancelled, st)
	st, err = Next(st, EventTriggerFired, true)
	require.NoError(t, err)
	require.Equal(t, StatusScheduled, st)

	failures := []time.Time{t0.Add(-600 * time.Second), t0.Add(-300 * time.Second), t0} // the last after the trigger
	d, err := retrypolicy.Decide(s, failures, 0, 0, t0)
	require.NoError(t, err)
	assert.Equal(t, 3, d.InWindow)
	st, _, err = Step(StatusError, d)
	require.NoError(t, err)
	assert.Equal(t, StatusFatal, st)
}

// TestLifecycleStateMachine drives random jobs through random events: every
// move is a row of the table, a finished status moves only by the trigger,
// stop and re-creation rows, and in ERROR the controller's step follows the
// decision on the job's failures, kept in a History.
func TestLifecycleStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		trigger := rapid.Bool().Draw(t, "on trigger")
		s := retrypolicy.Default()
		if rapid.Bool().Draw(t, "bounded") {
			s.Kind, s.MaxAttempts, s.Window = retrypolicy.Bounded, rapid.IntRange(1, 6).Draw(t, "max_attempts"), time.Hour
		}
		p, err := retrypolicy.Compile(s)
		require.NoError(t, err)
		h := retrypolicy.NewHistory(p)
		var status Status
		clock := t0
		t.Repeat(map[string]func(*rapid.T){
			"event": func(t *rapid.T) {
				e := rapid.SampledFrom(Events()).Draw(t, "event")
				next, err := Next(status, e, trigger)
				to, ok := want(status, e, trigger)
				if !ok {
					if err == nil {
						t.Fatalf("%s on %s (trigger %v) moved to %s", status, e, trigger, next)
					}
					return
				}
				if err != nil || next != to {
					t.Fatalf("%s on %s: got %s, %v; want %s", status, e, next, err, to)
				}
				if status.Finished() && e != EventTriggerFired && e != EventCreatedAgain && e != EventStopRequested {
					t.Fatalf("finished %s moved on %s", status, e)
				}
				if e == EventFailedRetryably {
					require.NoError(t, h.Record(clock, 0))
				}
				status = next
			},
			"tick": func(t *rapid.T) {
				clock = clock.Add(time.Duration(rapid.Int64Range(0, int64(2*time.Hour)).Draw(t, "elapsed")))
				if status != StatusError {
					return
				}
				d, err := h.Decide(0, clock)
				require.NoError(t, err)
				next, e, err := Step(status, d)
				require.NoError(t, err)
				switch {
				case d.Action == retrypolicy.Fatal && (next != StatusFatal || e != EventRetriesExhausted),
					d.Action == retrypolicy.RetryNow && (next != StatusScheduled || e != EventRetryDue),
					d.Action == retrypolicy.Wait && (next != StatusError || e != 0):
					t.Fatalf("decision %v but step moved to %s on %s", d.Action, next, e)
				}
				status = next
			},
		})
		if status != "" && !status.Known() {
			t.Fatalf("reached %q", status)
		}
	})
}
