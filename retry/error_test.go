package retry

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy"
)

// TestReasonsEncodeAsTheirNames: each give-up reason reads and writes as
// its name, the zero Reason as "", a value without a name as Reason(N)
// (and not at all); a fatal decision's reason converts to the Reason of
// the same name.
func TestReasonsEncodeAsTheirNames(t *testing.T) {
	for i, name := range []string{"strategy_none", "attempts_exhausted", "not_retryable", "context_done", "past_deadline", "budget_exhausted", "retried_below", "deferred", "retry_after_too_long", "throttled"} {
		r := Reason(i + 1)
		assert.Equal(t, name, r.String())
		text, err := r.MarshalText()
		require.NoError(t, err)
		assert.Equal(t, name, string(text))
		var back Reason
		require.NoError(t, back.UnmarshalText([]byte(name)))
		assert.Equal(t, r, back)
	}
	assert.Equal(t, "", Reason(0).String())
	assert.Equal(t, "Reason(11)", Reason(11).String())
	_, err := Reason(11).MarshalText()
	assert.Error(t, err)
	back := NotRetryable
	assert.Error(t, back.UnmarshalText([]byte("Not_Retryable")))
	assert.Equal(t, NotRetryable, back, "unchanged on error")
	assert.Equal(t, "strategy_none", Reason(retrypolicy.StrategyNone).String())
	assert.Equal(t, "attempts_exhausted", Reason(retrypolicy.AttemptsExhausted).String())
}
