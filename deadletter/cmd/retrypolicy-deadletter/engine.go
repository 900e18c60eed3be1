package main

import (
	"time"

	"github.com/retrypolicy/retrypolicy/queuekit"
)

// engine is where the dead letters are, as the kit reads them: a
// JetStream dead-letter stream's driver or River's, with the filter and
// the route the options give.
type engine struct {
	letters queuekit.DeadLetters
	filter  queuekit.Selector
	route   queuekit.Route
	// river says the letters are River's jobs: a row then has a kind, not
	// a subject and a stream.
	river bool
	close func()
}

// row is a dead letter as the command prints it.
type row struct {
	// ID is its sequence in the dead-letter stream, or its job's id.
	ID      uint64    `json:"id"`
	GivenUp time.Time `json:"given_up_at"`
	Reason  string    `json:"reason"`
	// Subject and Stream are where a JetStream message came from; Kind is
	// a River job's.
	Subject string `json:"subject,omitempty"`
	Stream  string `json:"stream,omitempty"`
	Kind    string `json:"kind,omitempty"`
	// Failures are a message's failed runs, or a job's attempts.
	Failures      int     `json:"failures"`
	Error         string  `json:"error"`
	WaitAskedSecs float64 `json:"wait_asked_secs,omitempty"`
}

// full is a dead letter with what it carries: a message's headers and
// payload, or a job's metadata and args.
type full struct {
	row
	Header  map[string][]string `json:"header,omitempty"`
	Payload []byte              `json:"payload"`
}

// rowOf is l as printed.
func (e *engine) rowOf(l queuekit.Letter) row {
	r := row{ID: l.ID, GivenUp: l.GivenUp.UTC(), Reason: l.Reason, Failures: l.Failures, Error: l.Error, WaitAskedSecs: l.WaitAsked.Seconds()}
	if e.river {
		r.Kind = l.Origin
	} else {
		r.Subject, r.Stream = l.Origin, l.Stream
	}
	return r
}

// from is where a dead letter came from: its subject, or its job's kind.
func from(r row) string {
	if r.Kind != "" {
		return r.Kind
	}
	return r.Subject
}

// invalid is an error in the command's arguments (exit status 2).
type invalid struct{ error }
