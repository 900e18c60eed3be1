package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFirstProgram: with payments up from the start, every order is
// acked at its first delivery but the malformed one, dead-lettered at
// once with why.
func TestFirstProgram(t *testing.T) {
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, run(ctx, &out, "", 0))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	slices.Sort(lines)
	assert.Equal(t, []string{
		`dead letter 1: "malformed" from orders.3, not_retryable after 1 failure(s): the order cannot be read`,
		"orders.1: acked", "orders.2: acked",
		"orders.3: dead-lettered (not_retryable)",
		"orders.4: acked", "orders.5: acked",
	}, lines)
}
