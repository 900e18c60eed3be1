package queuekit

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/retrypolicy/retrypolicy/retry"
)

// DefaultPage is how many dead letters a read takes from its engine at a
// time unless told otherwise, and MaxPage the most: a read's memory is
// about a page of letters, whatever the number of dead letters.
const (
	DefaultPage = 256
	MaxPage     = 10_000
)

// Driver is what an engine (a JetStream dead-letter stream, River's
// database) gives the dead-letter kit: a page of dead letters read, one
// sent back, one removed. The kit's one loop ([DeadLetters.List],
// [DeadLetters.Count], [DeadLetters.Purge], [DeadLetters.Replay]) does
// the rest: filters, limits, pacing, progress and outcomes. A Driver is
// safe for concurrent use: two operators may run two replays on one set
// of dead letters at once.
type Driver interface {
	// Page reads the next page of dead letters after c.After, oldest
	// first, at most c.Size of them, and moves c on. The first page of a
	// read (c.Last zero) fixes c.Last, the last letter there when the read
	// began; no page goes past it, and none returns a letter given up
	// after c.Began, so that a letter given up again during a replay is
	// left to the next. It sets c.Done when no page is left after this
	// one, and c.Left to the letters not yet read (-1 when not known).
	Page(ctx context.Context, c *Cursor) ([]Letter, error)
	// Get returns the dead letter of id, in full.
	Get(ctx context.Context, id uint64) (Letter, error)
	// Send sends l back where it came from, as r says, only if it is still
	// there as it was read (the same letter, not one given up again under
	// its id), and under an identity that no other dead letter can share,
	// so that a letter sent twice (two replays at once, one interrupted
	// and run again) reaches its queue once. A letter no longer there is
	// an error wrapping ErrGone; one that may not go back (a forged
	// letter), one wrapping ErrRefused. When Sent.Removed is false, the
	// loop removes l after it is sent.
	Send(ctx context.Context, l Letter, r Route) (Sent, error)
	// Remove removes l, only if it is still there as it was read; one no
	// longer there is an error wrapping ErrGone.
	Remove(ctx context.Context, l Letter) error
}

// ErrGone is wrapped by the error of a Driver's Send or Remove for a dead
// letter that is no longer there (removed, or sent back, since it was
// read): the loop skips it and counts it, as no failure.
var ErrGone = errors.New("queuekit: the dead letter is no longer there")

// ErrRefused is wrapped by the error of a Driver's Send for a dead letter
// that may not go back where it claims to come from.
var ErrRefused = errors.New("queuekit: the dead letter may not be sent back")

// Mark returns an error that reads msg and wraps kind (ErrGone,
// ErrRefused): what a Driver returns for a letter gone or refused.
func Mark(kind error, msg string) error { return &marked{msg: msg, kind: kind} }

// marked is Mark's error.
type marked struct {
	msg  string
	kind error
}

func (e *marked) Error() string { return e.msg }
func (e *marked) Unwrap() error { return e.kind }

// Letter is a dead letter, as every engine has one.
type Letter struct {
	// ID is its id where it lies (its sequence in a dead-letter stream,
	// or its job's id), and GivenUp when it was given up (stored there, or
	// cancelled): the two tell it from any other dead letter, one given up
	// again under the same id or stored in a stream made again included.
	ID      uint64
	GivenUp time.Time
	// Reason is why it was given up, a retry.Reason's name ("" for none).
	Reason string
	// Origin is where it came from: the subject of a message, or the kind
	// of a job. Stream is the stream a message came from (JetStream's).
	Origin string
	Stream string
	// Failures counts its failed runs; Error is its last run's error;
	// WaitAsked, for the reason retry_after_too_long, the wait a server
	// asked.
	Failures  int
	Error     string
	WaitAsked time.Duration
	// Header is what it carries besides its payload: a message's headers,
	// or a job's metadata (under "metadata"). Payload is a message's data,
	// or a job's args; a read for counting may leave both out.
	Header  map[string][]string
	Payload []byte
}

