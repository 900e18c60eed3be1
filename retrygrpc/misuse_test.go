package retrygrpc_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAServersOptionsAreOfTheirOwnType: a client interceptor's options
// given to a server interceptor, and a server's to a client, do not
// compile: testdata/misuse, built with the go command, fails at each such
// line and for that reason. (Until the types were apart, a server
// interceptor refused a client's option only at run time.)
func TestAServersOptionsAreOfTheirOwnType(t *testing.T) {
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on the PATH: cannot build testdata/misuse")
	}
	out, err := exec.Command(gocmd, "build", "-o", os.DevNull, "./testdata/misuse").CombinedOutput()
	assert.Error(t, err, "testdata/misuse compiled")
	text := string(out)
	for _, line := range []string{
		"main.go:16:39: cannot use retrygrpc.WithSafeMethods(\"/s.S/M\") (value of struct type retry.Option) as retrygrpc.ServerOption value",
		"main.go:17:40: cannot use retrygrpc.WithCodes(codes.Unavailable) (value of struct type retry.Option) as retrygrpc.ServerOption value",
		"main.go:18:39: cannot use retry.WithNestedRetries() (value of struct type retry.Option) as retrygrpc.ServerOption value",
		"main.go:19:66: cannot use retrygrpc.WithoutMark() (value of struct type retrygrpc.ServerOption) as retry.Option value",
	} {
		assert.True(t, strings.Contains(text, line), "the build's errors lack %q:\n%s", line, text)
	}
	assert.Equal(t, 4, strings.Count(text, "main.go:"), "no other error:\n%s", text)
}
