package retrypolicy

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidateGoValues(t *testing.T) {
	exp := Backoff{Kind: Exponential, BaseDelay: time.Second, Multiplier: 2}
	tests := []struct {
		name  string
		s     Strategy
		paths []string
	}{
		{"default", Default(), nil},
		{"none", Strategy{Kind: None}, nil},
		{"bounded", Strategy{Kind: Bounded, MaxAttempts: 3, Window: time.Hour, Backoff: exp}, nil},
		{"zero value", Strategy{}, []string{"strategy"}},
		{"unknown kind", Strategy{Kind: 9}, []string{"strategy"}},
		{"bounded needs attempts and a window", Strategy{Kind: Bounded, Backoff: exp}, []string{"max_attempts", "window_secs"}},
		{"window of 1.5 s cannot be written", Strategy{Kind: Bounded, MaxAttempts: 3, Window: 1500 * time.Millisecond, Backoff: exp}, []string{"window_secs"}},
		{"window over 7 days", Strategy{Kind: Bounded, MaxAttempts: 3, Window: maxWindow + time.Second, Backoff: exp}, []string{"window_secs"}},
		{"attempts and window belong to bounded", Strategy{Kind: UnlessStopped, MaxAttempts: 3, Window: time.Hour, Backoff: exp}, []string{"max_attempts", "window_secs"}},
		{"none takes no backoff", Strategy{Kind: None, Backoff: exp}, []string{"backoff"}},
		{"retrying needs a backoff", Strategy{Kind: UnlessStopped}, []string{"backoff.kind", "backoff.base_delay_secs"}},
		{"delays of whole milliseconds", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Exponential, BaseDelay: 1500 * time.Millisecond, Multiplier: 2, MaxDelay: 2001 * time.Millisecond}}, nil},
		{"a delay of 1 ms", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Fixed, BaseDelay: time.Millisecond}}, nil},
		{"base in whole milliseconds", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Fixed, BaseDelay: 1500 * time.Microsecond}}, []string{"backoff.base_delay_secs"}},
		{"base below 1 ms", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Fixed, BaseDelay: -time.Millisecond}}, []string{"backoff.base_delay_secs"}},
		{"fixed takes no multiplier or cap", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Fixed, BaseDelay: time.Second, Multiplier: 2, MaxDelay: time.Minute}}, []string{"backoff.multiplier", "backoff.max_delay_secs"}},
		{"NaN multiplier", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Exponential, BaseDelay: time.Second, Multiplier: math.NaN()}}, []string{"backoff.multiplier"}},
		{"infinite multiplier", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Exponential, BaseDelay: time.Second, Multiplier: math.Inf(1)}}, []string{"backoff.multiplier"}},
		{"zero multiplier", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Exponential, BaseDelay: time.Second}}, []string{"backoff.multiplier"}},
		{"cap below base", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Exponential, BaseDelay: time.Minute, Multiplier: 2, MaxDelay: time.Second}}, []string{"backoff.max_delay_secs"}},
		{"negative cap", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Exponential, BaseDelay: time.Second, Multiplier: 2, MaxDelay: -time.Second}}, []string{"backoff.max_delay_secs"}},
		{"unknown backoff kind", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: 7, BaseDelay: time.Second}}, []string{"backoff.kind"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.s.Validate()
			if tt.paths == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, ErrInvalid)
			assert.Equal(t, tt.paths, errorPaths(t, err))
		})
	}
}

