package retrypolicy

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
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
		{"window over 7 days", Strategy{Kind: Bounded, MaxAttempts: 3, Window: MaxWindow + time.Second, Backoff: exp}, []string{"window_secs"}},
		{"attempts and window belong to bounded", Strategy{Kind: UnlessStopped, MaxAttempts: 3, Window: time.Hour, Backoff: exp}, []string{"max_attempts", "window_secs"}},
		{"none takes no backoff", Strategy{Kind: None, Backoff: exp}, []string{"backoff"}},
		{"retrying needs a backoff", Strategy{Kind: UnlessStopped}, []string{"backoff.kind", "backoff.base_delay_secs"}},
		{"base in whole seconds", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Fixed, BaseDelay: 1500 * time.Millisecond}}, []string{"backoff.base_delay_secs"}},
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
	assert.Equal(t, "retrypolicy: max_attempts: must be at least 1, got 0\n"+
		"retrypolicy: window_secs: must be between 1 and 604800, got 0\n"+
		"retrypolicy: backoff.multiplier: must be greater than 0, got -1.0", err.Error())

	var fe *FieldError
	require.True(t, errors.As(err, &fe), "errors.As finds the first field error")
	assert.Equal(t, FieldError{Field: "max_attempts", Rule: "must be at least 1", Value: "0"}, *fe)
	assert.ErrorIs(t, fe, ErrInvalid)
	assert.Equal(t, "max_attempts: must be at least 1, got 0", fe.Message())
	assert.Equal(t, "retrypolicy: strategy: required", (&FieldError{Field: "strategy", Rule: "required"}).Error())
}

// TestValidFastPathAgreesWithRules pins that the allocation-free check
// Validate tries first accepts exactly what the full rules accept, on
// strategies near the valid ones.
func TestValidFastPathAgreesWithRules(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genStrategy(t)
		// Perturb one field, or none.
		switch rapid.IntRange(0, 9).Draw(t, "perturb") {
		case 1:
			s.Kind = StrategyKind(rapid.IntRange(0, 4).Draw(t, "kind"))
		case 2:
			s.MaxAttempts = rapid.IntRange(-2, 3).Draw(t, "max_attempts")
		case 3:
			s.Window = time.Duration(rapid.Int64Range(-2, 3).Draw(t, "window_units")) * rapid.SampledFrom([]time.Duration{time.Second, time.Millisecond, MaxWindow}).Draw(t, "unit")
		case 4:
			s.Backoff.Kind = BackoffKind(rapid.IntRange(0, 4).Draw(t, "backoff.kind"))
		case 5:
			s.Backoff.BaseDelay = time.Duration(rapid.Int64().Draw(t, "base"))
		case 6:
			s.Backoff.Multiplier = rapid.Float64().Draw(t, "multiplier")
		case 7:
			s.Backoff.MaxDelay = time.Duration(rapid.Int64().Draw(t, "max_delay"))
		case 8:
			s.Backoff = Backoff{}
		}
		p := problems{nm: &jsonNaming}
		s.check(&p)
		if s.valid() != (len(p.list) == 0) {
			t.Fatalf("valid()=%v but the rules found %d problems for %+v", s.valid(), len(p.list), s)
		}
	})
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

func TestFormatMultiplier(t *testing.T) {
	assert.Equal(t, "2.0", formatMultiplier(2))
	assert.Equal(t, "1.5", formatMultiplier(1.5))
	assert.Equal(t, "100.0", formatMultiplier(100))
	assert.Equal(t, "1e+300", formatMultiplier(1e300))
	assert.Equal(t, "1e-07", formatMultiplier(1e-7))
}
