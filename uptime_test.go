package retrypolicy

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"pgregory.net/rapid"
)

func TestCreditWorkedExamples(t *testing.T) {
	// SEMANTICS 2.3 and the seed: default backoff, n = 4, owed 8 s.
	tests := []struct {
		uptime time.Duration
		want   time.Duration
	}{
		{10 * time.Second, 4 * time.Second},
		{15 * time.Second, 1 * time.Second},
		{0, 8 * time.Second},
		{7999 * time.Millisecond, 8 * time.Second},
		{8 * time.Second, 4 * time.Second},
		{12 * time.Second, 2 * time.Second},
		{14 * time.Second, 1 * time.Second}, // 8+4+2 paid: down to the first step
		{time.Hour, 1 * time.Second},        // never below the first step
		{-time.Hour, 8 * time.Second},       // negative counts as zero
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, DefaultBackoff().Credited(4, tt.uptime), "uptime %v", tt.uptime)
		assert.Equal(t, tt.want, DefaultBackoff().creditReference(4, tt.uptime), "reference, uptime %v", tt.uptime)
	}
}

func TestCreditAtTheCap(t *testing.T) {
	// Default backoff, n = 20: steps 13..20 owe 3600 s each, 12 owes 2048.
	b := DefaultBackoff()
	tests := []struct {
		uptime time.Duration
		want   time.Duration
	}{
		{3599 * time.Second, 3600 * time.Second},
		{8 * 3600 * time.Second, 2048 * time.Second}, // every capped step paid
		{8*3600*time.Second + 2047*time.Second, 2048 * time.Second},
		{8*3600*time.Second + 2048*time.Second, 1024 * time.Second},
		{7 * 3600 * time.Second, 3600 * time.Second}, // step 13 still owed
		{math.MaxInt64, time.Second},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, b.Credited(20, tt.uptime), "uptime %v", tt.uptime)
	}
}

func TestCreditFixedAndShrinking(t *testing.T) {
	fixed := Backoff{Kind: Fixed, BaseDelay: 30 * time.Second}
	assert.Equal(t, 30*time.Second, fixed.Credited(9, time.Hour))
	shrink := Backoff{Kind: Exponential, BaseDelay: 8 * time.Second, Multiplier: 0.5}
	// n = 3 owes 2 s; credit changes nothing below a multiplier of 1.
	assert.Equal(t, 2*time.Second, shrink.Credited(3, time.Hour))
	assert.Equal(t, 2*time.Second, shrink.creditReference(3, time.Hour))
}

// TestCreditClosedFormEqualsReferenceLoop pins 2.3: the constant-time form
// and the rule's step-by-step loop give the same delay, to the nanosecond,
// for every backoff, failure count and uptime.
func TestCreditClosedFormEqualsReferenceLoop(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genBackoff(t)
		if rapid.Bool().Draw(t, "growing") {
			b = genGrowingBackoff(t)
		}
		n := rapid.OneOf(rapid.IntRange(1, 40), rapid.IntRange(1, 3000)).Draw(t, "n")
		uptime := genUptime(t, "uptime")
		if rapid.Bool().Draw(t, "uptime on a step boundary") {
			// Exactly the sum of the top steps: the ties the loop decides with >=.
			var sum time.Duration
			for s := n; s > n-rapid.IntRange(0, 40).Draw(t, "steps") && s > 1; s-- {
				if sum > math.MaxInt64-b.Delay(s) {
					break
				}
				sum += b.Delay(s)
			}
			uptime = sum + time.Duration(rapid.Int64Range(-1, 1).Draw(t, "nudge"))
		}
		got, want := b.Credited(n, uptime), b.creditReference(n, uptime)
		if got != want {
			t.Fatalf("Credited(%d, %v) = %v, reference loop says %v", n, uptime, got, want)
		}
	})
}

// TestCreditNeverLengthensDelay pins "uptime only shortens the backoff":
// the credited delay is never above the owed one.
func TestCreditNeverLengthensDelay(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genBackoff(t)
		n := rapid.IntRange(1, 1<<20).Draw(t, "n")
		uptime := genUptime(t, "uptime")
		if c := b.Credited(n, uptime); c > b.Delay(n) || c < 0 {
			t.Fatalf("credited %v, owed %v", c, b.Delay(n))
		}
	})
}

// TestCreditNeverBelowFirstStep pins the floor: with a multiplier of at least
// 1, credit never takes the delay below delay(1).
func TestCreditNeverBelowFirstStep(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genGrowingBackoff(t)
		n := rapid.IntRange(1, 1<<20).Draw(t, "n")
		if c := b.Credited(n, genUptime(t, "uptime")); c < b.Delay(1) {
			t.Fatalf("credited %v below the first step %v", c, b.Delay(1))
		}
	})
}

// TestMoreUptimeNeverLongerDelay pins monotony in the uptime: a longer run
// never owes a longer delay.
func TestMoreUptimeNeverLongerDelay(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genBackoff(t)
		if rapid.Bool().Draw(t, "growing") {
			b = genGrowingBackoff(t)
		}
		n := rapid.IntRange(1, 5000).Draw(t, "n")
		u1 := genUptime(t, "uptime")
		extra := time.Duration(rapid.Int64Range(0, math.MaxInt64).Draw(t, "extra"))
		u2 := u1 + extra
		if u2 < u1 { // saturate
			u2 = math.MaxInt64
		}
		if c1, c2 := b.Credited(n, u1), b.Credited(n, u2); c2 > c1 {
			t.Fatalf("uptime %v gives %v, longer uptime %v gives %v", u1, c1, u2, c2)
		}
	})
}

func TestCreditOnAZeroBaseEndsAtOnce(t *testing.T) {
	// An unvalidated backoff whose every step owes 0 must not walk n steps.
	b := Backoff{Kind: Exponential, Multiplier: 2}
	assert.Equal(t, time.Duration(0), b.Credited(math.MaxInt, time.Hour))
}
