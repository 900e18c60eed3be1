package main

import (
	"context"
	"iter"
	"time"
)

// source is where dead letters are, with the filter the options give:
// a JetStream dead-letter stream, or River's database.
type source interface {
	// count returns how many the filter selects, by reason.
	count(ctx context.Context) (map[string]int, error)
	// list returns those the filter selects, oldest first.
	list(ctx context.Context) iter.Seq2[row, error]
	// show returns one in full, by its id.
	show(ctx context.Context, id uint64) (full, error)
	// replay sends those the filter selects back, as r says.
	replay(ctx context.Context, r replayArgs) (replayReport, error)
	// purge removes those the filter selects, and returns how many.
	purge(ctx context.Context) (int, error)
	close()
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

// replayArgs are replay's options.
type replayArgs struct {
	rate          float64
	jitter        time.Duration
	limit         int
	dryRun        bool
	stream        string // JetStream's: where the messages go back to
	resetAttempts bool   // River's: a job anew, its failures forgotten
	each          func(replayed)
	progress      func(replayProgress)
}

// replayed is what became of one dead letter.
type replayed struct {
	row
	Outcome string `json:"outcome"`
	// SentID is the message's sequence in its stream, or the id of the
	// job that runs again.
	SentID uint64 `json:"sent_id,omitempty"`
	Why    string `json:"why,omitempty"`
}

// replayProgress is how a replay goes.
type replayProgress struct {
	replayed, refused, failed int
	left                      int64 // -1 when not known
	rate                      float64
	elapsed                   time.Duration
}

// replayReport is what a replay did.
type replayReport struct {
	matched, replayed, duplicates, refused, failed, would int
	elapsed                                               time.Duration
	// window is the time within which a replay interrupted, run again,
	// sends nothing twice; 0 when a transaction makes it so.
	window time.Duration
}

// invalid is an error in the command's arguments (exit status 2).
type invalid struct{ error }
