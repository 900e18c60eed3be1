// Command retrypolicy checks, decides, plans and simulates retry strategies from the shell.
//
// It validates retry strategy descriptors, builds them from
// ampctl-style flags, decides what to do with failed jobs (one at a time or
// as a stream of JSON Lines), plans what a strategy does to a job that
// keeps failing, with a timeline picture, lints a strategy for traps, and
// simulates a fleet of jobs under several strategies side by side; serve
// offers all of it over HTTP, with a page for choosing a strategy. Every rule it applies is the
// library's.
//
// Usage:
//
//	retrypolicy validate [FILE|-]
//	retrypolicy flags [--retry-strategy S] [--retry-max-attempts N] …
//	retrypolicy decide [--lines] [FILE|-]
//	retrypolicy plan [--uptime DURATION] [--failures N] [--svg FILE] [FILE|-]
//	retrypolicy lint [--json] [FILE|-]   (or the --retry-* flags)
//	retrypolicy simulate [--scenario outage|contention] [options] [STRATEGY.json …]
//	retrypolicy serve [--addr HOST:PORT]
//	retrypolicy version
//
// Exit status: 0 on success (a fatal decision included), 2 for invalid input,
// 1 for I/O errors; lint exits 3 when it finds a warning.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/echo"
	"github.com/retrypolicy/retrypolicy/internal/front/report"
)

// version is the command's version, printed by `retrypolicy version`.
const version = "0.1.0"

const (
	exitOK      = 0
	exitIO      = 1
	exitInvalid = 2
)

const usage = `usage: retrypolicy <command> [arguments]

commands:
  validate [FILE|-]   check a strategy object; print its canonical JSON
  flags [--retry-*]   build a strategy from ampctl-style flags; print its canonical JSON
  decide [FILE|-]     decide for one failed job (--lines: a stream of JSON Lines)
  plan [FILE|-]       simulate a job that keeps failing under a strategy
  lint [FILE|-]       what a strategy does when every run crashes, and its traps
  simulate [FILE …]   a fleet through an outage, clients in contention, or a chain of layers, side by side
  replay LOG [FILE …] what other strategies would have done with the failures a log records
  serve               the library over HTTP, and a page for choosing a strategy
  version             print the version

Run 'retrypolicy <command> --help' for a command's options.
`

func main() {
	os.Exit(stdio{os.Stdin, os.Stdout, os.Stderr}.run(os.Args[1:]))
}

// stdio is where the command reads and writes: its standard input, output
// and error, which the tests replace.
type stdio struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// run is the command with its arguments; it returns the exit status.
func (c stdio) run(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(c.stderr, usage)
		return exitInvalid
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "validate":
		return c.runValidate(rest)
	case "flags":
		return c.runFlags(rest)
	case "decide":
		return c.runDecide(rest)
	case "plan":
		return c.runPlan(rest)
	case "lint":
		return c.runLint(rest)
	case "simulate":
		return runSimulate(rest, c.stdin, c.stdout, c.stderr)
	case "replay":
		return c.runReplay(rest)
	case "serve":
		return c.runServe(rest)
	case "version", "--version":
		sc := c.subcommand("version", "version", "Prints the version.")
		if _, stop := sc.parse(rest, 0); stop >= 0 {
			return stop
		}
		fmt.Fprintln(c.stdout, "retrypolicy", version)
		return exitOK
	case "help", "-h", "-help", "--help":
		fmt.Fprint(c.stdout, usage)
		return exitOK
	}
	if hint := echo.SuggestFrom(cmd, commands); hint != "" && len(cmd) <= echo.Max {
		fmt.Fprintf(c.stderr, "retrypolicy: unknown command %s%s (retrypolicy help lists them)\n", echo.Quote(cmd), hint)
		return exitInvalid
	}
	fmt.Fprintf(c.stderr, "retrypolicy: unknown command %s\n%s", echo.Quote(cmd), usage)
	return exitInvalid
}

// commands are the subcommands, for a suggestion when one is mistyped.
var commands = []string{"validate", "flags", "decide", "plan", "lint", "simulate", "replay", "serve", "version", "help"}

