package vet_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/retrypolicy/retrypolicy/vet"
)

// The packages of testdata (a module whose retrypolicy is this
// checkout's) hold each finding beside what draws none; their want
// comments are what the analyzer must report, and nothing else.

func TestStrategies(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), vet.Analyzer, "./strategies")
}

func TestNestedLoopsThroughPackages(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), vet.Analyzer, "./nested/...")
}

func TestContexts(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), vet.Analyzer, "./contexts")
}

// TestSuggestedFixes applies each fix and compares the file with
// fixes.go.golden.
func TestSuggestedFixes(t *testing.T) {
	analysistest.RunWithSuggestedFixes(t, analysistest.TestData(), vet.Analyzer, "./fixes")
}
