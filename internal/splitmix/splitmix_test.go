package splitmix

import "testing"

// TestNextIsSplitMix64: the first outputs from state 0 are SplitMix64's
// published ones (the reference generator's sequence for seed 0).
func TestNextIsSplitMix64(t *testing.T) {
	state := uint64(0)
	for i, want := range []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f} {
		if got := Next(&state); got != want {
			t.Fatalf("output %d: %#x, want %#x", i+1, got, want)
		}
	}
}