// subcommand is a subcommand's flags and the streams it reads and writes.
type subcommand struct {
	fs *flag.FlagSet
	stdio
}

// subcommand returns the subcommand name, whose --help prints the
// synopsis, the description and the options, each named with two dashes
// as users type it.
func (c stdio) subcommand(name, synopsis, description string) subcommand {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: retrypolicy %s\n\n%s\n", synopsis, description)
		printOptions(fs)
	}
	return subcommand{fs, c}
}

// newFlagSet is stdio.subcommand's flag set, for a subcommand that holds
// its streams apart.
func newFlagSet(name, synopsis, description string, stderr io.Writer) *flag.FlagSet {
	return stdio{stderr: stderr}.subcommand(name, synopsis, description).fs
}

// printOptions lists fs's flags in lexical order, as the flag package
// does, but named with two dashes as users type them.
func printOptions(fs *flag.FlagSet) {
	first := true
	fs.VisitAll(func(f *flag.Flag) {
		if first {
			fmt.Fprintln(fs.Output(), "\noptions:")
			first = false
		}
		arg, usage := flag.UnquoteUsage(f)
		switch arg {
		case "":
		case "value":
			arg = " VALUE"
		default:
			arg = " " + arg
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			usage += " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(fs.Output(), "  --%s%s\n", f.Name, arg)
		for _, line := range strings.Split(usage, "\n") {
			fmt.Fprintf(fs.Output(), "        %s\n", line)
		}
	})
}

// flagProblem words an error of the flag package with flags named as users
// type them, two dashes: "--uptime: invalid value "5x": …".
func flagProblem(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name) })
		return "--" + name + ": unknown flag" + echo.SuggestFrom("--"+strings.TrimPrefix(name, "-"), names)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "--" + strings.TrimPrefix(name, "-") + ": needs a value"
	}
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if value, flagAndWhy, ok := strings.Cut(rest, " for flag -"); ok {
			name, why, _ := strings.Cut(flagAndWhy, ": ")
			return "--" + name + ": " + why + ", got " + value
		}
	}
	return msg
}

// parseArgs is subcommand.parse, for a subcommand that holds its streams
// apart.
func parseArgs(fs *flag.FlagSet, args []string, stdout, stderr io.Writer, most int) (positional []string, stop int) {
	return subcommand{fs, stdio{stdout: stdout, stderr: stderr}}.parse(args, most)
}

