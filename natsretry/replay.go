package natsretry

import (
	"errors"
	"slices"
	"strings"
	"unicode"

	"github.com/nats-io/nats.go"

	"github.com/retrypolicy/retrypolicy/queuekit"
)

// replayCopy is the message a dead letter of subject, with header and
// data, is sent back as: its own headers, not the dead-letter ones nor
// JetStream's.
func replayCopy(subject string, header map[string][]string, data []byte) *nats.Msg {
	out := nats.NewMsg(subject)
	out.Data = data
	for name, values := range header {
		if !strings.HasPrefix(name, "Retrypolicy-") && !strings.HasPrefix(name, "Nats-") {
			out.Header[name] = slices.Clone(values)
		}
	}
	return out
}

// into is a stream dead letters are replayed into, and the subjects it
// captures.
type into struct {
	stream   string
	subjects []string
}

// refuses returns why a dead letter of subject, from the stream its
// header names (from), may not be replayed into i.
func (i into) refuses(subject, from string) error {
	stream, subjects := i.stream, i.subjects
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
// tokens that are not empty, without wildcards, white space or control
// characters.
func publishable(subject string) bool {
	for token := range strings.SplitSeq(subject, ".") {
		if token == "" || token == "*" || token == ">" || strings.ContainsFunc(token, unicode.IsSpace) || strings.ContainsFunc(token, unicode.IsControl) {
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
