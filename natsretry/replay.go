package natsretry

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/retrypolicy/retrypolicy/queuekit"
)

// Replay publishes a dead-letter message back to the subject it was
// given up on (HeaderSubject), with its payload and headers but the
// dead-letter ones, so that it starts anew: no failure of its earlier
// life counts. Read the message from the dead-letter stream
// (Stream.GetMsg), replay it, then delete it there (Stream.DeleteMsg).
//
// The operator names stream, the stream the message came from: a
// dead-letter stream takes what anyone may publish, so its headers are
// not trusted to say where to publish. Replay returns an error, and
// publishes nothing, for a message that is not a dead letter of this
// package, whose HeaderStream is not stream, whose subject stream does not
// capture (read from its configuration), or whose subject starts with $
// (the system's and JetStream's API) or _INBOX. (replies); and the server
// refuses the publication if the subject lands in another stream.
func Replay(ctx context.Context, js jetstream.JetStream, dead *jetstream.RawStreamMsg, stream string) (*jetstream.PubAck, error) {
	if dead == nil {
		return nil, errors.New("natsretry: Replay: no message")
	}
	subject := dead.Header.Get(HeaderSubject)
	if err := replayable(ctx, js, subject, dead.Header.Get(HeaderStream), stream); err != nil {
		return nil, errors.New("natsretry: Replay: " + err.Error())
	}
	return js.PublishMsg(ctx, replayCopy(subject, dead.Header, dead.Data), jetstream.WithExpectStream(stream))
}

// replayable returns why a dead letter of subject, from the stream its
// header names (from), may not be replayed into stream.
func replayable(ctx context.Context, js jetstream.JetStream, subject, from, stream string) error {
	// What the headers alone refuse, refused before the stream is read.
	if err := replayableInto(subject, from, stream, []string{">"}); err != nil {
		return err
	}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return errors.New("stream " + queuekit.Quote(stream) + ": " + err.Error())
	}
	return replayableInto(subject, from, stream, s.CachedInfo().Config.Subjects)
}

// replayableInto returns why a dead letter of subject, from the stream its
// header names (from), may not be replayed into stream, which captures
// subjects.
func replayableInto(subject, from, stream string, subjects []string) error {
	switch {
	case subject == "":
		return errors.New("the message has no " + HeaderSubject + " header: not a dead letter")
	case !publishable(subject):
		return errors.New("its subject " + queuekit.Quote(subject) + " is not one a message is published to")
	case strings.HasPrefix(subject, "$") || strings.HasPrefix(subject, "_INBOX."):
		return errors.New("its subject " + queuekit.Quote(subject) + " is a system, API or reply subject")
	case from != stream:
		return errors.New("it came from stream " + queuekit.Quote(from) + " (" + HeaderStream + "), not " + queuekit.Quote(stream))
	case !slices.ContainsFunc(subjects, func(pattern string) bool { return subjectMatches(pattern, subject) }):
		return errors.New("stream " + queuekit.Quote(stream) + " does not capture its subject " + queuekit.Quote(subject))
	}
	return nil
}

// publishable reports whether subject is one a message is published to:
// tokens that are not empty, without wildcards or white space.
func publishable(subject string) bool {
	for token := range strings.SplitSeq(subject, ".") {
		if token == "" || token == "*" || token == ">" || strings.ContainsAny(token, " \t\r\n") {
			return false
		}
	}
	return true
}

// subjectMatches reports whether pattern, a subject with wildcards (* one
// token, > one or more at the end), matches subject.
func subjectMatches(pattern, subject string) bool {
	p, s := strings.Split(pattern, "."), strings.Split(subject, ".")
	for i, token := range p {
		switch {
		case token == ">":
			return i == len(p)-1 && len(s) > i
		case i >= len(s):
			return false
		case token != "*" && token != s[i]:
			return false
		}
	}
	return len(p) == len(s)
}
