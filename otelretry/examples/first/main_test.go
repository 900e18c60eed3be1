package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy/internal/readme"
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
	require.NoError(t, readme.OpensWith("../../README.md", "main.go"))
}
