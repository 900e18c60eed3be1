package natsretry

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/retrypolicy/retrypolicy/queuekit"
)

// DeadLetters is a dead-letter stream (the stream that captures a
// Policy's Config.DeadLetter subject) as the dead-letter kit reads it: a
// queuekit.Driver. queuekit.DeadLetters lists, counts, purges and replays
// its dead letters; each letter's ID is its sequence in the stream, and
// GivenUp when it was stored there. A DeadLetters is safe for concurrent
// use.
//
// A replay sends a dead letter back only if it is still in the stream as
// it was read (read again at the send), to the subject it was given up on
// (HeaderSubject), with its payload and its own headers (not the
// dead-letter ones), so that it starts anew, under a message id made of
// the dead-letter stream's name, the letter's sequence and the time it was
// stored: a replay interrupted between a send and its removal, run again
// within the work stream's duplicate window (2 minutes by default), sends
// nothing twice, and a letter of a dead-letter stream made again (its
// sequences restart) is never taken for an older one. A letter is sent
// only where it came from: to the stream the operator names
// (queuekit.Route.Stream), when its HeaderStream is that stream, its
// subject one that stream captures, and not one starting with $ (the
// system's and JetStream's API) or _INBOX. (replies); any other is refused
// and left in place.
type DeadLetters struct {
	js     jetstream.JetStream
	stream jetstream.Stream
	name   string

	mu      sync.Mutex
	targets map[string]target // the streams letters go back to, by name
}

// target is a stream letters go back to, as read at a time.
type target struct {
	subjects []string
	read     time.Time
}

// targetFresh is how long a target stream's subjects are kept before
// they are read again.
const targetFresh = 30 * time.Second

// OpenDeadLetters opens the dead-letter stream named stream.
func OpenDeadLetters(ctx context.Context, js jetstream.JetStream, stream string) (*DeadLetters, error) {
	if js == nil {
		return nil, errors.New("natsretry: OpenDeadLetters: no JetStream context")
	}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, errors.New("natsretry: OpenDeadLetters: stream " + queuekit.Quote(stream) + ": " + err.Error())
	}
	return &DeadLetters{js: js, stream: s, name: stream, targets: map[string]target{}}, nil
}

// Filter selects a dead-letter stream's letters: those that match every
// criterion given, queuekit.Filter's and its own.
type Filter struct {
	queuekit.Filter
	// Subject, when given, is a subject pattern (* a token, > the rest)
	// that the subject a dead letter came from matches.
	Subject string
	// Stream, when given, is the stream a dead letter came from.
	Stream string
}

// Criteria reports whether f has a criterion other than All.
func (f Filter) Criteria() bool {
	return f.Filter.Criteria() || f.Subject != "" || f.Stream != ""
}

// Check returns why f is not a filter: queuekit.Filter's reasons, a
// subject pattern that is not one, or All with a criterion.
func (f Filter) Check() error {
	if err := f.Filter.Check(); err != nil {
		return errors.New("natsretry: " + strings.TrimPrefix(err.Error(), "queuekit: "))
	}
	if f.Subject != "" && !subjectPattern(f.Subject) {
		return errors.New("natsretry: Filter.Subject: " + queuekit.Quote(f.Subject) + " is not a subject pattern")
	}
	if f.All && f.Criteria() {
		return errors.New("natsretry: Filter.All: selects every dead letter, so it takes no other criterion")
	}
	return nil
}

// Match reports whether f selects l.
func (f Filter) Match(l queuekit.Letter) bool {
	return f.Filter.Match(l) && (f.Subject == "" || subjectMatches(f.Subject, l.Origin)) && (f.Stream == "" || l.Stream == f.Stream)
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

// Get returns the dead letter at seq in the dead-letter stream, in full;
// an error wrapping queuekit.ErrGone when there is none.
func (d *DeadLetters) Get(ctx context.Context, seq uint64) (queuekit.Letter, error) {
	m, err := d.stream.GetMsg(ctx, seq)
	name := "natsretry: dead letter " + strconv.FormatUint(seq, 10)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return queuekit.Letter{}, queuekit.Mark(queuekit.ErrGone, name+": not found")
	case err != nil:
		return queuekit.Letter{}, errors.New(name + ": " + err.Error())
	}
	return letterOf(m), nil
}

