package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQuickstartDecides(t *testing.T) {
	var out, errOut strings.Builder
	require.Equal(t, 0, run(nil, &out, &errOut), errOut.String())
	// Four failures owe 8 s; 10 s of uptime pays that step back: 4 s.
	assert.Contains(t, out.String(), "at 15:00:01: wait\n  4 failures in the window, owed 8s, a delay of 4s after 10s of uptime credit")
	assert.Contains(t, out.String(), "at 15:00:10: retry_now\n")
}

func TestQuickstartReportsABadDescriptor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"strategy":"bounded"}`), 0o600))
	var out, errOut strings.Builder
	assert.Equal(t, 2, run([]string{path}, &out, &errOut))
	assert.Equal(t, "retrypolicy: max_attempts: required when strategy is bounded\n", errOut.String())
	assert.Equal(t, 1, run([]string{filepath.Join(t.TempDir(), "missing.json")}, &out, &errOut))
}

func TestQuickstartNoneIsFatal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"strategy":"none"}`), 0o600))
	var out, errOut strings.Builder
	require.Equal(t, 0, run([]string{path}, &out, &errOut))
	assert.Contains(t, out.String(), "at 15:00:01: fatal\n  reason strategy_none, 4 failures in the window")
}
