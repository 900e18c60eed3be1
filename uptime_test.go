package retrypolicy

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"pgregory.net/rapid"
)

func TestCreditWorkedExamples(t *testing.T) {
	// The worked examples of the uptime credit: default backoff, n = 4, owed 8 s.
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
		assert.Equal(t, tt.want, defaultBackoff().credited(4, tt.uptime), "uptime %v", tt.uptime)
		assert.Equal(t, tt.want, defaultBackoff().creditReference(4, tt.uptime), "reference, uptime %v", tt.uptime)
	}
}

func TestCreditAtTheCap(t *testing.T) {
	// Default backoff, n = 20: steps 13..20 owe 3600 s each, 12 owes 2048.
	b := defaultBackoff()
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
		assert.Equal(t, tt.want, b.credited(20, tt.uptime), "uptime %v", tt.uptime)
	}
}

func TestCreditFixedAndShrinking(t *testing.T) {
	fixed := Backoff{Kind: Fixed, BaseDelay: 30 * time.Second}
	assert.Equal(t, 30*time.Second, fixed.credited(9, time.Hour))
	shrink := Backoff{Kind: Exponential, BaseDelay: 8 * time.Second, Multiplier: 0.5}
	// n = 3 owes 2 s; credit changes nothing below a multiplier of 1.
	assert.Equal(t, 2*time.Second, shrink.credited(3, time.Hour))
	assert.Equal(t, 2*time.Second, shrink.creditReference(3, time.Hour))
}

// TestCreditEqualsReferenceLoop pins the credit rule: the table's search,
// the division at the cap and the steps past the table give what the
// rule's step-by-step loop gives on the same delays, to the nanosecond, for
// every backoff, failure count and uptime, multipliers within 2^-30 of 1,
// below 1 and exactly 1 included.
func TestCreditEqualsReferenceLoop(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genBackoff(t)
		if rapid.Bool().Draw(t, "growing") {
			b = genGrowingBackoff(t)
		}
		d := b.compiled()
		n := rapid.OneOf(rapid.IntRange(1, 40), rapid.IntRange(1, 3000)).Draw(t, "n")
		uptime := genUptime(t, "uptime")
		if rapid.Bool().Draw(t, "uptime on a step boundary") {
			// Exactly the sum of the steps from n down to some step: the
			// ties the loop decides with >=.
			var sum int64
			downTo := rapid.IntRange(1, n).Draw(t, "down to")
			for s := n; s >= downTo && s > 1; s-- {
				if sum > math.MaxInt64-d.at(int64(s)) {
					break
				}
				sum += d.at(int64(s))
			}
			uptime = time.Duration(sum + rapid.Int64Range(-1, 1).Draw(t, "nudge"))
		}
		want := b.creditReference(n, uptime)
		if got := b.credited(n, uptime); got != want {
			t.Fatalf("credit(%d, %v) = %v, the reference loop says %v", n, uptime, got, want)
		}
	})
}

// TestCreditNearOneEqualsReferenceLoop pins the credit rule where the table
// stops short of the cap (multipliers within about 10^-3 of 1, within 2^-30
// among them), over histories many blocks long and with uptimes that pay
// steps past the table, into it, and every capped step.
func TestCreditNearOneEqualsReferenceLoop(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := Backoff{
			Kind:       Exponential,
			BaseDelay:  time.Duration(rapid.Int64Range(1, 3000).Draw(t, "base_ms")) * time.Millisecond,
			Multiplier: 1 + rapid.OneOf(rapid.Float64Range(0x1p-52, 0x1p-30), rapid.Float64Range(1e-10, 1e-5), rapid.Float64Range(1e-5, 1e-3)).Draw(t, "growth"),
		}
		if rapid.Bool().Draw(t, "capped") {
			b.MaxDelay = b.BaseDelay + time.Duration(rapid.Int64Range(0, int64(time.Second)).Draw(t, "cap_above_base"))
		}
		d := b.compiled()
		n := rapid.IntRange(1, 30000).Draw(t, "n")
		var sum int64
		downTo := rapid.IntRange(1, n).Draw(t, "down to")
		for s := n; s >= downTo && s > 1; s-- {
			sum += d.at(int64(s))
		}
		uptime := time.Duration(sum + rapid.Int64Range(-2, 2).Draw(t, "nudge"))
		if rapid.Bool().Draw(t, "pays every capped step") {
			uptime = time.Duration(rapid.Int64Range(sum, math.MaxInt64).Draw(t, "long uptime"))
		}
		want := b.creditReference(n, uptime)
		if got := b.credited(n, uptime); got != want {
			t.Fatalf("credit(%d, %v) = %v, the reference loop says %v (table %d)", n, uptime, got, want, d.table())
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
		if c := b.credited(n, uptime); c > b.delay(n) || c < 0 {
			t.Fatalf("credited %v, owed %v", c, b.delay(n))
		}
	})
}

// TestCreditNeverBelowFirstStep pins the floor: with a multiplier of at least
// 1, credit never takes the delay below delay(1).
func TestCreditNeverBelowFirstStep(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genGrowingBackoff(t)
		n := rapid.IntRange(1, 1<<20).Draw(t, "n")
		if c := b.credited(n, genUptime(t, "uptime")); c < b.delay(1) {
			t.Fatalf("credited %v below the first step %v", c, b.delay(1))
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
		if c1, c2 := b.credited(n, u1), b.credited(n, u2); c2 > c1 {
			t.Fatalf("uptime %v gives %v, longer uptime %v gives %v", u1, c1, u2, c2)
		}
	})
}

// credited is the delay after the uptime credit, as a decision computes it.
func (b Backoff) credited(n int, uptime time.Duration) time.Duration {
	_, c := b.compiled().owe(int64(max(n, 1)), uptime)
	return time.Duration(c)
}

// creditReference is the uptime-credit rule exactly as docs/semantics.md states
// it, one step at a time: the oracle the credit is held to.
func (b Backoff) creditReference(n int, uptime time.Duration) time.Duration {
	d := b.compiled()
	delay := func(k int) time.Duration { return time.Duration(d.at(int64(k))) }
	n = max(n, 1)
	c, s := max(uptime, 0), n
	for s > 1 && c >= delay(s) {
		c -= delay(s)
		s--
	}
	return min(delay(n), delay(s))
}
