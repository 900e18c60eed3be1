package natsretry

import (
	"context"
	"errors"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/retrypolicy/retrypolicy/queuekit"
	"github.com/retrypolicy/retrypolicy/retry"
)

// DefaultPage is how many dead letters DeadLetters reads from the server
// at a time, unless told otherwise: its memory is about this many
// messages, whatever the size of the stream.
const DefaultPage = 256

// DeadLetters is an operator's view of a dead-letter stream: its dead
// letters listed, counted and shown by a Filter, replayed to the stream
// they came from at a rate, and purged. It reads the stream with an
// ordered consumer of its own, a page at a time, so that its memory is a
// function of the page, not of the stream; a filter that matches nothing
// reads the stream once. A DeadLetters is safe for concurrent use.
type DeadLetters struct {
	js     jetstream.JetStream
	stream jetstream.Stream
	page   int
	clock  pacingClock
	// afterPublish, when set, is called between a replay's publish and the
	// dead letter's removal (tests interrupt a replay there).
	afterPublish func()
}

// OpenDeadLetters opens the dead-letter stream named stream (the stream
// that captures a Policy's Config.DeadLetter subject) for an operator,
// reading page dead letters at a time (DefaultPage when page is 0).
func OpenDeadLetters(ctx context.Context, js jetstream.JetStream, stream string, page int) (*DeadLetters, error) {
	switch {
	case js == nil:
		return nil, errors.New("natsretry: OpenDeadLetters: no JetStream context")
	case page < 0 || page > 1<<16:
		return nil, errors.New("natsretry: OpenDeadLetters: page must be between 0 and 65536, got " + strconv.Itoa(page))
	case page == 0:
		page = DefaultPage
	}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, errors.New("natsretry: OpenDeadLetters: stream " + queuekit.Quote(stream) + ": " + err.Error())
	}
	return &DeadLetters{js: js, stream: s, page: page}, nil
}

// DeadLetter is one message of a dead-letter stream, as the policy that
// gave it up wrote it. The fields read from the policy's headers are empty
// where a copy too large for the stream shed them, or where the message
// is not a dead letter of this package.
type DeadLetter struct {
	// Sequence is its sequence in the dead-letter stream, and Time when it
	// was stored there: when it was given up.
	Sequence uint64
	Time     time.Time
	// Reason is why it was given up (HeaderReason), a retry.Reason's name.
	Reason string
	// Subject, Stream and OriginSequence are where it came from
	// (HeaderSubject, HeaderStream, HeaderSequence). They are what its
	// publisher wrote: a dead-letter stream takes what anyone may publish.
	Subject        string
	Stream         string
	OriginSequence uint64
	// Failures counts its failed runs (HeaderFailures), Error is its last
	// run's error (HeaderError), and WaitAsked, for the reason
	// retry_after_too_long, the wait a server asked (HeaderWaitAsked).
	Failures  int
	Error     string
	WaitAsked time.Duration
	// Header is every header it was stored with; Data its payload.
	Header nats.Header
	Data   []byte
}

// Filter selects dead letters: those that match every criterion given. The
// zero Filter selects none for Purge, which asks for All to purge every
// dead letter, and every one for the others.
type Filter struct {
	// Reasons, when given, selects the dead letters given up for any of
	// them.
	Reasons []retry.Reason
	// Subject, when given, is a subject pattern (* a token, > the rest)
	// that the subject a dead letter came from matches.
	Subject string
	// Stream, when given, is the stream a dead letter came from.
	Stream string
	// Since and Until, when not zero, select the dead letters stored at
	// Since or later, and before Until.
	Since, Until time.Time
	// Error, when given, is a substring of the dead letter's last error,
	// matched as it is (case and all).
	Error string
	// All selects every dead letter, with no criterion: what Purge asks
	// for to purge them all.
	All bool
}

// criteria reports whether f has a criterion other than All.
func (f Filter) criteria() bool {
	return len(f.Reasons) > 0 || f.Subject != "" || f.Stream != "" || !f.Since.IsZero() || !f.Until.IsZero() || f.Error != ""
}

