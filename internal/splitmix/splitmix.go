// Package splitmix is SplitMix64, the one source of pseudo-random numbers
// of the library: the jitter's mixing and the simulations' draws.
package splitmix

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
