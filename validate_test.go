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
		{"zero value: the default", Strategy{}, nil},
		{"unknown kind", Strategy{Kind: 9}, []string{"Kind"}},
		{"bounded needs attempts, not a window", Strategy{Kind: Bounded, Backoff: exp}, []string{"MaxAttempts"}},
		{"window of 1.5 s cannot be written", Strategy{Kind: Bounded, MaxAttempts: 3, Window: 1500 * time.Millisecond, Backoff: exp}, []string{"Window"}},
		{"window over 7 days", Strategy{Kind: Bounded, MaxAttempts: 3, Window: maxWindow + time.Second, Backoff: exp}, []string{"Window"}},
		{"negative window", Strategy{Kind: Bounded, MaxAttempts: 3, Window: -time.Second}, []string{"Window"}},
		{"attempts and window belong to bounded", Strategy{Kind: UnlessStopped, MaxAttempts: 3, Window: time.Hour, Backoff: exp}, []string{"MaxAttempts", "Window"}},
		{"none takes no backoff", Strategy{Kind: None, Backoff: exp}, []string{"Backoff"}},
		{"a zero backoff is the default", Strategy{Kind: UnlessStopped}, nil},
		{"a backoff of delays only is exponential", Strategy{Kind: UnlessStopped, Backoff: Backoff{BaseDelay: time.Second}}, nil},
		{"delays of whole milliseconds", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Exponential, BaseDelay: 1500 * time.Millisecond, Multiplier: 2, MaxDelay: 2001 * time.Millisecond}}, nil},
		{"a delay of 1 ms", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Fixed, BaseDelay: time.Millisecond}}, nil},
		{"a zero base is 1 s", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Fixed}}, nil},
		{"a delay of microseconds", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Fixed, BaseDelay: 1500 * time.Microsecond}}, nil},
		{"a delay of 1 ns, capped at 10 µs", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Exponential, BaseDelay: time.Nanosecond, Multiplier: 2, MaxDelay: 10 * time.Microsecond}}, nil},
		{"base below 1 ns", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Fixed, BaseDelay: -time.Millisecond}}, []string{"Backoff.BaseDelay"}},
		{"fixed takes no multiplier or cap", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Fixed, BaseDelay: time.Second, Multiplier: 2, MaxDelay: time.Minute}}, []string{"Backoff.Multiplier", "Backoff.MaxDelay"}},
		{"NaN multiplier", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Exponential, BaseDelay: time.Second, Multiplier: math.NaN()}}, []string{"Backoff.Multiplier"}},
		{"infinite multiplier", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Exponential, BaseDelay: time.Second, Multiplier: math.Inf(1)}}, []string{"Backoff.Multiplier"}},
		{"a zero multiplier is 2", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Exponential, BaseDelay: time.Second}}, nil},
		{"negative multiplier", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Exponential, Multiplier: -1}}, []string{"Backoff.Multiplier"}},
		{"cap below base", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Exponential, BaseDelay: time.Minute, Multiplier: 2, MaxDelay: time.Second}}, []string{"Backoff.MaxDelay"}},
		{"cap below the zero base's 1 s", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Exponential, MaxDelay: 500 * time.Millisecond}}, []string{"Backoff.MaxDelay"}},
		{"negative cap", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Exponential, BaseDelay: time.Second, Multiplier: 2, MaxDelay: -time.Second}}, []string{"Backoff.MaxDelay"}},
		{"unknown backoff kind", Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: 7, BaseDelay: time.Second}}, []string{"Backoff.Kind"}},
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
	err := Strategy{Kind: Bounded, Window: -time.Minute, Backoff: Backoff{Kind: Exponential, BaseDelay: time.Second, Multiplier: -1}}.Validate()
	require.Error(t, err)
	assert.Equal(t, "retrypolicy: MaxAttempts: required when Kind is bounded\n"+
		"retrypolicy: Window: must be between 1s and 168h0m0s, got -1m0s\n"+
		"retrypolicy: Backoff.Multiplier: must be greater than 0, got -1.0", err.Error())

	var ve *ValidationError
	require.True(t, errors.As(err, &ve))
	assert.Equal(t, FieldError{Field: "Window", Rule: "must be between 1s and 168h0m0s", Value: "-1m0s"}, ve.Errors[1])
	assert.Equal(t, "Window: must be between 1s and 168h0m0s, got -1m0s", ve.Errors[1].Error())
	assert.Equal(t, 0, ve.Omitted)

	err = Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Fixed, BaseDelay: -10 * time.Microsecond}}.Validate()
	assert.Equal(t, "retrypolicy: Backoff.BaseDelay: must be at least 1ns, got -10µs", err.Error())
	err = Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Exponential, Multiplier: 2, BaseDelay: time.Minute, MaxDelay: 1500 * time.Millisecond}}.Validate()
	assert.Equal(t, "retrypolicy: Backoff.MaxDelay: must be at least Backoff.BaseDelay (1m0s), got 1.5s", err.Error())
	err = Strategy{Kind: UnlessStopped, Window: 90 * time.Second}.Validate()
	assert.Equal(t, "retrypolicy: Window: only valid when Kind is bounded, got 1m30s", err.Error())
}

