package retrypolicy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// seedTable is the lifecycle's "What changes a job's status" table, read
// from the seed: "FROM event" → TO, with the rows about jobs on a trigger in
// triggerOnly.
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

func allFroms() []Status {
	return append([]Status{"", Status("PAUSED")}, Statuses()...)
}

// TestEveryStatusEventPair: a move is legal iff the seed's table has it,
// and it leads where the table says.
func TestEveryStatusEventPair(t *testing.T) {
	legal := 0
	for _, from := range allFroms() {
		for _, e := range Events() {
			for _, trigger := range []bool{false, true} {
				key := from.String() + " " + e.String()
				want, ok := seedTable[key]
				if w, tok := triggerOnly[key]; tok && trigger {
					want, ok = w, true
				}
				got, err := Next(from, e, trigger)
				if !ok {
					require.Error(t, err, "%s (trigger %v) should be illegal", key, trigger)
					assert.ErrorIs(t, err, ErrIllegalTransition)
					assert.Equal(t, from, got, "an illegal move leaves the status as it was")
					assert.Contains(t, err.Error(), from.String())
					assert.Contains(t, err.Error(), e.String())
					continue
				}
				legal++
				require.NoError(t, err, key)
				assert.Equal(t, want, got, key)
			}
		}
	}
	assert.Equal(t, 2*len(seedTable)+len(triggerOnly), legal)
}

func TestTransitionErrorMessages(t *testing.T) {
	_, err := Next(StatusCompleted, EventTriggerFired, false)
	assert.EqualError(t, err, "retrypolicy: no transition from COMPLETED on trigger_fired for a job without a trigger")
	_, err = Next(StatusRunning, EventRetryDue, true)
	assert.EqualError(t, err, "retrypolicy: no transition from RUNNING on retry_due")
	_, err = Next(Status("PAUSED"), EventWorkerStarted, false)
	assert.EqualError(t, err, "retrypolicy: no transition from PAUSED on worker_started")
	var te *TransitionError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, Status("PAUSED"), te.From)
	assert.Equal(t, EventWorkerStarted, te.Event)
}

func TestStatusNames(t *testing.T) {
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
	}
	assert.False(t, Status("").Active())
	assert.Equal(t, "(none)", Status("").String())
	_, err := Status("").MarshalText()
	assert.Error(t, err)
	assert.Equal(t, "created_again", EventCreatedAgain.String())
	assert.Equal(t, "Event(0)", Event(0).String())
	assert.Len(t, Events(), 12)
}

