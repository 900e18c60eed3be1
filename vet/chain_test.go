package vet_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"

	"github.com/retrypolicy/retrypolicy/vet"
)

// chainPackage writes, in a module of its own, a package chain of n functions
// f0 … f(n-1), each calling the next, the last running retry.Do, and a
// retry.Do with WithNestedRetries() whose operation calls f0; and
// literals identical strategy literals that lint warns of (a million
// attempts over a week, each lint a few milliseconds), each given to a
// controller. It returns the module's directory.
func chainPackage(t testing.TB, n, literals int) string {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("package chain\n\nimport (\n\t\"context\"\n\t\"time\"\n\n\t\"github.com/retrypolicy/retrypolicy\"\n\t\"github.com/retrypolicy/retrypolicy/retry\"\n)\n\n")
	b.WriteString("var three = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3, Window: time.Minute}\n\n")
	for i := range n - 1 {
		fmt.Fprintf(&b, "func f%d(ctx context.Context) error { return f%d(ctx) }\n", i, i+1)
	}
	fmt.Fprintf(&b, "func f%d(ctx context.Context) error {\n\t_, err := retry.Do(ctx, three, func(ctx context.Context) (int, error) { return 0, ctx.Err() })\n\treturn err\n}\n\n", n-1)
	b.WriteString("func top(ctx context.Context) {\n\t_, _ = retry.Do(ctx, three, func(ctx context.Context) (int, error) { return 0, f0(ctx) }, retry.WithNestedRetries()) // want `nested-retry`\n}\n\n")
	for i := range literals {
		fmt.Fprintf(&b, "var lit%d = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 1000000, Window: 7 * 24 * time.Hour, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: time.Second, Multiplier: 1.000001}}\n", i)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	mod := "module example.com/chain\n\ngo 1.26.0\n\nrequire github.com/retrypolicy/retrypolicy v0.1.0\n\nreplace github.com/retrypolicy/retrypolicy => " + root + "\n"
	for name, data := range map[string]string{"go.mod": mod, "chain.go": b.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// load loads the package in dir, with its dependencies' syntax, for the
// analyzer to run on.
func load(t testing.TB, dir string) []*packages.Package {
	cfg := &packages.Config{Mode: packages.LoadAllSyntax, Dir: dir, Env: append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")}
	pkgs, err := packages.Load(cfg, ".")
	if err != nil {
		t.Fatal(err)
	}
	if packages.PrintErrors(pkgs) > 0 {
		t.Fatal("the package does not load")
	}
	return pkgs
}

// diagnostics runs the analyzer on pkgs and returns its diagnostics' messages
// in the package itself.
func diagnostics(t testing.TB, pkgs []*packages.Package) []string {
	graph, err := checker.Analyze([]*analysis.Analyzer{vet.Analyzer}, pkgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, act := range graph.Roots {
		if act.Err != nil {
			t.Fatal(act.Err)
		}
		for _, d := range act.Diagnostics {
			msgs = append(msgs, d.Message)
		}
	}
	return msgs
}

// TestAChainsPathIsCut: a chain of 10,000 functions to a retry.Do is said
// in a few hops, not 10,000 (the message was 99,202 bytes).
func TestAChainsPathIsCut(t *testing.T) {
	msgs := diagnostics(t, load(t, chainPackage(t, 10_000, 0)))
	require.Len(t, msgs, 1)
	assert.Contains(t, msgs[0], "this call runs f0 → f1 → f2 → … 9,996 more … → f9999 → retry.Do (3 attempts) inside an operation of retry.Do (3 attempts)")
	assert.Less(t, len(msgs[0]), 500)
}

// TestIdenticalLiteralsAreLintedOnce: 200 identical strategy literals
// are each reported, from one lint: the analysis of a package with 200
// lints as many strategies as that of a package with 1 (the packages it
// imports lint theirs in both). Each lint took 70 to 85 ms.
func TestIdenticalLiteralsAreLintedOnce(t *testing.T) {
	lintsOf := func(literals int) (int64, int) {
		pkgs := load(t, chainPackage(t, 2, literals))
		before := vet.Lints()
		n := 0
		for _, m := range diagnostics(t, pkgs) {
			if strings.HasPrefix(m, "never-fatal: ") {
				n++
			}
		}
		return vet.Lints() - before, n
	}
	one, reported := lintsOf(1)
	require.Equal(t, 1, reported)
	many, reported := lintsOf(200)
	assert.Equal(t, 200, reported, "each literal reported")
	assert.Equal(t, one, many, "lints for 200 identical literals beside 1")
}

// BenchmarkVetChain runs the analyzer on a chain of n functions (the
// package loaded once): linear in n, 10,000 taking at most 6 times 2,500;
// and on 1,000 identical literals.
func BenchmarkVetChain(b *testing.B) {
	for _, c := range []struct {
		name            string
		chain, literals int
	}{{"chain=2500", 2500, 0}, {"chain=10000", 10_000, 0}, {"literals=1000", 2, 1000}} {
		b.Run(c.name, func(b *testing.B) {
			pkgs := load(b, chainPackage(b, c.chain, c.literals))
			for b.Loop() {
				diagnostics(b, pkgs)
			}
		})
	}
}
