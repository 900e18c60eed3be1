//go:build !race

package retryhttp

// raceEnabled reports that the test runs under the race detector.
const raceEnabled = false
