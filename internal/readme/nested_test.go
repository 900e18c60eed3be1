package readme

import "testing"

// TestNestedModulesREADMEsOpenWithTheirFirstProgram: the README of each
// nested module opens with its first program, as it is, so that what a
// reader copies compiles, imports included. The check lives here, in the
// root module, because a module released apart must not import this one's
// internal packages, not even in a test.
func TestNestedModulesREADMEsOpenWithTheirFirstProgram(t *testing.T) {
	for _, module := range []string{"riverretry", "otelretry", "natsretry"} {
		if err := OpensWith("../../"+module+"/README.md", "../../"+module+"/examples/first/main.go"); err != nil {
			t.Errorf("%s: %v", module, err)
		}
	}
}
