// Package splitmix is SplitMix64, the one source of pseudo-random numbers
// of the library: the jitter's mixing and the simulations' draws.
package splitmix

import "time"

// Mix is the SplitMix64 finalizer: a bijection on uint64 whose output bits
// each depend on every input bit.
func Mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Next advances a SplitMix64 state and returns its next output.
func Next(state *uint64) uint64 {
	*state += 0x9e3779b97f4a7c15
	return Mix(*state)
}

// Unit derives a jitter's u in [0, 1) from a seed and the failure being
// decided, the n-th at the instant at, as a 53-bit fraction u53/2^53: the
// instant (seconds and nanoseconds since the Unix epoch, whatever its
// location) and the count are spread by odd multipliers and folded into
// one word, and two finalizer rounds mix it with the seed. The same seed
// and failure always give the same u.
func Unit(seed uint64, at time.Time, n int) uint64 {
	sec, nsec := at.Unix(), at.Nanosecond()
	f := uint64(sec)*0x9e3779b97f4a7c15 ^ uint64(nsec)*0xc2b2ae3d27d4eb4f ^ uint64(n)*0x165667b19e3779f9
	return Mix(seed^Mix(f)) >> 11
}
