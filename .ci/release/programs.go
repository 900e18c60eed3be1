package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// program is a user's program outside the repository: its source, the
// modules it adds with go get, and what its output and its build must
// show.
type program struct {
	name    string
	modules []string // module paths below root, "" for root itself
	source  string
	want    string                                     // the program's output
	extra   func(name, dir string, env []string) error // further checks, or nil
}

var programs = []program{
	{
		name:    "everything",
		modules: []string{"", "/riverretry", "/otelretry", "/otelretry/otelriver"},
		source: `package main

import (
	"fmt"
	"net/http"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/attemptlog"
	"github.com/retrypolicy/retrypolicy/otelretry"
	"github.com/retrypolicy/retrypolicy/otelretry/otelriver"
	"github.com/retrypolicy/retrypolicy/queuekit"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
	"github.com/retrypolicy/retrypolicy/riverretry"
)

func main() {
	at := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	d, err := retrypolicy.Decide(retrypolicy.Default(), []time.Time{at}, 0, 1, at)
	check(err)
	_, err = retryhttp.NewTransport(http.DefaultTransport, retrypolicy.Default())
	check(err)
	in, err := otelretry.New()
	check(err)
	hooks, err := otelriver.Hooks(in)
	check(err)
	_, err = riverretry.New(riverretry.Config{Hooks: hooks})
	check(err)
	_ = retry.Permanent(nil)
	_ = attemptlog.Attempt{}
	fmt.Println(d.Action, d.Due.Sub(at), queuekit.Seed(42) == retrypolicy.SeedFromString("42"))
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}
`,
		want: "wait 1s true\n",
	},
	{
		name:    "river",
		modules: []string{"/riverretry"},
		source: `package main

import (
	"fmt"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/riverretry"
	"github.com/riverqueue/river"
)

func main() {
	policy, err := riverretry.New(riverretry.Config{Default: retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5}})
	if err != nil {
		panic(err)
	}
	var cfg river.Config
	if err := policy.Install(&cfg); err != nil {
		panic(err)
	}
	fmt.Println(cfg.MaxAttempts == riverretry.MaxAttempts)
}
`,
		want:  "true\n",
		extra: linksNoSimulator,
	},
	{
		name:    "otel",
		modules: []string{"/otelretry"},
		source: `package main

import (
	"fmt"

	"github.com/retrypolicy/retrypolicy/otelretry"
)

func main() {
	_, err := otelretry.New()
	fmt.Println(err == nil)
}
`,
		want:  "true\n",
		extra: holdsNoQueue,
	},
	{
		name:    "grpc",
		modules: []string{"/retrygrpc", "/otelretry"},
		source: `package main

import (
	"fmt"

	"google.golang.org/grpc"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/otelretry"
	"github.com/retrypolicy/retrypolicy/retrygrpc"
)

func main() {
	in, err := otelretry.New()
	if err != nil {
		panic(err)
	}
	method := "/inventory.Stock/Get"
	retrying, err := retrygrpc.UnaryClientInterceptor(retrypolicy.Default(), append(in.Options("grpc", ""), retrygrpc.WithSafeMethods(method))...)
	fmt.Println(err == nil && grpc.WithUnaryInterceptor(retrying) != nil, retrygrpc.RetriedBelowTrailer)
}
`,
		want:  "true retried-below\n",
		extra: linksNoSimulator,
	},
	{
		name:    "nats",
		modules: []string{"/natsretry", "/otelretry/otelnats"},
		source: `package main

import (
	"fmt"

	"github.com/retrypolicy/retrypolicy/natsretry"
	"github.com/retrypolicy/retrypolicy/otelretry"
	"github.com/retrypolicy/retrypolicy/otelretry/otelnats"
)

func main() {
	in, err := otelretry.New()
	if err != nil {
		panic(err)
	}
	hooks, err := otelnats.Hooks(in, nil)
	fmt.Println(err == nil && hooks.Decided != nil, natsretry.HeaderStrategy)
}
`,
		want:  "true Retry-Strategy\n",
		extra: linksNoSimulator,
	},
	{
		name:    "vet",
		modules: []string{"/vet"},
		source: `package main

import (
	"fmt"

	"github.com/golangci/plugin-module-register/register"

	"github.com/retrypolicy/retrypolicy/vet"
	_ "github.com/retrypolicy/retrypolicy/vet/golangci"
)

func main() {
	_, err := register.GetPlugin("retrypolicy")
	fmt.Println(vet.Analyzer.Name, err == nil)
}
`,
		want: "retrypolicy true\n",
	},
}

// check writes the program in dir, adds its modules at version with go get
// as a user would, runs it, and makes its further checks.
func (p program) check(dir string, env []string, version string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(p.source), 0o644); err != nil {
		return err
	}
	if _, err := goIn(dir, env, "mod", "init", "example.com/"+p.name); err != nil {
		return err
	}
	args := []string{"get"}
	for _, m := range p.modules {
		args = append(args, root+m+"@"+version)
	}
	if _, err := goIn(dir, env, args...); err != nil {
		return err
	}
	if _, err := goIn(dir, env, "mod", "tidy"); err != nil {
		return err
	}
	out, err := goIn(dir, env, "run", ".")
	if err != nil {
		return err
	}
	if out != p.want {
		return fmt.Errorf("printed %q, want %q", out, p.want)
	}
	fmt.Printf("%s: go get %s, built and ran: %s", p.name, strings.Join(args[1:], " "), out)
	if p.extra != nil {
		return p.extra(p.name, dir, env)
	}
	return nil
}

// linksNoSimulator checks that the program links no fleet package and no
// renderer of the command's.
func linksNoSimulator(name, dir string, env []string) error {
	deps, err := goIn(dir, env, "list", "-deps", ".")
	if err != nil {
		return err
	}
	var ours []string
	for _, pkg := range strings.Fields(deps) {
		if strings.HasPrefix(pkg, root) {
			ours = append(ours, "retrypolicy"+strings.TrimPrefix(pkg, root))
			if strings.Contains(pkg, "/fleet") || strings.Contains(pkg, "/front") || strings.Contains(pkg, "/httpapi") {
				return fmt.Errorf("links %s", pkg)
			}
		}
	}
	fmt.Printf("%s: go list -deps names of retrypolicy only: %s\n", name, strings.Join(ours, " "))
	return nil
}

// holdsNoQueue checks that the program's module graph holds no River, no
// PostgreSQL driver, no SQLite, no NATS and no gRPC.
func holdsNoQueue(name, dir string, env []string) error {
	all, err := goIn(dir, env, "list", "-m", "all")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(all, "\n") {
		for _, banned := range []string{"github.com/riverqueue/", "github.com/jackc/", "modernc.org/sqlite", "github.com/nats-io/", "google.golang.org/grpc"} {
			if strings.HasPrefix(line, banned) {
				return fmt.Errorf("the module graph holds %s", line)
			}
		}
	}
	fmt.Printf("%s: go list -m all holds %d modules, none of River, pgx, SQLite, NATS or gRPC\n", name, len(strings.Split(strings.TrimSpace(all), "\n")))
	return nil
}

// goIn runs the go command in dir with env, and returns what it printed.
func goIn(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env = dir, env
	var out, errs strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, errs.String())
	}
	return out.String(), nil
}
