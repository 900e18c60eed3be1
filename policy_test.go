package retrypolicy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDefaultIsTheSeedsDefault: unless you choose one, a job retries forever
// with an exponential backoff of 1 second, ×2, up to an hour.
func TestDefaultIsTheSeedsDefault(t *testing.T) {
	s := Default()
	assert.Equal(t, Strategy{Kind: UnlessStopped, Backoff: Backoff{Kind: Exponential, BaseDelay: time.Second, Multiplier: 2, MaxDelay: time.Hour}}, s)
	require.NoError(t, s.Validate())
}

// TestWindowPerStrategy: bounded counts over its own window, unless_stopped
// over an hour for its backoff.
func TestWindowPerStrategy(t *testing.T) {
	s := Strategy{Kind: Bounded, Window: 90 * time.Second}
	assert.Equal(t, 90*time.Second, s.window())
	d := Default()
	assert.Equal(t, time.Hour, d.window())
}

// textEnum is what every enumeration of the package offers.
type textEnum interface {
	String() string
	MarshalText() ([]byte, error)
}

// TestEnumsEncodeAsTheirNames pins the text form of the four enumerations:
// every value encodes as its name and decodes back from it exactly, and a
// value or name out of range is an error, never a number.
func TestEnumsEncodeAsTheirNames(t *testing.T) {
	type enumCase struct {
		names   []string // by value, from 1
		zero    string   // the zero value's name, "-" when it has none
		value   func(v uint8) textEnum
		decodes func(text string) (uint8, error)
	}
	cases := map[string]enumCase{
		"StrategyKind": {[]string{"none", "bounded", "unless_stopped"}, "-",
			func(v uint8) textEnum { return StrategyKind(v) },
			func(s string) (uint8, error) {
				var k StrategyKind
				err := k.UnmarshalText([]byte(s))
				return uint8(k), err
			}},
		"BackoffKind": {[]string{"fixed", "exponential", "exponential_with_jitter"}, "-",
			func(v uint8) textEnum { return BackoffKind(v) },
			func(s string) (uint8, error) {
				var k BackoffKind
				err := k.UnmarshalText([]byte(s))
				return uint8(k), err
			}},
		"Action": {[]string{"fatal", "retry_now", "wait"}, "-",
			func(v uint8) textEnum { return Action(v) },
			func(s string) (uint8, error) { var a Action; err := a.UnmarshalText([]byte(s)); return uint8(a), err }},
		"Reason": {[]string{"strategy_none", "attempts_exhausted"}, "",
			func(v uint8) textEnum { return Reason(v) },
			func(s string) (uint8, error) { var r Reason; err := r.UnmarshalText([]byte(s)); return uint8(r), err }},
	}
	for typ, c := range cases {
		t.Run(typ, func(t *testing.T) {
			for i, name := range c.names {
				v := c.value(uint8(i + 1))
				assert.Equal(t, name, v.String())
				text, err := v.MarshalText()
				require.NoError(t, err)
				assert.Equal(t, name, string(text))
				back, err := c.decodes(name)
				require.NoError(t, err)
				assert.Equal(t, uint8(i+1), back)
			}
			if c.zero == "-" {
				assert.Equal(t, typ+"(0)", c.value(0).String())
				_, err := c.value(0).MarshalText()
				assert.Error(t, err)
				_, err = c.decodes("")
				assert.Error(t, err)
			} else {
				text, err := c.value(0).MarshalText()
				require.NoError(t, err)
				assert.Equal(t, c.zero, string(text))
			}
			_, err := c.value(200).MarshalText()
			assert.Error(t, err)
			assert.Equal(t, typ+"(200)", c.value(200).String())
			_, err = c.decodes("1")
			assert.Error(t, err, "numbers are not names")
			_, err = c.decodes(c.names[0] + " ")
			assert.Error(t, err, "names are exact")
		})
	}
	var k StrategyKind
	assert.Equal(t, `retrypolicy: "Bounded" is not a strategy, one of none, bounded, unless_stopped`, k.UnmarshalText([]byte("Bounded")).Error())
}
