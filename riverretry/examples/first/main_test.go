package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFirstProgram: the job fails twice and completes at its third
// attempt, its two failures on record.
func TestFirstProgram(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out))
	assert.Equal(t, "completed after 3 attempts; 2 errors recorded\n", out.String())
}
