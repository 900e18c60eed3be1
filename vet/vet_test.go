package vet_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/retrypolicy/retrypolicy/vet"
)

// The packages of testdata (a module whose retrypolicy is this
// checkout's) hold each finding beside what draws none; their want
// comments are what the analyzer must report, and nothing else.

// TestAnalyzer runs the packages of strategies (each strategy check),
// nested (loops through two packages, by facts) and contexts, loaded once.
func TestAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), vet.Analyzer, "./strategies", "./nested/...", "./contexts", "./options", "./hedging")
}

// TestSuggestedFixes applies each fix and compares the file with
// fixes.go.golden.
func TestSuggestedFixes(t *testing.T) {
	analysistest.RunWithSuggestedFixes(t, analysistest.TestData(), vet.Analyzer, "./fixes")
}
