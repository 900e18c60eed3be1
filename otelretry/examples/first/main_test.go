package main

import (
	"bytes"
	"context"
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
