package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReplayExitStatuses: a log that cannot be read (a directory) is an
// I/O error, exit status 1, as for every command; a bad line is an invalid
// input, 2.
func TestReplayExitStatuses(t *testing.T) {
	var stderr bytes.Buffer
	assert.Equal(t, exitIO, run([]string{"replay", t.TempDir()}, nil, &bytes.Buffer{}, &stderr), stderr.String())
	assert.Contains(t, stderr.String(), "is a directory")
	stderr.Reset()
	assert.Equal(t, exitInvalid, run([]string{"replay", "-"}, bytes.NewBufferString("[1]\n"), &bytes.Buffer{}, &stderr), stderr.String())
	assert.Contains(t, stderr.String(), "line 1: not a JSON object")
}

// TestSimulateJSONWithALog: simulate --json --log prints a JSON line, as
// --json does without --log, and writes the log.
func TestSimulateJSONWithALog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "attempts.jsonl")
	var stdout, stderr bytes.Buffer
	code := run([]string{"simulate", "--json", "--jobs", "10", "--log", path, "testdata/cli/strategy-bounded.json"}, nil, &stdout, &stderr)
	require.Equal(t, exitOK, code, stderr.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.Len(t, lines, 1, stdout.String())
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &got), "not JSON: %s", lines[0])
	assert.Equal(t, "strategy-bounded", got["strategy"])
	logged, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.EqualValues(t, got["runs"], strings.Count(string(logged), "\n"), "a line a run")
}
