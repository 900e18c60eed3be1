package bench

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requestCount is how many requests the command comparison streams, as
// the figure in BENCHMARKS.md does.
const requestCount = 200_000

var (
	commandOnce sync.Once
	commandPath string // the retrypolicy command, built once
	requestPath string // requestCount requests from WriteRequests
	commandErr  error
)

// prepareCommand builds cmd/retrypolicy and writes the requests, once per
// test binary, into a temporary directory that TestMain removes.
func prepareCommand(tb testing.TB) (command, requests string) {
	tb.Helper()
	commandOnce.Do(func() {
		dir, err := os.MkdirTemp("", "retrypolicy-bench-")
		if commandErr = err; err != nil {
			return
		}
		commandPath = filepath.Join(dir, "retrypolicy")
		build := exec.Command("go", "build", "-o", commandPath, "github.com/retrypolicy/retrypolicy/cmd/retrypolicy")
		if out, err := build.CombinedOutput(); err != nil {
			commandErr = &buildError{out: string(out), err: err}
			return
		}
		requestPath = filepath.Join(dir, "requests.jsonl")
		f, err := os.Create(requestPath)
		if commandErr = err; err != nil {
			return
		}
		if commandErr = WriteRequests(f, requestCount); commandErr != nil {
			f.Close()
			return
		}
		commandErr = f.Close()
	})
	require.NoError(tb, commandErr)
	return commandPath, requestPath
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + "\n" + e.out }

func TestMain(m *testing.M) {
	code := m.Run()
	if commandPath != "" {
		os.RemoveAll(filepath.Dir(commandPath))
	}
	os.Exit(code)
}

// TestWriteRequestsAreDecidable: every generated request is valid, about
// 260 bytes long, and the command answers each with a decision.
func TestWriteRequestsAreDecidable(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteRequests(&buf, 2000))
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, 2000)
	assert.InDelta(t, 260, float64(buf.Len())/2000, 40, "bytes a request")
	var again bytes.Buffer
	require.NoError(t, WriteRequests(&again, 2000))
	assert.Equal(t, buf.String(), again.String(), "the same requests on every run")

	command, _ := prepareCommand(t)
	cmd := exec.Command(command, "decide", "--lines")
	cmd.Stdin = &buf
	out, err := cmd.Output()
	require.NoError(t, err)
	answers := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	require.Len(t, answers, len(lines))
	for i, a := range answers {
		require.True(t, strings.HasPrefix(a, `{"action":`), "line %d: %s", i+1, a)
	}
}

// BenchmarkCommandLines runs `retrypolicy decide --lines` and `jq -c .`
// over the same 200,000 generated requests, as whole processes reading a
// file: one op is one pass. ns/line is the figure to compare
// (benchstat -col /tool). Without jq on the PATH its half is skipped.
func BenchmarkCommandLines(b *testing.B) {
	command, requests := prepareCommand(b)
	tools := []struct {
		name string
		args []string
	}{
		{"retrypolicy", []string{command, "decide", "--lines"}},
		{"jq", []string{"jq", "-c", "."}},
	}
	for _, tool := range tools {
		b.Run("tool="+tool.name, func(b *testing.B) {
			path, err := exec.LookPath(tool.args[0])
			if err != nil {
				b.Skipf("%s is not on the PATH: %v", tool.args[0], err)
			}
			for b.Loop() {
				in, err := os.Open(requests)
				require.NoError(b, err)
				cmd := exec.Command(path, tool.args[1:]...)
				cmd.Stdin = in
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				counter := &lineCounter{}
				cmd.Stdout = counter
				err = cmd.Run()
				in.Close()
				require.NoError(b, err, stderr.String())
				require.Equal(b, requestCount, counter.lines, "one output line per request")
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/requestCount, "ns/line")
		})
	}
}

// lineCounter counts the lines written to it and keeps nothing else.
type lineCounter struct{ lines int }

func (c *lineCounter) Write(p []byte) (int, error) {
	c.lines += bytes.Count(p, []byte{'\n'})
	return len(p), nil
}