func TestUnknownStatusKeepsItsName(t *testing.T) {
	var job struct {
		Status Status `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(`{"status":"PAUSED"}`), &job))
	assert.False(t, job.Status.Known())
	assert.True(t, job.Status.Is(StatusUnknown))
	assert.True(t, job.Status.Active(), "UNKNOWN is not finished")
	out, err := json.Marshal(job)
	require.NoError(t, err)
	assert.JSONEq(t, `{"status":"PAUSED"}`, string(out), "encodes back to its own text")

	require.NoError(t, json.Unmarshal([]byte(`{"status":""}`), &job))
	assert.Equal(t, StatusUnknown, job.Status)
	require.NoError(t, json.Unmarshal([]byte(`{"status":"running"}`), &job))
	assert.False(t, job.Status.Known(), "names are case-sensitive")
}

// parentOracle restates SEMANTICS 3 for a parent, by counting.
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
		require.Equal(t, parentOracle(prefix), ParentStatus(prefix), "%v", prefix)
		if len(prefix) == 4 {
			return
		}
		for _, s := range options {
			walk(append(prefix[:len(prefix):len(prefix)], s))
		}
	}
	walk(nil)
	assert.Equal(t, 1+11+121+1331+14641, count)

	// The seed's cases, spelled out.
	assert.Equal(t, StatusRunning, ParentStatus([]Status{StatusCompleted, StatusRunning}))
	assert.Equal(t, StatusFatal, ParentStatus([]Status{StatusCompleted, StatusFatal, StatusStopped}))
	assert.Equal(t, StatusCompleted, ParentStatus([]Status{StatusCompleted, StatusStopped}))
	assert.Equal(t, StatusRunning, ParentStatus([]Status{StatusStopped, StatusError}), "a stopped child keeps the parent running no longer than its siblings")
	assert.Equal(t, StatusStopped, ParentStatus([]Status{StatusStopped, StatusStopped}))
	assert.Equal(t, StatusCompleted, ParentStatus(nil))
}

func TestStepForAJobInError(t *testing.T) {
	s := bounded(3, time.Hour)
	in := Input{Failures: failuresAt(-10, 0)}
	st, d, err := Step(s, StatusError, in, t0)
	require.NoError(t, err)
	assert.Equal(t, StatusError, st, "backoff not passed: still ERROR")
	assert.True(t, d.Due.Equal(t0.Add(2*time.Second)))

	st, _, err = Step(s, StatusError, in, d.Due)
	require.NoError(t, err)
	assert.Equal(t, StatusScheduled, st)

	in.Failures = failuresAt(-20, -10, 0)
	st, d, err = Step(s, StatusError, in, t0)
	require.NoError(t, err)
	assert.Equal(t, StatusFatal, st)
	assert.Equal(t, AttemptsExhausted, d.Reason)

	_, _, err = Step(s, StatusRunning, in, t0)
	assert.ErrorIs(t, err, ErrIllegalTransition)
	_, _, err = Step(s, StatusError, Input{}, t0)
	assert.ErrorIs(t, err, ErrNoFailures)
}

func TestTriggerWhileWaitingKeepsFailuresInTheWindow(t *testing.T) {
	// A job on a trigger waits in ERROR; its trigger fires: CANCELLED, then
	// scheduled at once. Its failures still count when it fails again.
	s := bounded(3, time.Hour)
	st, err := Next(StatusError, EventTriggerFired, true)
	require.NoError(t, err)
	require.Equal(t, StatusCancelled, st)
	st, err = Next(st, EventTriggerFired, true)
	require.NoError(t, err)
	require.Equal(t, StatusScheduled, st)

	failures := failuresAt(-600, -300) // before the trigger
	failures = append(failures, t0)    // the new run fails too
	st, d, err := Step(s, StatusError, Input{Failures: failures}, t0)
	require.NoError(t, err)
	assert.Equal(t, 3, d.Failures)
	assert.Equal(t, StatusFatal, st)
}

// TestLifecycleStateMachine drives random jobs through random events: every
// move it makes is a row of the seed's table, a finished status only moves
// through the trigger and re-creation rows, and in ERROR the controller's
// step agrees with the decision.
func TestLifecycleStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		trigger := rapid.Bool().Draw(t, "on trigger")
		s := genStrategy(t)
		var status Status
		var failures []time.Time
		clock := t0
		t.Repeat(map[string]func(*rapid.T){
			"event": func(t *rapid.T) {
				e := rapid.SampledFrom(Events()).Draw(t, "event")
				next, err := Next(status, e, trigger)
				key := status.String() + " " + e.String()
				want, ok := seedTable[key]
				if w, tok := triggerOnly[key]; tok && trigger {
					want, ok = w, true
				}
				if !ok {
					if err == nil {
						t.Fatalf("%s (trigger %v) moved to %s", key, trigger, next)
					}
					return
				}
				if err != nil || next != want {
					t.Fatalf("%s: got %s, %v; want %s", key, next, err, want)
				}
				if status.Finished() && e != EventTriggerFired && e != EventCreatedAgain && e != EventStopRequested {
					t.Fatalf("finished %s moved on %s", status, e)
				}
				if e == EventFailedRetryably {
					failures = append(failures, clock)
				}
				status = next
			},
			"tick": func(t *rapid.T) {
				clock = clock.Add(time.Duration(rapid.Int64Range(0, int64(2*time.Hour)).Draw(t, "elapsed")))
				if status != StatusError {
					return
				}
				in := Input{Failures: failures, Uptime: genUptime(t, "uptime")}
				next, d, err := Step(s, status, in, clock)
				require.NoError(t, err)
				want, err := Decide(s, in, clock)
				require.NoError(t, err)
				if d != want {
					t.Fatalf("step decided %+v, Decide %+v", d, want)
				}
				switch {
				case want.Action == Fatal && next != StatusFatal,
					want.Action == RetryNow && next != StatusScheduled,
					want.Action == Wait && next != StatusError:
					t.Fatalf("decision %v but step moved to %s", want.Action, next)
				}
				status = next
			},
		})
		if status != "" && !status.Known() {
			t.Fatalf("reached %q", status)
		}
	})
}

func TestStepNamesTheStatusItRefuses(t *testing.T) {
	_, _, err := Step(Default(), StatusScheduled, Input{Failures: failuresAt(0)}, t0)
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "SCHEDULED"), err.Error())
}
