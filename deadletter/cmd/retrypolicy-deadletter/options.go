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

	"github.com/retrypolicy/retrypolicy/queuekit"
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
	// most is how many arguments may follow the flags.
	most int
	// needFilter: the command refuses to run without a filter or --all.
	needFilter bool
	// replaying: the command is replay, whose own options are replay.
	replaying bool
	replay    replayArgs
	// filter and route are what parse made of the options.
	filter queuekit.Selector
	route  queuekit.Route
}

// replayArgs are replay's own options.
type replayArgs struct {
	rate          float64
	jitter        time.Duration
	limit         int
	dryRun        bool
	stream        string // JetStream's: where the messages go back to
	resetAttempts bool   // River's: a job anew, its failures forgotten
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
	o.fs.IntVar(&o.page, "page", queuekit.DefaultPage, "dead letters read at a time (0: the default)")
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

// parse parses args and checks every option, before anything is asked
// of a server; most is how many arguments may follow the flags. Errors of
// the command's own rules open with its name; those of a filter or a
// replay's options name their flag alone.
func (o *options) parse(args []string, most int) error {
	if err := o.fs.Parse(args); err != nil {
		return err
	}
	switch {
	case o.fs.NArg() > most:
		return fmt.Errorf("unexpected argument %q", o.fs.Arg(most))
	case o.needFilter && !o.all && o.reasons+o.subject+o.from+o.kind+o.since+o.until+o.errText == "":
		return errors.New("no filter: give one (--reason, --since, --until, --error, and --subject, --from-stream or --kind), or --all to purge every dead letter")
	}
	if err := queuekit.CheckPage("--page", o.page); err != nil {
		return err
	}
	if err := o.checkEngine(); err != nil {
		return err
	}
	if o.replaying {
		r := o.replay
		err := (queuekit.ReplayOptions{Rate: r.rate, Jitter: r.jitter, Limit: r.limit}).Check("ReplayOptions.")
		if err != nil {
			return errors.New(flagOf(err.Error()))
		}
	}
	c, err := o.common()
	if err != nil {
		return invalid{err}
	}
	if o.river() {
		o.filter, o.route, err = o.riverFilter(c)
	} else {
		o.filter, o.route, err = o.natsFilter(c)
	}
	if err != nil {
		return invalid{err}
	}
	return nil
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

// common reads the filter every engine takes.
func (o *options) common() (queuekit.Filter, error) {
	c := queuekit.Filter{Error: o.errText, All: o.all}
	if o.reasons != "" {
		for name := range strings.SplitSeq(o.reasons, ",") {
			var r retry.Reason
			if err := r.UnmarshalText([]byte(strings.TrimSpace(name))); err != nil || strings.TrimSpace(name) == "" {
				return c, fmt.Errorf("--reason: %q is not a reason; one of %s", name, reasonNames())
			}
			c.Reasons = append(c.Reasons, r)
		}
	}
	var err error
	if c.Since, err = o.instant("since", o.since); err != nil {
		return c, err
	}
	if c.Until, err = o.instant("until", o.until); err != nil {
		return c, err
	}
	return c, nil
}

// flagOf names the field of a Filter or of ReplayOptions in the error of
// its check as the flag that sets it.
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

// open opens the dead letters the options name, with their filter.
func (o *options) open(ctx context.Context) (*engine, error) {
	var e *engine
	var err error
	if o.river() {
		e, err = openRiver(ctx, o)
	} else {
		e, err = openNATS(ctx, o)
	}
	if err != nil {
		return nil, err
	}
	e.filter, e.route = o.filter, o.route
	e.letters.Page = o.page
	return e, nil
}