// Check returns why f is not a filter: a reason without a name, a subject
// pattern that is not one, a range that ends before it starts, or All with
// a criterion.
func (f Filter) Check() error {
	for _, r := range f.Reasons {
		if _, err := r.MarshalText(); err != nil {
			return errors.New("natsretry: Filter.Reasons: " + err.Error())
		}
	}
	if f.Subject != "" && !subjectPattern(f.Subject) {
		return errors.New("natsretry: Filter.Subject: " + queuekit.Quote(f.Subject) + " is not a subject pattern")
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return errors.New("natsretry: Filter.Since and Filter.Until: the range ends before it starts")
	}
	if f.All && f.criteria() {
		return errors.New("natsretry: Filter.All: selects every dead letter, so it takes no other criterion")
	}
	return nil
}

// subjectPattern reports whether s is a subject pattern: tokens that are
// not empty, with > only last.
func subjectPattern(s string) bool {
	tokens := strings.Split(s, ".")
	for i, t := range tokens {
		if t == "" || strings.ContainsAny(t, " \t\r\n") || (t == ">" && i != len(tokens)-1) {
			return false
		}
	}
	return true
}

// Match reports whether f selects d.
func (f Filter) Match(d DeadLetter) bool {
	if len(f.Reasons) > 0 && !f.hasReason(d.Reason) {
		return false
	}
	switch {
	case f.Subject != "" && !subjectMatches(f.Subject, d.Subject),
		f.Stream != "" && d.Stream != f.Stream,
		!f.Since.IsZero() && d.Time.Before(f.Since),
		!f.Until.IsZero() && !d.Time.Before(f.Until),
		f.Error != "" && !strings.Contains(d.Error, f.Error):
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

// List returns the dead letters f selects, oldest first, as the stream
// held them when the listing began (dead letters stored since are left to
// the next). It stops at the first error, which it yields.
func (d *DeadLetters) List(ctx context.Context, f Filter) iter.Seq2[DeadLetter, error] {
	return func(yield func(DeadLetter, error) bool) {
		if err := f.Check(); err != nil {
			yield(DeadLetter{}, err)
			return
		}
		for dl, err := range d.read(ctx, f, false) {
			if err != nil || f.Match(dl.DeadLetter) {
				if !yield(dl.DeadLetter, err) || err != nil {
					return
				}
			}
		}
	}
}

// Count returns how many dead letters f selects, by reason (a reason's
// name; "" for a dead letter without one). It reads the headers only.
func (d *DeadLetters) Count(ctx context.Context, f Filter) (map[string]int, error) {
	if err := f.Check(); err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for dl, err := range d.read(ctx, f, true) {
		if err != nil {
			return counts, err
		}
		if f.Match(dl.DeadLetter) {
			counts[dl.Reason]++
		}
	}
	return counts, nil
}

// Get returns the dead letter at seq in the dead-letter stream, in full.
func (d *DeadLetters) Get(ctx context.Context, seq uint64) (DeadLetter, error) {
	m, err := d.stream.GetMsg(ctx, seq)
	if err != nil {
		return DeadLetter{}, errors.New("natsretry: dead letter " + strconv.FormatUint(seq, 10) + ": " + err.Error())
	}
	return deadLetterOf(m.Sequence, m.Time, m.Header, m.Data), nil
}

// Purge removes the dead letters f selects, and returns how many. A
// Filter with no criterion is refused unless it says All; All removes
// every dead letter the stream held when the purge began, in one request.
func (d *DeadLetters) Purge(ctx context.Context, f Filter) (int, error) {
	if err := f.Check(); err != nil {
		return 0, err
	}
	if !f.All && !f.criteria() {
		return 0, errors.New("natsretry: Purge: no filter: give a criterion, or Filter.All to purge every dead letter")
	}
	if f.All {
		info, err := d.stream.Info(ctx)
		if err != nil {
			return 0, errors.New("natsretry: Purge: " + err.Error())
		}
		if info.State.Msgs == 0 {
			return 0, nil
		}
		if err := d.stream.Purge(ctx, jetstream.WithPurgeSequence(info.State.LastSeq+1)); err != nil {
			return 0, errors.New("natsretry: Purge: " + err.Error())
		}
		return int(info.State.Msgs), nil
	}
	n := 0
	for dl, err := range d.read(ctx, f, true) {
		if err != nil {
			return n, err
		}
		if !f.Match(dl.DeadLetter) {
			continue
		}
		if err := d.stream.DeleteMsg(ctx, dl.Sequence); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return n, errors.New("natsretry: Purge: dead letter " + strconv.FormatUint(dl.Sequence, 10) + ": " + err.Error())
		}
		n++
	}
	return n, nil
}

// read is a dead letter as read, with how many are left after it.
type read struct {
	DeadLetter
	left uint64
}