// TestZeroFieldsMeanTheOmittedFields: a Go strategy whose fields are zero
// means what the descriptor with those fields omitted means: both encode
// alike and decide alike.
func TestZeroFieldsMeanTheOmittedFields(t *testing.T) {
	for _, tc := range []struct {
		goValue    Strategy
		descriptor string
	}{
		{Strategy{}, `null`},
		{Strategy{Kind: UnlessStopped}, `{"strategy":"unless_stopped"}`},
		{Strategy{Kind: Bounded, MaxAttempts: 5}, `{"strategy":"bounded","max_attempts":5}`},
		{Strategy{Kind: Bounded, MaxAttempts: 5, Backoff: Backoff{Kind: Fixed}}, `{"strategy":"bounded","max_attempts":5,"backoff":{"kind":"fixed"}}`},
		{Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Exponential, BaseDelay: 3 * time.Second}}, `{"strategy":"unless_stopped","backoff":{"kind":"exponential","base_delay_secs":3}}`},
		{Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: ExponentialWithJitter, MaxDelay: time.Minute}}, `{"strategy":"unless_stopped","backoff":{"kind":"exponential_with_jitter","max_delay_secs":60}}`},
	} {
		parsed, err := Parse([]byte(tc.descriptor))
		require.NoError(t, err, tc.descriptor)
		require.NoError(t, tc.goValue.Validate(), "%+v", tc.goValue)
		want, err := parsed.MarshalJSON()
		require.NoError(t, err)
		got, err := tc.goValue.MarshalJSON()
		require.NoError(t, err)
		assert.JSONEq(t, string(want), string(got), tc.descriptor)
		p, err := Compile(tc.goValue)
		require.NoError(t, err)
		assert.Equal(t, parsed, p.Strategy(), "%s: the compiled strategy", tc.descriptor)
		failures := []time.Time{t0, t0.Add(time.Second), t0.Add(2 * time.Second)}
		dWant, err := Decide(parsed, failures, 0, 7, t0)
		require.NoError(t, err)
		dGot, err := Decide(tc.goValue, failures, 0, 7, t0)
		require.NoError(t, err)
		assert.Equal(t, dWant, dGot, tc.descriptor)
	}
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

// TestBackoffOfDelaysOnly: in Go, a Backoff that sets only its delays is
// the default kind, exponential (docs/semantics.md, section 1), as the README's
// "zero fields mean their defaults" promises; in JSON a backoff object
// still needs its kind, and the error lists the kinds.
func TestBackoffOfDelaysOnly(t *testing.T) {
	s := Strategy{Kind: UnlessStopped, Backoff: Backoff{BaseDelay: 100 * time.Millisecond, MaxDelay: 5 * time.Second}}
	require.NoError(t, s.Validate())
	p, err := Compile(s)
	require.NoError(t, err)
	var waits []time.Duration
	h := NewHistory(p)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for range 8 {
		require.NoError(t, h.Record(at, 0))
		d, err := h.Decide(0, at)
		require.NoError(t, err)
		waits = append(waits, d.Delay)
	}
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 5000 * ms, 5000 * ms}, waits, "×2 from 100 ms, capped at 5 s")

	_, err = Parse([]byte(`{"strategy":"unless_stopped","backoff":{"base_delay_secs":1}}`))
	assert.EqualError(t, err, "retrypolicy: backoff.kind: required, one of fixed, exponential, exponential_with_jitter")
}
