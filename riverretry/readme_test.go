package riverretry

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadmeFirstProgramIsTheExample: the README's first program is the
// body of Example, which go test runs, so that the setup it shows
// (SQLite's one connection, the migration, the poll and its cooldown)
// works as written.
func TestReadmeFirstProgramIsTheExample(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	text := string(src)
	from := strings.Index(text, "func Example() {\n")
	to := strings.Index(text, "\t// Output:")
	require.True(t, from >= 0 && to > from, "Example and its output comment")
	var body strings.Builder
	for _, line := range strings.Split(strings.TrimRight(text[from+len("func Example() {\n"):to], "\n"), "\n") {
		body.WriteString(strings.TrimPrefix(line, "\t") + "\n")
	}
	assert.Contains(t, string(readme), "```go\n"+body.String()+"```\n", "README.md's first program differs from Example: copy Example's body into it")
}
