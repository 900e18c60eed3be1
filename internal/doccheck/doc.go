// Package doccheck holds tests of the documentation of every package in the repository.
//
// Its tests read each package's comments as go doc and pkg.go.dev do: every
// doc link must resolve, and every package doc must open with a short
// sentence.
package doccheck