// still returns l as it is in the stream now, or an error wrapping
// queuekit.ErrGone when it is no longer there as it was read.
func (d *DeadLetters) still(ctx context.Context, l queuekit.Letter) (queuekit.Letter, error) {
	now, err := d.Get(ctx, l.ID)
	if err == nil && !now.GivenUp.Equal(l.GivenUp) {
		err = queuekit.Mark(queuekit.ErrGone, "natsretry: dead letter "+strconv.FormatUint(l.ID, 10)+": another letter since")
	}
	return now, err
}

// Send sends l back to the stream r names, if it is still there as it was
// read and may go there (DeadLetters).
func (d *DeadLetters) Send(ctx context.Context, l queuekit.Letter, r queuekit.Route) (queuekit.Sent, error) {
	now, err := d.still(ctx, l)
	if err != nil {
		return queuekit.Sent{}, err
	}
	subjects, err := d.subjects(ctx, r.Stream)
	if err != nil {
		return queuekit.Sent{}, err
	}
	if err := (into{stream: r.Stream, subjects: subjects}).refuses(now.Origin, now.Stream); err != nil {
		return queuekit.Sent{}, queuekit.Mark(queuekit.ErrRefused, "natsretry: dead letter "+strconv.FormatUint(l.ID, 10)+": "+err.Error())
	}
	id := "retrypolicy.replay." + d.name + "." + strconv.FormatUint(l.ID, 10) + "." + strconv.FormatInt(now.GivenUp.UnixNano(), 10)
	ack, err := d.js.PublishMsg(ctx, replayCopy(now.Origin, now.Header, now.Payload), jetstream.WithExpectStream(r.Stream), jetstream.WithMsgID(id))
	if err != nil {
		return queuekit.Sent{}, errors.New("natsretry: dead letter " + strconv.FormatUint(l.ID, 10) + ": publish: " + err.Error())
	}
	return queuekit.Sent{ID: ack.Sequence, Duplicate: ack.Duplicate}, nil
}

// subjects returns the subjects the stream named captures, read again
// when older than targetFresh.
func (d *DeadLetters) subjects(ctx context.Context, name string) ([]string, error) {
	if name == "" {
		return nil, errors.New("natsretry: Route.Stream: the stream the dead letters came from is required")
	}
	d.mu.Lock()
	t, ok := d.targets[name]
	d.mu.Unlock()
	if ok && time.Since(t.read) < targetFresh {
		return t.subjects, nil
	}
	s, err := d.js.Stream(ctx, name)
	if err != nil {
		return nil, errors.New("natsretry: stream " + queuekit.Quote(name) + ": " + err.Error())
	}
	t = target{subjects: s.CachedInfo().Config.Subjects, read: time.Now()}
	d.mu.Lock()
	d.targets[name] = t
	d.mu.Unlock()
	return t.subjects, nil
}

// Remove deletes l from the dead-letter stream, if it is still there as
// it was read; one no longer there, whatever the server answers, is an
// error wrapping queuekit.ErrGone.
func (d *DeadLetters) Remove(ctx context.Context, l queuekit.Letter) error {
	if _, err := d.still(ctx, l); err != nil {
		return err
	}
	err := d.stream.DeleteMsg(ctx, l.ID)
	if err == nil {
		return nil
	}
	if _, again := d.still(ctx, l); errors.Is(again, queuekit.ErrGone) {
		return again // deleted meanwhile: the server's answer for it varies
	}
	return errors.New("natsretry: dead letter " + strconv.FormatUint(l.ID, 10) + ": removing: " + err.Error())
}

// letterOf reads a dead letter from m, a message of the dead-letter
// stream.
func letterOf(m *jetstream.RawStreamMsg) queuekit.Letter {
	h := m.Header
	l := queuekit.Letter{ID: m.Sequence, GivenUp: m.Time, Header: h, Payload: m.Data,
		Reason: h.Get(HeaderReason), Origin: h.Get(HeaderSubject), Stream: h.Get(HeaderStream), Error: h.Get(HeaderError)}
	l.Failures, _ = strconv.Atoi(h.Get(HeaderFailures))
	if secs, err := strconv.ParseFloat(h.Get(HeaderWaitAsked), 64); err == nil && secs >= 0 && secs < 1e10 {
		l.WaitAsked = time.Duration(secs * float64(time.Second))
	}
	return l
}
