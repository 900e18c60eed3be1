package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScrape: the workload's scrape holds the counts it made, under the
// names Prometheus gives the instruments: 5 operations that fail twice
// and one of 4 failures (13 retries, a give-up), 10 requests retried once.
func TestScrape(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(context.Background(), &out))
	for _, line := range []string{
		`retrypolicy_retries_total{retrypolicy_operation="render",retrypolicy_source="retry"} 13`,
		`retrypolicy_retries_total{retrypolicy_operation="fetch",retrypolicy_source="http"} 10`,
		`retrypolicy_give_ups_total{retrypolicy_operation="render",retrypolicy_reason="attempts_exhausted",retrypolicy_source="retry"} 1`,
		`retrypolicy_operation_attempts_count{retrypolicy_operation="render",retrypolicy_outcome="success",retrypolicy_source="retry"} 5`,
		`retrypolicy_operation_attempts_sum{retrypolicy_operation="fetch",retrypolicy_outcome="success",retrypolicy_source="http"} 20`,
		`retrypolicy_wait_duration_seconds_count{retrypolicy_operation="render",retrypolicy_source="retry"} 13`,
		// 10 tokens, 2 retries each of the 5 operations, 0.1 back from
		// each as it ends well: 10 - 10 + 0.5.
		`retrypolicy_budget_tokens{retrypolicy_budget="reports"} 0.5`,
	} {
		assert.Contains(t, out.String(), line+"\n")
	}
}