func TestValidationErrorShapes(t *testing.T) {
	err := Strategy{Kind: Bounded, Backoff: Backoff{Kind: Exponential, BaseDelay: time.Second, Multiplier: -1}}.Validate()
	require.Error(t, err)
	assert.Equal(t, "retrypolicy: max_attempts: required when strategy is bounded\n"+
		"retrypolicy: window_secs: must be between 1 and 604800, got 0\n"+
		"retrypolicy: backoff.multiplier: must be greater than 0, got -1.0", err.Error())

	var ve *ValidationError
	require.True(t, errors.As(err, &ve))
	assert.Equal(t, FieldError{Field: "window_secs", Rule: "must be between 1 and 604800", Value: "0"}, ve.Errors[1])
	assert.Equal(t, "window_secs: must be between 1 and 604800, got 0", ve.Errors[1].Error())
	assert.Equal(t, 0, ve.Omitted)

	err = Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Fixed, BaseDelay: 10 * time.Microsecond}}.Validate()
	assert.Equal(t, "retrypolicy: backoff.base_delay_secs: must be a whole number of milliseconds, got 10µs", err.Error())
	err = Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Exponential, Multiplier: 2, BaseDelay: time.Minute, MaxDelay: 1500 * time.Millisecond}}.Validate()
	assert.Equal(t, "retrypolicy: backoff.max_delay_secs: must be at least backoff.base_delay_secs (1m0s), got 1.5s", err.Error())
}

// TestValidateAllocatesNothingForAValidStrategy: Decide validates a plain
// Strategy on every call, so the valid path must not allocate.
func TestValidateAllocatesNothingForAValidStrategy(t *testing.T) {
	s := Strategy{Kind: Bounded, MaxAttempts: 5, Window: time.Hour, Backoff: Backoff{Kind: ExponentialWithJitter, BaseDelay: time.Second, Multiplier: 1.5, MaxDelay: time.Minute}}
	if allocs := testing.AllocsPerRun(100, func() {
		if s.Validate() != nil {
			t.Fatal("invalid")
		}
	}); allocs != 0 {
		t.Fatalf("Validate allocates %v times", allocs)
	}
}

func TestDecimalInt(t *testing.T) {
	tests := []struct {
		in     string
		want   int64
		status numStatus
	}{
		{"5", 5, numOK}, {"5.0", 5, numOK}, {"5e0", 5, numOK}, {"50e-1", 5, numOK}, {"0.5e1", 5, numOK},
		{"-0", 0, numOK}, {"0e999", 0, numOK}, {"-12", -12, numOK},
		{"9223372036854775807", math.MaxInt64, numOK}, {"-9223372036854775808", math.MinInt64, numOK},
		{"9223372036854775808", 0, numOverflow}, {"1e19", 0, numOverflow}, {"1e99999999999999999999", 0, numOverflow},
		{"5.5", 0, numFraction}, {"1e-1", 0, numFraction}, {"5.0000000000000000001", 0, numFraction},
		{"", 0, numSyntax}, {"+5", 0, numSyntax}, {"05", 0, numSyntax}, {"5.", 0, numSyntax}, {".5", 0, numSyntax},
		{"0x10", 0, numSyntax}, {"1e", 0, numSyntax}, {" 5", 0, numSyntax}, {"NaN", 0, numSyntax},
	}
	for _, tt := range tests {
		got, status := decimalInt(tt.in)
		assert.Equal(t, tt.status, status, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
}

func TestDecimalScaled(t *testing.T) {
	tests := []struct {
		in     string
		want   int64
		status numStatus
	}{
		{"8", 8e9, numOK}, {"8.000000001", 8000000001, numOK}, {"1e-9", 1, numOK}, {"0.5", 5e8, numOK},
		{"1e-10", 0, numFraction}, {"9223372036.854775807", math.MaxInt64, numOK}, {"9223372036.854775808", 0, numOverflow},
	}
	for _, tt := range tests {
		got, status := decimalScaled(tt.in, 9)
		assert.Equal(t, tt.status, status, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
}

func TestFormatMultiplier(t *testing.T) {
	assert.Equal(t, "2.0", formatMultiplier(2))
	assert.Equal(t, "1.5", formatMultiplier(1.5))
	assert.Equal(t, "100.0", formatMultiplier(100))
	assert.Equal(t, "1e+300", formatMultiplier(1e300))
	assert.Equal(t, "1e-07", formatMultiplier(1e-7))
}
