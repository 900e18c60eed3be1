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

	"github.com/retrypolicy/retrypolicy/retry"
)

// options are what every command takes: where the dead letters are, the
// filters and the output's form.
type options struct {
	fs *flag.FlagSet
	// JetStream's: the server and the dead-letter stream.
	url, creds, dead string
	// River's: its database.
	sqlite, databaseURL string
	page                int
	json, all           bool
	reasons             string
	subject, from       string // JetStream's
	kind                string // River's
	since, until        string
	errText             string
	now                 func() time.Time
	// needFilter: the command refuses to run without a filter or --all.
	needFilter bool
	// replay is replay's own options.
	replay replayArgs
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
	o.fs.StringVar(&o.dead, "dead", "", "JetStream: the dead-letter stream")
	o.fs.StringVar(&o.url, "nats", url, "JetStream: the NATS server's URL (default $NATS_URL)")
	o.fs.StringVar(&o.creds, "creds", "", "JetStream: a NATS credentials file")
	o.fs.StringVar(&o.sqlite, "sqlite", "", "River: its SQLite database file")
	o.fs.StringVar(&o.databaseURL, "database-url", "", "River: its PostgreSQL database (postgres://…)")
	o.fs.IntVar(&o.page, "page", 256, "dead letters read at a time")
	o.fs.BoolVar(&o.json, "json", false, "JSON output, a line each")
	o.fs.StringVar(&o.reasons, "reason", "", "only those given up for these reasons (NAME[,NAME…])")
	o.fs.StringVar(&o.subject, "subject", "", "JetStream: only those from subjects this pattern matches (* a token, > the rest)")
	o.fs.StringVar(&o.from, "from-stream", "", "JetStream: only those from this stream")
	o.fs.StringVar(&o.kind, "kind", "", "River: only jobs of these kinds (KIND[,KIND…])")
	o.fs.StringVar(&o.since, "since", "", "only those given up at or after this time (RFC 3339, or a duration ago: 2h)")
	o.fs.StringVar(&o.until, "until", "", "only those given up before this time (RFC 3339, or a duration ago)")
	o.fs.StringVar(&o.errText, "error", "", "only those whose last error contains this text")
	return o
}

// river reports whether the dead letters are River's jobs.
func (o *options) river() bool { return o.sqlite != "" || o.databaseURL != "" }

// parse parses args and checks the options; most is how many arguments
// may follow the flags.
func (o *options) parse(args []string, most int) error {
	if err := o.fs.Parse(args); err != nil {
		return err
	}
	switch {
	case o.fs.NArg() > most:
		return fmt.Errorf("unexpected argument %q", o.fs.Arg(most))
	case o.page < 1 || o.page > 10_000:
		return fmt.Errorf("--page: must be between 1 and 10000, got %d", o.page)
	case o.needFilter && !o.all && o.reasons+o.subject+o.from+o.kind+o.since+o.until+o.errText == "":
		return errors.New("no filter: give one (--reason, --since, --until, --error, and --subject, --from-stream or --kind), or --all to purge every dead letter")
	}
	return o.checkEngine()
}

// checkEngine returns why the options do not name one place of dead
// letters, or name a filter of another's.
func (o *options) checkEngine() error {
	var named []string
	for _, f := range []struct{ name, value string }{{"--dead", o.dead}, {"--sqlite", o.sqlite}, {"--database-url", o.databaseURL}} {
		if f.value != "" {
			named = append(named, f.name)
		}
	}
	switch {
	case len(named) == 0:
		return errors.New("--dead, --sqlite or --database-url: name the dead letters: a JetStream dead-letter stream (--dead), or River's database (--sqlite FILE, --database-url postgres://…)")
	case len(named) > 1:
		return errors.New(strings.Join(named, " and ") + ": choose one")
	case o.river() && o.subject != "":
		return errors.New("--subject: applies to JetStream's dead letters (--dead); River's jobs take --kind")
	case o.river() && o.from != "":
		return errors.New("--from-stream: applies to JetStream's dead letters (--dead)")
	case !o.river() && o.kind != "":
		return errors.New("--kind: applies to River's jobs (--sqlite, --database-url); JetStream's dead letters take --subject")
	}
	return nil
}

// common is the filter every engine takes, read from the options.
type common struct {
	reasons      []retry.Reason
	since, until time.Time
	errText      string
	all          bool
}

// common reads the filter every engine takes.
func (o *options) common() (common, error) {
	c := common{errText: o.errText, all: o.all}
	if o.reasons != "" {
		for name := range strings.SplitSeq(o.reasons, ",") {
			var r retry.Reason
			if err := r.UnmarshalText([]byte(strings.TrimSpace(name))); err != nil || strings.TrimSpace(name) == "" {
				return c, fmt.Errorf("--reason: %q is not a reason; one of %s", name, reasonNames())
			}
			c.reasons = append(c.reasons, r)
		}
	}
	var err error
	if c.since, err = o.instant("since", o.since); err != nil {
		return c, err
	}
	if c.until, err = o.instant("until", o.until); err != nil {
		return c, err
	}
	return c, nil
}

// flagOf names a Filter's field in an error as its flag.
func flagOf(msg string) string {
	return strings.NewReplacer("natsretry: ", "", "riverretry: ", "", "Filter.Reasons", "--reason", "Filter.Subject", "--subject",
		"Filter.Kinds", "--kind", "Filter.Since", "--since", "Filter.Until", "--until", "Filter.All", "--all",
		"ReplayOptions.Rate", "--rate", "ReplayOptions.Jitter", "--jitter", "ReplayOptions.Limit", "--limit",
		"ReplayOptions.Stream", "--stream").Replace(msg)
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

// open opens the source of dead letters the options name, with their
// filter.
func (o *options) open(ctx context.Context) (source, error) {
	c, err := o.common()
	if err != nil {
		return nil, invalid{err}
	}
	if o.river() {
		return openRiver(ctx, o, c)
	}
	return openNATS(ctx, o, c)
}
