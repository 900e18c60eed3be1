// Command releasecheck checks that the modules of this repository work for
// a user who fetches them, as a module proxy would serve them at a release.
//
// It writes every released module of the checkout, at the version given
// (default v0.1.0), into a module proxy on the file system, made as the go
// command makes one (golang.org/x/mod/zip), then, in a temporary directory
// outside the repository, with GOWORK=off and that proxy ahead of the
// usual one, and without a replace line:
//
//   - builds and runs a program that imports the core, retry, retryhttp,
//     queuekit, attemptlog, riverretry, otelretry and otelriver;
//   - builds and runs a River user's program from riverretry alone, and
//     checks that it links no simulator (fleet) and no renderer;
//   - does the same for a JetStream user's, from natsretry and otelnats;
//   - builds a program with the vet module's analyzer and golangci-lint
//     plugin;
//   - checks that the module graph of a program that imports only
//     otelretry holds no River, no PostgreSQL driver, no SQLite and no
//     NATS;
//   - installs the command, retrypolicy-vet and retrypolicy-deadletter
//     with go install at the version, and runs them.
//
// Run it from the repository's root: go run -C .ci/release . [-version v0.1.0]
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// root is the path of the repository's root module.
const root = "github.com/retrypolicy/retrypolicy"

// released are the modules a user imports, by directory; devOnly are the
// workspace's other modules, never released. Every module of go.work is
// one or the other: a new module must be placed.
var (
	released = []string{".", "riverretry", "natsretry", "retrygrpc", "otelretry", "otelretry/otelriver", "otelretry/otelnats", "vet", "deadletter"}
	devOnly  = []string{"bench", "e2e", "examples/breaker"}
)

func main() {
	version := flag.String("version", "v0.1.0", "the version the modules are released at")
	flag.Parse()
	if err := run(*version); err != nil {
		fmt.Fprintln(os.Stderr, "releasecheck:", err)
		os.Exit(1)
	}
}

func run(version string) error {
	repo, err := filepath.Abs("../..")
	if err != nil {
		return err
	}
	if err := checkPlaced(repo); err != nil {
		return err
	}
	if err := checkReadme(repo); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "releasecheck-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	proxy := filepath.Join(work, "proxy")
	for _, dir := range released {
		path, err := publish(proxy, filepath.Join(repo, dir), version)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		fmt.Printf("published %s@%s\n", path, version)
	}
	env, err := userEnv(work, proxy)
	if err != nil {
		return err
	}
	for _, p := range programs {
		if err := p.check(filepath.Join(work, p.name), env, version); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
	}
	return installCommand(work, env, version)
}

// installCommand installs the command as the README says, with go install
// at the version (which refuses a module whose go.mod replaces anything),
// and runs its main job.
func installCommand(work string, env []string, version string) error {
	bin := filepath.Join(work, "bin")
	env = append(env, "GOBIN="+bin)
	if _, err := goIn(work, env, "install", root+"/cmd/retrypolicy@"+version); err != nil {
		return err
	}
	out, err := exec.Command(filepath.Join(bin, "retrypolicy"), "plan").Output()
	if err != nil || !strings.Contains(string(out), `"strategy":"unless_stopped"`) {
		return fmt.Errorf("the installed command's plan: %v\n%s", err, out)
	}
	fmt.Printf("command: go install %s/cmd/retrypolicy@%s, and its plan runs\n", root, version)
	if _, err := goIn(work, env, "install", root+"/vet/cmd/retrypolicy-vet@"+version); err != nil {
		return err
	}
	out, err = exec.Command(filepath.Join(bin, "retrypolicy-vet"), "-V=full").Output()
	if err != nil || !strings.Contains(string(out), "retrypolicy-vet version") {
		return fmt.Errorf("the installed retrypolicy-vet -V=full: %v\n%s", err, out)
	}
	fmt.Printf("vet: go install %s/vet/cmd/retrypolicy-vet@%s, and it runs\n", root, version)
	if _, err := goIn(work, env, "install", root+"/deadletter/cmd/retrypolicy-deadletter@"+version); err != nil {
		return err
	}
	out, err = exec.Command(filepath.Join(bin, "retrypolicy-deadletter"), "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "usage: retrypolicy-deadletter") {
		return fmt.Errorf("the installed retrypolicy-deadletter --help: %v\n%s", err, out)
	}
	fmt.Printf("deadletter: go install %s/deadletter/cmd/retrypolicy-deadletter@%s, and it runs\n", root, version)
	return nil
}

// checkReadme returns an error when the README's loop of replace lines for
// a checkout does not name every released module: a module added to the
// release must be added there too.
func checkReadme(repo string) error {
	readme, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		return err
	}
	var want []string
	for _, d := range released {
		if d == "." {
			want = append(want, `""`)
		} else {
			want = append(want, "/"+d)
		}
	}
	line := "for m in " + strings.Join(want, " ") + "; do"
	if !strings.Contains(string(readme), line) {
		return fmt.Errorf("README.md's replace lines for a checkout must loop over every released module: %q", line)
	}
	return nil
}

// checkPlaced returns an error for a module of go.work that is neither
// released nor development-only.
func checkPlaced(repo string) error {
	out, err := exec.Command("go", "list", "-C", repo, "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return fmt.Errorf("go list -m: %w", err)
	}
	placed := map[string]bool{}
	for _, d := range append(append([]string{}, released...), devOnly...) {
		placed[filepath.Join(repo, d)] = true
	}
	for _, d := range strings.Fields(string(out)) {
		if !placed[d] {
			return fmt.Errorf("the module in %s is neither released nor development-only: place it in .ci/release/main.go", d)
		}
	}
	return nil
}

// publish writes the module in dir at version into the file-system proxy,
// as a proxy serves it: its .info, .mod and .zip, and its version list.
func publish(proxy, dir, version string) (string, error) {
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	path := modulePath(gomod)
	escaped, err := module.EscapePath(path)
	if err != nil {
		return "", err
	}
	at := filepath.Join(proxy, escaped, "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return "", err
	}
	var z bytes.Buffer
	if err := zip.CreateFromDir(&z, module.Version{Path: path, Version: version}, dir); err != nil {
		return "", err
	}
	files := map[string][]byte{
		version + ".zip":  z.Bytes(),
		version + ".mod":  gomod,
		version + ".info": fmt.Appendf(nil, `{"Version":%q,"Time":"2026-12-03T00:00:00Z"}`, version),
		"list":            []byte(version + "\n"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			return "", err
		}
	}
	return path, nil
}

// modulePath is the path a go.mod declares.
func modulePath(gomod []byte) string {
	for line := range strings.Lines(string(gomod)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// userEnv is the environment of a user outside the repository: no
// workspace, the released modules from the file-system proxy, everything
// else from the module cache's downloads or the usual proxy, and a module
// cache of its own, so that a module published at the same version in an
// earlier run is not taken from the cache. Checksums are not looked up:
// the check is of the modules' requirements, not of the downloads.
func userEnv(work, proxy string) ([]string, error) {
	out, err := exec.Command("go", "env", "GOMODCACHE", "GOPROXY").Output()
	if err != nil {
		return nil, fmt.Errorf("go env: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		return nil, errors.New("go env: unexpected output")
	}
	proxies := "file://" + filepath.ToSlash(proxy) + ",file://" + filepath.ToSlash(filepath.Join(lines[0], "cache", "download")) + "," + lines[1]
	return append(os.Environ(), "GOWORK=off", "GOPROXY="+proxies, "GOSUMDB=off", "GOFLAGS=-mod=mod -modcacherw",
		"GOMODCACHE="+filepath.Join(work, "modcache")), nil
}
