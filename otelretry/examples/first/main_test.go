package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFirstProgram: the operation succeeds at its third call, and the
// SDK counted its two retries.
func TestFirstProgram(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out))
	assert.Equal(t, "report after 3 calls\nretrypolicy.retries: 2\n", out.String())
}

// TestReadmeOpensWithThisProgram: the README's first code is this file,
// as it is, so that what a reader copies compiles, imports included.
func TestReadmeOpensWithThisProgram(t *testing.T) {
	src, err := os.ReadFile("main.go")
	require.NoError(t, err)
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	first := strings.Index(string(readme), "```go\n")
	require.GreaterOrEqual(t, first, 0)
	assert.True(t, strings.HasPrefix(string(readme)[first:], "```go\n"+string(src)+"```\n"),
		"README.md's first code block is not examples/first/main.go: copy the file into it")
}
