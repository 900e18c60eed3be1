package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/retrypolicy/retrypolicy/natsretry"
	"github.com/retrypolicy/retrypolicy/retry"
)

// options are what every command takes: the server, the dead-letter
// stream, the filters and the output's form.
type options struct {
	fs      *flag.FlagSet
	url     string
	creds   string
	dead    string
	page    int
	json    bool
	all     bool
	reasons string
	subject string
	from    string
	since   string
	until   string
	errText string
	now     func() time.Time
	// needFilter: the command refuses to run without a filter or --all.
	needFilter bool
}

// newOptions defines the flags every command takes on a flag set named
// name, writing its errors and help to stderr.
func newOptions(name string, stderr io.Writer) *options {
	o := &options{fs: flag.NewFlagSet("retrypolicy-deadletter "+name, flag.ContinueOnError), now: time.Now}
	o.fs.SetOutput(stderr)
	url := os.Getenv("NATS_URL")
	if url == "" {
		url = nats.DefaultURL
	}
	o.fs.StringVar(&o.url, "nats", url, "the NATS server's URL (default $NATS_URL)")
	o.fs.StringVar(&o.creds, "creds", "", "a NATS credentials file")
	o.fs.StringVar(&o.dead, "dead", "", "the dead-letter stream (required)")
	o.fs.IntVar(&o.page, "page", natsretry.DefaultPage, "dead letters read from the server at a time")
	o.fs.BoolVar(&o.json, "json", false, "JSON output, a line each")
	o.fs.StringVar(&o.reasons, "reason", "", "only dead letters given up for these reasons (NAME[,NAME…])")
	o.fs.StringVar(&o.subject, "subject", "", "only dead letters from subjects this pattern matches (* a token, > the rest)")
	o.fs.StringVar(&o.from, "from-stream", "", "only dead letters from this stream")
	o.fs.StringVar(&o.since, "since", "", "only dead letters given up at or after this time (RFC 3339, or a duration ago: 2h)")
	o.fs.StringVar(&o.until, "until", "", "only dead letters given up before this time (RFC 3339, or a duration ago)")
	o.fs.StringVar(&o.errText, "error", "", "only dead letters whose last error contains this text")
	return o
}

// parse parses args and checks the options; most is how many arguments
// may follow the flags.
func (o *options) parse(args []string, most int) error {
	if err := o.fs.Parse(args); err != nil {
		return err
	}
	switch {
	case o.fs.NArg() > most:
		return fmt.Errorf("unexpected argument %q", o.fs.Arg(most))
	case o.dead == "":
		return errors.New("--dead: the dead-letter stream is required")
	case o.page < 1 || o.page > 1<<16:
		return fmt.Errorf("--page: must be between 1 and 65536, got %d", o.page)
	case o.needFilter && !o.all && o.reasons+o.subject+o.from+o.since+o.until+o.errText == "":
		return errors.New("no filter: give one (--reason, --subject, --from-stream, --since, --until, --error), or --all to purge every dead letter")
	}
	return nil
}

// filter is the filter the options give.
func (o *options) filter() (natsretry.Filter, error) {
	f := natsretry.Filter{Subject: o.subject, Stream: o.from, Error: o.errText, All: o.all}
	if o.reasons != "" {
		for name := range strings.SplitSeq(o.reasons, ",") {
			var r retry.Reason
			if err := r.UnmarshalText([]byte(strings.TrimSpace(name))); err != nil || name == "" {
				return f, fmt.Errorf("--reason: %q is not a reason; one of %s", name, reasonNames())
			}
			f.Reasons = append(f.Reasons, r)
		}
	}
	var err error
	if f.Since, err = o.instant("since", o.since); err != nil {
		return f, err
	}
	if f.Until, err = o.instant("until", o.until); err != nil {
		return f, err
	}
	if err := f.Check(); err != nil {
		return f, errors.New(flagOf(err.Error()))
	}
	return f, nil
}

// flagOf names a Filter's field in an error as its flag.
func flagOf(msg string) string {
	return strings.NewReplacer("natsretry: ", "", "Filter.Reasons", "--reason", "Filter.Subject", "--subject",
		"Filter.Since", "--since", "Filter.Until", "--until", "Filter.All", "--all").Replace(msg)
}

// instant reads a time flag's value: RFC 3339, or a duration before now.
func (o *options) instant(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return o.now().Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("--%s: %q is neither an RFC 3339 time nor a duration ago (2h)", name, v)
}

// reasonNames lists the reasons a dead letter may have.
func reasonNames() string {
	var names []string
	for r := retry.Reason(1); ; r++ {
		b, err := r.MarshalText()
		if err != nil {
			return strings.Join(names, ", ")
		}
		names = append(names, string(b))
	}
}

// open connects to the server and opens the dead-letter stream; close
// ends the connection.
func (o *options) open(ctx context.Context) (d *natsretry.DeadLetters, js jetstream.JetStream, close func(), err error) {
	var opts []nats.Option
	if o.creds != "" {
		opts = append(opts, nats.UserCredentials(o.creds))
	}
	nc, err := nats.Connect(o.url, append(opts, nats.Name("retrypolicy-deadletter"))...)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--nats %s: %w", o.url, err)
	}
	js, err = jetstream.New(nc)
	if err == nil {
		d, err = natsretry.OpenDeadLetters(ctx, js, o.dead, o.page)
	}
	if err != nil {
		nc.Close()
		return nil, nil, nil, err
	}
	return d, js, nc.Close, nil
}
