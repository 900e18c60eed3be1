package retryhttp_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/plan"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

// TestTheRecommendedStrategyDrawsNoWarning: the strategy recommended for
// HTTP clients is valid, draws none of the warnings that matter to an
// in-process loop (it gives up fast by design: a caller waits), and the
// loop waits a server up to a minute.
func TestTheRecommendedStrategyDrawsNoWarning(t *testing.T) {
	s := retryhttp.RecommendedStrategy()
	require.NoError(t, s.Validate())
	r, err := plan.LintGo(context.Background(), s)
	require.NoError(t, err)
	for _, f := range r.Findings {
		assert.NotContains(t, []string{"never-fatal", "zero-delay", "no-cap"}, f.Code, f.Message)
	}
	p, err := retrypolicy.Compile(s)
	require.NoError(t, err)
	assert.Equal(t, "1m0s", retry.WaitLimit(p, retry.Synchronous).String())
}

// The strategy recommended for an HTTP client: three attempts, the
// retries about 200 ms and 400 ms apart.
func ExampleRecommendedStrategy() {
	s := retryhttp.RecommendedStrategy()
	fmt.Println(s.Kind, s.MaxAttempts, s.Window, s.Backoff.Kind, s.Backoff.BaseDelay, s.Backoff.MaxDelay)
	t, err := retryhttp.NewTransport(nil, s)
	fmt.Println(t != nil, err)
	// Output:
	// bounded 3 1m0s exponential_with_jitter 200ms 2s
	// true <nil>
}
