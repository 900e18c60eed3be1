// Command retrypolicy-vet reports retry traps in Go code: invalid and linted strategies, nested loops, ignored contexts.
//
// It runs the analyzer of package vet alone, on packages:
//
//	retrypolicy-vet ./...
//	retrypolicy-vet -fix ./...   # applies the suggested fixes
//
// or under go vet, as its tool:
//
//	go vet -vettool=$(which retrypolicy-vet) ./...
package main

import (
	"golang.org/x/tools/go/analysis/singlechecker"

	"github.com/retrypolicy/retrypolicy/vet"
)

func main() { singlechecker.Main(vet.Analyzer) }
