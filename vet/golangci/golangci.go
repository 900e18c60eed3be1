// Package golangci registers retrypolicy's analyzer as a golangci-lint module plugin, named retrypolicy.
//
// golangci-lint builds a binary of its own with the plugin in it: list the
// module in .custom-gcl.yml, run golangci-lint custom, then enable the
// linter in .golangci.yml (vet/README.md shows both files).
package golangci

import (
	"github.com/golangci/plugin-module-register/register"
	"golang.org/x/tools/go/analysis"

	"github.com/retrypolicy/retrypolicy/vet"
)

func init() { register.Plugin("retrypolicy", New) }

// New returns the plugin; it takes no settings.
func New(any) (register.LinterPlugin, error) { return plugin{}, nil }

type plugin struct{}

// BuildAnalyzers returns vet.Analyzer.
func (plugin) BuildAnalyzers() ([]*analysis.Analyzer, error) {
	return []*analysis.Analyzer{vet.Analyzer}, nil
}

// GetLoadMode asks for type information, which the analyzer needs.
func (plugin) GetLoadMode() string { return register.LoadModeTypesInfo }
