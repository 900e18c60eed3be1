package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/retrypolicy/retrypolicy/natsretry"
	"github.com/retrypolicy/retrypolicy/queuekit"
)

// natsFilter is the filter of a JetStream dead-letter stream the options
// give, and the route of a replay, checked.
func (o *options) natsFilter(c queuekit.Filter) (queuekit.Selector, queuekit.Route, error) {
	f := natsretry.Filter{Filter: c, Subject: o.subject, Stream: o.from}
	if err := f.Check(); err != nil {
		return nil, queuekit.Route{}, errors.New(flagOf(err.Error()))
	}
	r := o.replay
	switch {
	case !o.replaying:
	case r.stream == "":
		return nil, queuekit.Route{}, errors.New("--stream: the stream the dead letters came from is required (a dead letter's own headers are not trusted to say where to publish)")
	case r.resetAttempts:
		return nil, queuekit.Route{}, errors.New("--reset-attempts: applies to River's jobs; a replayed message always starts anew")
	}
	return f, queuekit.Route{Stream: r.stream}, nil
}

// openNATS connects to the server and opens the dead-letter stream the
// options name.
func openNATS(ctx context.Context, o *options) (*engine, error) {
	opts := []nats.Option{nats.Name("retrypolicy-deadletter")}
	if o.creds != "" {
		opts = append(opts, nats.UserCredentials(o.creds))
	}
	nc, err := nats.Connect(o.url, opts...)
	if err != nil {
		return nil, fmt.Errorf("--nats %s: %w", queuekit.Quote(o.url), err)
	}
	js, err := jetstream.New(nc)
	var d *natsretry.DeadLetters
	if err == nil {
		d, err = natsretry.OpenDeadLetters(ctx, js, o.dead)
	}
	if err != nil {
		nc.Close()
		return nil, errors.New(strings.TrimPrefix(err.Error(), "natsretry: "))
	}
	return &engine{letters: queuekit.DeadLetters{Driver: d, Page: o.page}, close: nc.Close}, nil
}