// Cursor is where a read of the dead letters is: what a Driver's Page
// reads from and moves on.
type Cursor struct {
	// Size is the most letters a page, in [1, MaxPage].
	Size int
	// HeadersOnly lets a page leave payloads where they are (counting).
	HeadersOnly bool
	// After is the id of the last letter read, 0 before the first page,
	// and AfterGivenUp when it was given up (a driver that reads in that
	// order keys on both).
	After        uint64
	AfterGivenUp time.Time
	// Last is the id of the last letter there when the read began: 0
	// until the first page fixes it.
	Last uint64
	// Began is when the read began, by the loop's clock.
	Began time.Time
	// Left is how many letters are not yet read, -1 when not known; Done,
	// that no page is left.
	Left int64
	Done bool
}

// Route is where a replay sends dead letters back to.
type Route struct {
	// Stream is the stream the letters came from, and go back to:
	// JetStream's, named by the operator, since a dead letter's own
	// headers are not trusted to say where to publish. River's jobs go
	// back to their own queue: empty.
	Stream string
	// ResetAttempts starts each job anew, its earlier failures forgotten
	// (River's; a message always starts anew).
	ResetAttempts bool
}

// Sent is what a Driver's Send did.
type Sent struct {
	// ID is the id of what runs again: a message's sequence in its stream,
	// or the job's id (a new job's, when it starts anew).
	ID uint64
	// Duplicate says the queue had it already (a replay interrupted after
	// the send, run again): not sent twice.
	Duplicate bool
	// Removed says the letter left the dead letters as it went back (a
	// job made available again): nothing to remove.
	Removed bool
}

// Filter is the part of a filter of dead letters every engine has; an
// engine's filter adds its own criteria (a subject, a kind). The zero
// Filter selects none for Purge, which asks for All to purge every dead
// letter, and every one for the others.
type Filter struct {
	// Reasons, when given, selects the dead letters given up for any of
	// them.
	Reasons []retry.Reason
	// Since and Until, when not zero, select those given up at Since or
	// later, and before Until.
	Since, Until time.Time
	// Error, when given, is a substring of the last error, matched as it
	// is (case and all).
	Error string
	// All selects every dead letter, with no criterion: what Purge asks
	// for to purge them all.
	All bool
}

// Selector is a filter of dead letters: Filter, or an engine's that adds
// criteria to it.
type Selector interface {
	// Check returns why the filter is not one.
	Check() error
	// Match reports whether it selects l.
	Match(l Letter) bool
	// Criteria reports whether it has a criterion other than All.
	Criteria() bool
	// Common is its Filter part.
	Common() Filter
}

// Common returns f.
func (f Filter) Common() Filter { return f }

// Criteria reports whether f has a criterion other than All.
func (f Filter) Criteria() bool {
	return len(f.Reasons) > 0 || !f.Since.IsZero() || !f.Until.IsZero() || f.Error != ""
}

// Check returns why f is not a filter: a reason without a name, a range
// that ends before it starts, or All with a criterion.
func (f Filter) Check() error {
	for _, r := range f.Reasons {
		if _, err := r.MarshalText(); err != nil {
			return errors.New("queuekit: Filter.Reasons: " + err.Error())
		}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return errors.New("queuekit: Filter.Since and Filter.Until: the range ends before it starts")
	}
	if f.All && f.Criteria() {
		return errors.New("queuekit: Filter.All: selects every dead letter, so it takes no other criterion")
	}
	return nil
}

// Match reports whether f selects l.
func (f Filter) Match(l Letter) bool {
	if len(f.Reasons) > 0 && !f.hasReason(l.Reason) {
		return false
	}
	switch {
	case !f.Since.IsZero() && l.GivenUp.Before(f.Since),
		!f.Until.IsZero() && !l.GivenUp.Before(f.Until),
		f.Error != "" && !strings.Contains(l.Error, f.Error):
		return false
	}
	return true
}

// hasReason reports whether name is one of f's reasons.
func (f Filter) hasReason(name string) bool {
	for _, r := range f.Reasons {
		if r.String() == name {
			return true
		}
	}
	return false
}
