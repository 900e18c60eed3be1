package vet

// Lints returns how many strategies the analyzer has linted in this
// process, for a test to count.
func Lints() int64 { return lints.Load() }
