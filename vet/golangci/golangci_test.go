package golangci_test

import (
	"testing"

	"github.com/golangci/plugin-module-register/register"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/tools/go/analysis"

	_ "github.com/retrypolicy/retrypolicy/vet/golangci"

	"github.com/retrypolicy/retrypolicy/vet"
)

// TestRegistered: golangci-lint finds the plugin by its name, with type
// information, and it is the analyzer.
func TestRegistered(t *testing.T) {
	newPlugin, err := register.GetPlugin("retrypolicy")
	require.NoError(t, err)
	p, err := newPlugin(nil)
	require.NoError(t, err)
	analyzers, err := p.BuildAnalyzers()
	require.NoError(t, err)
	assert.Equal(t, []*analysis.Analyzer{vet.Analyzer}, analyzers)
	assert.Equal(t, register.LoadModeTypesInfo, p.GetLoadMode())
}
