package retrypolicy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultIsTheSeedsDefault(t *testing.T) {
	// Unless you choose one, a job retries forever with an exponential
	// backoff: 1 second, x2, up to an hour.
	s := Default()
	assert.Equal(t, UnlessStopped, s.Kind)
	assert.Equal(t, 0, s.MaxAttempts)
	assert.Equal(t, time.Duration(0), s.Window)
	assert.Equal(t, Backoff{Kind: Exponential, BaseDelay: time.Second, Multiplier: 2, MaxDelay: time.Hour}, s.Backoff)
	require.NoError(t, s.Validate())
	assert.Equal(t, DefaultBackoff(), s.Backoff)
}

func TestWindowPerStrategy(t *testing.T) {
	assert.Equal(t, 90*time.Second, Strategy{Kind: Bounded, Window: 90 * time.Second}.window())
	assert.Equal(t, time.Hour, Default().window(), "unless_stopped counts an hour for its backoff")
	assert.Equal(t, 7*24*time.Hour, MaxWindow)
	assert.Equal(t, time.Hour, DefaultWindow)
}

func TestStrategyIsComparable(t *testing.T) {
	// Plain values: equal descriptors compare equal with ==.
	assert.True(t, Default() == Default())
	assert.False(t, Default() == Strategy{Kind: None})
}

func TestEnumStrings(t *testing.T) {
	assert.Equal(t, []string{"none", "bounded", "unless_stopped", "StrategyKind(0)"},
		[]string{None.String(), Bounded.String(), UnlessStopped.String(), StrategyKind(0).String()})
	assert.Equal(t, []string{"fixed", "exponential", "exponential_with_jitter", "BackoffKind(9)"},
		[]string{Fixed.String(), Exponential.String(), ExponentialWithJitter.String(), BackoffKind(9).String()})
}