// parse parses the subcommand's arguments, flags anywhere among them,
// which may hold at most most positional arguments. It returns the exit
// status to stop with, or -1 to go on; a usage error exits 2.
func (sc subcommand) parse(args []string, most int) (positional []string, stop int) {
	fs, stdout, stderr := sc.fs, sc.stdout, sc.stderr
	if wantsHelp(args) {
		fs.SetOutput(stdout)
		fs.Usage()
		return nil, exitOK
	}
	fs.SetOutput(io.Discard) // its errors are said here, on one line
	for {
		if err := fs.Parse(args); err != nil {
			fmt.Fprintf(stderr, "retrypolicy: %s: %s (see retrypolicy %s --help)\n", fs.Name(), flagProblem(fs, err), fs.Name())
			return nil, exitInvalid
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(positional) > most {
		fmt.Fprintf(stderr, "retrypolicy: %s takes at most %d argument(s), got %d: %s\n", fs.Name(), most, len(positional), echo.Quote(strings.Join(positional, " ")))
		return nil, exitInvalid
	}
	return positional, -1
}

// wantsHelp reports whether args ask for help before any "--".
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// parseInput parses the subcommand's arguments and opens its one input,
// FILE or standard input. It returns the exit status to stop with (the
// caller closes nothing then), or -1 and the input to read and close.
func (sc subcommand) parseInput(args []string) (io.ReadCloser, int) {
	positional, stop := sc.parse(args, 1)
	if stop >= 0 {
		return nil, stop
	}
	in, err := sc.open(positional)
	if err != nil {
		fmt.Fprintln(sc.stderr, "retrypolicy:", err)
		return nil, exitIO
	}
	return in, -1
}

// open opens FILE, the first of positional, or standard input for "-" or
// no FILE. When that is a terminal, it says on stderr what the
// subcommand waits for there.
func (sc subcommand) open(positional []string) (io.ReadCloser, error) {
	if len(positional) == 0 || positional[0] == "-" {
		if isTerminal(sc.stdin) {
			name := sc.fs.Name()
			fmt.Fprintf(sc.stderr, "retrypolicy %s: reading %s from the terminal: type it and end with Ctrl-D, or give a FILE (retrypolicy %s --help)\n",
				name, inputs[name], name)
		}
		return io.NopCloser(sc.stdin), nil
	}
	return os.Open(positional[0])
}

// openInput is subcommand.open, for a subcommand that holds its streams
// apart.
func openInput(positional []string, stdin io.Reader, stderr io.Writer, fs *flag.FlagSet) (io.ReadCloser, error) {
	return subcommand{fs, stdio{stdin: stdin, stderr: stderr}}.open(positional)
}

// inputs says what each subcommand reads from its input.
var inputs = map[string]string{
	"validate": "a strategy (JSON)",
	"lint":     "a strategy (JSON)",
	"plan":     "a strategy (JSON)",
	"decide":   "requests (JSON, one after another)",
	"simulate": "a strategy (JSON)",
	"replay":   "an attempt log (JSON Lines)",
}

// isTerminal reports whether r is a character device, as a terminal is
// (and /dev/null, which ends at once): where a reader waits for a person
// who may not know it is being waited for.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// printProblems writes one line per problem of a validation error, each
// starting with the field at fault, and returns the exit status.
func printProblems(stderr io.Writer, err error) int {
	var ve *retrypolicy.ValidationError
	if !errors.As(err, &ve) {
		fmt.Fprintln(stderr, "retrypolicy:", err)
		return exitIO
	}
	for _, fe := range ve.Errors {
		fmt.Fprintln(stderr, fe.Error())
	}
	if ve.Omitted > 0 {
		fmt.Fprintf(stderr, "and %d more\n", ve.Omitted)
	}
	return exitInvalid
}

func (c stdio) runValidate(args []string) int {
	sc := c.subcommand("validate", "validate [FILE|-]", `Reads one strategy object (the value of a request's retry_strategy). Valid: prints its
canonical JSON and exits 0. Invalid: prints one line per problem, each starting with the
field's JSON path ($ for the document), and exits 2.`)
	in, stop := sc.parseInput(args)
	if stop >= 0 {
		return stop
	}
	defer in.Close()
	s, err := parseStrategy(in)
	return c.printStrategy(s, err)
}

func (c stdio) runFlags(args []string) int {
	if wantsHelp(args) {
		sc := stdio{stderr: c.stdout}.subcommand("flags", `flags [--retry-strategy S] [--retry-max-attempts N] [--retry-window-secs N]
       [--retry-backoff K] [--retry-base-delay-secs N] [--retry-multiplier X] [--retry-max-delay-secs N]`,
			`Builds a strategy from ampctl-style flags. Valid: prints its canonical JSON and exits 0.
Invalid: prints every problem, one a line, naming the flag, and exits 2.`)
		retrypolicy.RegisterFlags(sc.fs)
		sc.fs.Usage()
		return exitOK
	}
	s, err := retrypolicy.ParseFlags(args)
	return c.printStrategy(s, err)
}

// printStrategy ends validate and flags: the strategy's canonical JSON on
// stdout, or its problems on stderr. It returns the exit status.
func (c stdio) printStrategy(s retrypolicy.Strategy, err error) int {
	if err != nil {
		return printProblems(c.stderr, err)
	}
	out, _ := s.MarshalJSON()
	fmt.Fprintf(c.stdout, "%s\n", out)
	return exitOK
}

// parseStrategy reads one strategy object from in. It reads a little past
// the library's limit, so that a larger document is refused without being
// read whole.
func parseStrategy(in io.Reader) (retrypolicy.Strategy, error) {
	doc, err := io.ReadAll(io.LimitReader(in, report.MaxLine+1))
	if err != nil {
		return retrypolicy.Strategy{}, err
	}
	return retrypolicy.Parse(doc)
}
