package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
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
