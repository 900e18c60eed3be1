package vet_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkVetProject times go vet on the repository's root module
// (./..., its tests included) with its own analyzers (tool=govet) and with
// retrypolicy-vet as its tool (tool=retrypolicy-vet), each run with the
// packages compiled already and no vet result cached: go vet keys its
// cache by the tool and its flags, so each govet run sets a flag of its
// own (-printf.funcs) and each retrypolicy-vet run uses a copy of the tool
// with bytes of its own appended.
func BenchmarkVetProject(b *testing.B) {
	dir := b.TempDir()
	tool := filepath.Join(dir, "retrypolicy-vet")
	if out, err := exec.Command("go", "build", "-o", tool, "./cmd/retrypolicy-vet").CombinedOutput(); err != nil {
		b.Fatalf("building the tool: %v\n%s", err, out)
	}
	vet := func(args ...string) {
		cmd := exec.Command("go", append([]string{"vet"}, append(args, "./...")...)...)
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil && cmd.ProcessState.ExitCode() != 1 {
			b.Fatalf("go vet %v: %v\n%s", args, err, out) // 1 is findings (the tests' invalid strategies)
		}
	}
	vet() // compiles what vet needs, once
	for _, impl := range []string{"govet", "retrypolicy-vet"} {
		b.Run("tool="+impl, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				nonce := fmt.Sprintf("%d%d", time.Now().UnixNano(), runs.Add(1))
				args := []string{"-printf.funcs=Nonce" + nonce}
				if impl == "retrypolicy-vet" {
					fresh := filepath.Join(dir, "tool"+nonce)
					copyWith(b, tool, fresh, nonce)
					args = []string{"-vettool=" + fresh}
				}
				b.StartTimer()
				vet(args...)
			}
		})
	}
}

// runs counts the benchmark's runs of go vet, so that each has a nonce of
// its own.
var runs atomic.Int64

// copyWith writes to dst the executable src with nonce appended: the same
// program, with another build ID.
func copyWith(b *testing.B, src, dst, nonce string) {
	data, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(dst, append(data, nonce...), 0o755); err != nil {
		b.Fatal(err)
	}
}
