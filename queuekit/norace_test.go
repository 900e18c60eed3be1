//go:build !race

package queuekit_test

// raceEnabled reports that the test runs under the race detector.
const raceEnabled = false
