// Command retrypolicy-deadletter finds, shows, replays and purges the jobs a retry policy gave up.
//
// It reads the dead letters of either engine: a JetStream dead-letter
// stream that natsretry writes (--dead STREAM), or the jobs riverretry
// gave up in River's database (--sqlite FILE, --database-url
// postgres://…), and sends them back at a rate:
//
//	retrypolicy-deadletter count  WHERE [filters]
//	retrypolicy-deadletter list   WHERE [filters] [--json]
//	retrypolicy-deadletter show   WHERE ID [--json]
//	retrypolicy-deadletter replay WHERE [--stream JOBS | --reset-attempts] --rate N [--jitter D] [--limit N] [--dry-run] [filters]
//	retrypolicy-deadletter purge  WHERE (filters | --all)
//
// WHERE is --dead STREAM (with --nats URL, default $NATS_URL, else
// nats://127.0.0.1:4222, and --creds FILE), --sqlite FILE or
// --database-url URL. Filters: --reason NAME[,NAME…], --since TIME,
// --until TIME (RFC 3339, or a duration ago: 2h), --error TEXT; and
// JetStream's --subject PATTERN, --from-stream NAME, or River's --kind
// KIND[,KIND…]. Every argument is checked before the server is asked
// anything. Text read from the dead letters is printed with its control
// characters escaped.
//
// Exit status: 0 on success, 2 for invalid arguments, 1 when the server
// fails or a replay leaves a dead letter refused or failed.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
)

const (
	exitOK      = 0
	exitFailed  = 1
	exitInvalid = 2
)

const usage = `usage: retrypolicy-deadletter <command> (--dead STREAM | --sqlite FILE | --database-url URL) [options]

The dead letters of JetStream (natsretry's dead-letter stream, --dead) or
of River (the jobs riverretry gave up, --sqlite or --database-url).

commands:
  count    how many dead letters, by reason
  list     the dead letters, oldest first (--json: a line each)
  show ID  one dead letter in full (its sequence, or its job's id)
  replay   send dead letters back where they came from, at a rate
  purge    remove dead letters (a filter, or --all)

Run 'retrypolicy-deadletter <command> --help' for a command's options.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command, with its arguments and streams as parameters; it
// returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return exitInvalid
		}
		return exitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "retrypolicy-deadletter: unknown command %q\n\n%s", args[0], usage)
		return exitInvalid
	}
	o := newOptions(args[0], stderr)
	o.most = c.most
	if c.define != nil {
		c.define(o)
	}
	e, status := o.start(ctx, args[1:], stderr)
	if status >= 0 {
		return status
	}
	defer e.close()
	return c.run(&call{o: o, e: e, stdout: stdout, stderr: stderr}, ctx)
}

// command is one of the commands: how many arguments it takes after its
// flags, its own flags, and what it does with the dead letters.
type command struct {
	most   int
	define func(o *options)
	run    func(c *call, ctx context.Context) int
}

// commands are the commands, by name.
var commands = map[string]command{
	"count":  {run: (*call).count},
	"list":   {run: (*call).list},
	"show":   {most: 1, run: (*call).show},
	"replay": {define: defineReplay, run: (*call).replay},
	"purge":  {define: definePurge, run: (*call).purge},
}
