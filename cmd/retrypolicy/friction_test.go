package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runText runs the command on args with stdin, and returns its exit
// status, stdout and stderr.
func runText(args []string, stdin *os.File, in string) (int, string, string) {
	var stdout, stderr strings.Builder
	if stdin != nil {
		code := run(args, stdin, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	code := run(args, strings.NewReader(in), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestTerminalStdinIsSaid: validate, lint and decide with no FILE read
// standard input; when that is a terminal (a character device: /dev/null
// stands in for one here) they say on stderr what they wait for. A pipe
// gets no such line.
func TestTerminalStdinIsSaid(t *testing.T) {
	for _, c := range []struct {
		args []string
		what string
	}{
		{[]string{"validate"}, "retrypolicy validate: reading a strategy (JSON) from the terminal: type it and end with Ctrl-D, or give a FILE (retrypolicy validate --help)"},
		{[]string{"lint", "-"}, "retrypolicy lint: reading a strategy (JSON) from the terminal"},
		{[]string{"decide"}, "retrypolicy decide: reading requests (JSON, one after another) from the terminal"},
	} {
		tty, err := os.Open(os.DevNull)
		require.NoError(t, err)
		_, _, stderr := runText(c.args, tty, "")
		tty.Close()
		assert.Contains(t, stderr, c.what, c.args)

		_, _, stderr = runText(c.args, nil, `{"strategy":"none"}`)
		assert.NotContains(t, stderr, "from the terminal", "a pipe is not a terminal")
	}
}

// TestSimulateReadsStandardInput: "simulate -" reads its strategy from
// standard input, as every other subcommand reads "-", and names it stdin.
func TestSimulateReadsStandardInput(t *testing.T) {
	code, stdout, stderr := runText([]string{"simulate", "--jobs", "10", "-"}, nil, `{"strategy":"none"}`)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "stdin    10        10     10")

	code, _, stderr = runText([]string{"simulate", "-", "-"}, nil, `{"strategy":"none"}`)
	assert.Equal(t, exitInvalid, code)
	assert.Equal(t, "retrypolicy: simulate: - (standard input) given more than once\n", stderr)
}

// TestSimulateRefusesTheOtherScenariosOptions: an option that only the
// other scenario takes is an error that names the one that plays its part,
// rather than being ignored.
func TestSimulateRefusesTheOtherScenariosOptions(t *testing.T) {
	code, _, stderr := runText([]string{"simulate", "--scenario", "contention", "--jobs", "5", "--tick", "1m"}, nil, "")
	assert.Equal(t, exitInvalid, code)
	assert.Equal(t, "retrypolicy: simulate: --jobs: only the outage scenario takes it; in the contention scenario, clients plays its part (see retrypolicy simulate --help)\n"+
		"retrypolicy: simulate: --tick: only the outage scenario takes it (see retrypolicy simulate --help)\n", stderr)
	code, _, stderr = runText([]string{"simulate", "--clients", "5", "--runs", "3"}, nil, "")
	assert.Equal(t, exitInvalid, code)
	assert.Contains(t, stderr, "--clients: only the contention, collapse and tail scenarios take it; in the outage scenario, jobs plays its part")
	assert.Contains(t, stderr, "--runs: only the contention scenario takes it (see")
}

// TestSVGPathIsCheckedFirst: plan and simulate with an --svg path that
// cannot be written fail before printing anything, and leave no file
// behind when they can.
func TestSVGPathIsCheckedFirst(t *testing.T) {
	for _, args := range [][]string{{"plan", "--svg", "/nonexistent/x.svg"}, {"simulate", "--jobs", "10", "--svg", "/nonexistent/x.svg"}} {
		code, stdout, stderr := runText(args, nil, "")
		assert.Equal(t, exitIO, code, args)
		assert.Empty(t, stdout, "nothing printed before the error")
		assert.Equal(t, "retrypolicy: open /nonexistent/x.svg: no such file or directory\n", stderr)
	}
	path := t.TempDir() + "/plan.svg"
	code, _, stderr := runText([]string{"plan", "--svg", path, "-"}, nil, `{"strategy":"bounded"}`)
	assert.Equal(t, exitInvalid, code, stderr)
	_, err := os.Stat(path)
	assert.ErrorIs(t, err, os.ErrNotExist, "the check leaves no file")
}
