package e2e

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

var update = flag.Bool("update", false, "write the screenshots the README shows to docs/serve-page.png and docs/serve-page-narrow.png")

// browser returns the path of a Chromium the test can drive, or skips.
func browser(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Skip("no headless Chromium (Debian: apt-get install chromium); .ci/run installs it")
	return ""
}

// readSources reads the library's and the command's sources, so that go
// test's cache of this test's result depends on them: the test builds the
// command in another process, which the cache does not see.
func readSources(t *testing.T) {
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch name := d.Name(); {
		case d.IsDir() && (name == ".git" || name == "testdata" || name == "bench" || name == "e2e" || name == "riverretry" || name == "examples" || name == "docs"):
			return filepath.SkipDir
		case !d.IsDir() && (strings.HasSuffix(name, ".go") || strings.HasSuffix(name, ".html") || strings.HasSuffix(name, ".js") || name == "go.mod"):
			_, err = os.ReadFile(path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// serve builds the command, starts retrypolicy serve on a free loopback
// port and returns its address; the server stops with the test.
func serve(t *testing.T) string {
	readSources(t)
	bin := filepath.Join(t.TempDir(), "retrypolicy")
	build := exec.Command("go", "build", "-o", bin, "./cmd/retrypolicy")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the command: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	said := bufio.NewReader(stderr)
	line, err := said.ReadString('\n')
	if err != nil {
		t.Fatalf("reading where the server listens: %v", err)
	}
	// The server stops gracefully on SIGINT, and says so.
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		rest, _ := io.ReadAll(said)
		if err := cmd.Wait(); err != nil || !strings.Contains(string(rest), "retrypolicy: stopped") {
			t.Errorf("on SIGINT the server ended with %v, saying %q", err, rest)
		}
	})
	addr := regexp.MustCompile(`http://\S+`).FindString(line)
	if addr == "" {
		t.Fatalf("the server said %q, not where it listens", line)
	}
	return addr
}

// TestPageShowsErrorsInPlaceAndWhatAStrategyDoes drives the page as a
// person would: it picks bounded, types an invalid max_attempts and sees
// the library's error under the field, fixes it and sees the flags, the
// plan, lint's findings and the fleet's chart follow, and takes the
// screenshot the README shows.
func TestPageShowsErrorsInPlaceAndWhatAStrategyDoes(t *testing.T) {
	ctx := newBrowser(t)
	addr := serve(t)
	var consoleErrors []string // the page's policy refusing something shows here
	var mu sync.Mutex
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*cdpruntime.EventExceptionThrown); ok {
			mu.Lock()
			consoleErrors = append(consoleErrors, e.ExceptionDetails.Text)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}

	// wait waits until the element's text holds want ("" : until it is
	// empty), and says what it read when it does not.
	wait := func(id, want string) {
		t.Helper()
		cond := `document.getElementById(%q).textContent.includes(%q)`
		if want == "" {
			cond = `document.getElementById(%q).textContent === %q`
		}
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(cond, id, want), chromedp.WithPollingTimeout(2*time.Minute))); err != nil {
			got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`document.getElementById(%q).textContent`, id)))
			t.Fatalf("#%s reads %q, not %q: %v", id, got, want, err)
		}
	}
	// typeInto replaces a field's text as a person would, key by key.
	typeInto := func(id, text string) {
		t.Helper()
		clear := fmt.Sprintf(`(() => { const e = document.getElementById(%q); e.value = ""; return e.value === ""; })()`, id)
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](clear)); err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID(id), text)); err != nil {
			t.Fatal(err)
		}
	}

	// A fresh load on a phone's width opens on a comparison that shows
	// something: Amp's bounded example strategy beside the default, under the
	// controller's minute.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(420, 900)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(addr+"/")); err != nil {
		t.Fatal(err)
	}
	wait("canonical", `{"strategy":"bounded","max_attempts":5,"window_secs":3600,"backoff":{"kind":"exponential","base_delay_secs":1,"multiplier":2.0,"max_delay_secs":60}}`)
	wait("lint-tick", "a controller checks every 1m")
	wait("lint", "Gives up after 4m (failure 5)")
	wait("lint-b-name", "default")
	wait("lint-b", "window-forgets")
	wait("compare-canonical", `"multiplier":2.0`)
	wait("layers-summary", "the calls multiply with the layers")
	wait("collapse-summary", "none: recovered")
	wait("tail-summary", "hedge: p50 ")
	checkNarrowDetails(t, ctx)
	screenshot(t, ctx, 420, "serve-page-narrow.png")
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 1500)); err != nil {
		t.Fatal(err)
	}

	// A strategy that never gives up: the layers panel says why it does
	// not multiply.
	pick(t, ctx, "strategy", "unless_stopped")
	wait("layers-summary", "This strategy never gives up, so no layer passes a failure up")
	// A person picks bounded from the list.
	pick(t, ctx, "strategy", "bounded")
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!document.getElementById("max_attempts").disabled`)); err != nil {
		t.Fatal("max_attempts is still disabled under bounded: ", err)
	}
	typeInto("max_attempts", "0")
	wait("err-max_attempts", "max_attempts: must be at least 1, got 0")
	typeInto("max_attempts", "3")
	wait("err-max_attempts", "")
	wait("canonical", `"max_attempts":3`)
	wait("plan-table", "FATAL (attempts_exhausted)")
	wait("lint", "Gives up after 2m (failure 3)") // a minute apart under the tick
	wait("sim-summary", "1000 jobs FATAL")
	// With no tick, the same strategy gives up within seconds.
	typeInto("tick", "0")
	wait("lint-tick", "each retry exactly when due")
	wait("lint", "gives-up-fast")
	typeInto("tick", "1m")
	wait("lint-tick", "a controller checks every 1m")

	// Comparing: the strategy picked beside this one, in lint, the plans
	// and the fleet's chart.
	pick(t, ctx, "compare", "bounded-hour")
	wait("lint-b-name", "bounded-hour")
	wait("lint-b", "Gives up after 4m (failure 5)")
	wait("plan-table", "bounded-hour")
	wait("plan-b-name", "bounded-hour")
	wait("sim-summary", "bounded-hour: ")
	lines, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#sim-chart polyline.load").length`))
	if err != nil || lines != 2 {
		t.Errorf("the fleet's chart has %d lines (%v), not this strategy's and bounded-hour's", lines, err)
	}
	// The two plans share their time axis: the same last tick.
	lastTick := func(id string) string {
		t.Helper()
		tick, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`[...document.querySelectorAll("#%s svg text")].map((e) => e.textContent).filter((t) => t.startsWith("+")).pop() || ""`, id)))
		if err != nil {
			t.Fatal(err)
		}
		return tick
	}
	if a, b := lastTick("plan-chart"), lastTick("plan-chart-b"); a == "" || a != b {
		t.Errorf("the plans' axes end at %q and %q, not on one axis", a, b)
	}
	wait("layers-summary", "client only: ")
	// The layers view offers a budget at each layer: a token one and a
	// windowed one, side by side.
	pick(t, ctx, "layers_budget", "both")
	wait("layers-summary", "every layer, windowed budget: ")
	wait("layers-summary", "client only, token budget: ")
	checkOneDurationFormat(t, ctx)

	flags, err := chromedp.Run(ctx, chromedp.Value(chromedp.ID("flags")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(flags, "--retry-strategy bounded --retry-max-attempts 3") {
		t.Errorf("the flags read %q", flags)
	}
	chart, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.ID("sim-chart")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(chart, "<svg") || !strings.Contains(chart, "FATAL") {
		t.Errorf("the fleet's chart is missing or without its FATAL jobs: %.200s", chart)
	}
	mu.Lock()
	if len(consoleErrors) > 0 {
		t.Errorf("the page threw: %q", consoleErrors)
	}
	mu.Unlock()
	fits, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const f = document.getElementById("flags"); return f.scrollHeight <= f.clientHeight + 2; })()`))
	if err != nil || !fits {
		t.Errorf("the flags' box cuts its text (%v)", err)
	}
	screenshot(t, ctx, 1400, "serve-page.png")
}

// checkNarrowDetails checks the page at a phone's width: one column,
// nothing wider than the screen, the flags' box showing all its lines,
// and the canonical JSON wrapping only between names and values.
func checkNarrowDetails(t *testing.T, ctx context.Context) {
	t.Helper()
	columns, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector("main")).gridTemplateColumns`))
	if err != nil || strings.Contains(strings.TrimSpace(columns), " ") {
		t.Errorf("at 420 px the page has the columns %q (%v), not one", columns, err)
	}
	wide, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	if err != nil || wide > 420 {
		t.Errorf("at 420 px the page is %d px wide (%v)", wide, err)
	}
	// The charts have arrived (and with them a scroll bar) before the
	// flags' box is measured.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector("#layers-chart svg") !== null`, chromedp.WithPollingTimeout(2*time.Minute))); err != nil {
		t.Fatal(err)
	}
	fits, err := chromedp.Run(ctx, chromedp.Poll[bool](`(() => { const f = document.getElementById("flags"); return f.scrollHeight <= f.clientHeight + 2; })()`, chromedp.WithPollingTimeout(30*time.Second)))
	if err != nil || !fits {
		t.Errorf("at 420 px the flags' box cuts its text (%v)", err)
	}
	// Where each line of the canonical JSON starts: a line that starts
	// anywhere but after a comma or a colon broke a name or a value.
	breaks, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
		const out = [];
		for (const id of ["canonical", "compare-canonical"]) {
			const pre = document.getElementById(id), text = pre.textContent, r = document.createRange();
			let top = null, node = null, at = 0;
			const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
			let offset = 0;
			while ((node = walker.nextNode())) {
				for (let i = 0; i < node.length; i++) {
					r.setStart(node, i); r.setEnd(node, i + 1);
					const y = r.getBoundingClientRect().top;
					if (top !== null && y > top + 2 && !",:".includes(text[offset + i - 1])) out.push(id + ": " + text.slice(offset + i - 8, offset + i) + " / " + text.slice(offset + i, offset + i + 8));
					top = y;
				}
				offset += node.length;
			}
		}
		return out;
	})()`))
	if err != nil || len(breaks) > 0 {
		t.Errorf("at 420 px the JSON wraps inside a name or value: %q (%v)", breaks, err)
	}
}

// pick chooses a value of a select as a person does: the value, and its
// change event.
func pick(t *testing.T, ctx context.Context, id, value string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
		const s = document.getElementById(%q);
		s.value = %q;
		return s.dispatchEvent(new Event("change"));
	})()`, id, value))); err != nil {
		t.Fatal(err)
	}
}

// checkOneDurationFormat: the page writes durations as lint does (34m8s),
// never in decimal minutes or hours as it once did ("34.1 min", "+1.14 h").
func checkOneDurationFormat(t *testing.T, ctx context.Context) {
	t.Helper()
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		t.Fatal(err)
	}
	if old := regexp.MustCompile(`\d(\.\d+)? (min|h|s)\b`).FindString(text); old != "" {
		t.Errorf("the page writes a duration as %q, not as lint does", old)
	}
	for secs, want := range map[string]string{"2048": "34m8s", "3600": "1h", "90": "1m30s", "172800": "2d", "0.5": "500ms", "1022.996": "17m2.996s"} {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string]("dur("+secs+")"))
		if err != nil || got != want {
			t.Errorf("dur(%s) = %q (%v), not %q", secs, got, err, want)
		}
	}
}

// screenshot sets the viewport's width, and takes a picture of the whole
// page: a PNG of that width, written to docs/ with -update.
func screenshot(t *testing.T, ctx context.Context, width int64, name string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 900)); err != nil {
		t.Fatal(err)
	}
	// The page has taken the new width before the picture is taken.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf("window.innerWidth === %d", width))); err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: a PNG
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	if int64(cfg.Width) != width {
		t.Errorf("the screenshot at %d px is %d px wide", width, cfg.Width)
	}
	out := filepath.Join(t.TempDir(), name)
	if *update {
		out = filepath.Join("..", "docs", name)
	}
	if err := os.WriteFile(out, shot, 0o644); err != nil {
		t.Fatal(err)
	}
}

// newBrowser starts headless Chromium for the test, or skips without it.
func newBrowser(t *testing.T) context.Context {
	exe := browser(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1500))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	// A bound against a browser that hangs, not a measure of speed: on a
	// machine busy with other work the page takes a minute or more.
	ctx, cancelTime := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(cancelTime)
	return ctx
}

// TestAnotherSiteCannotDriveTheServer: a page on another site that posts
// to the server, as a page an operator opens could, is refused: the
// browser sends the request (no-cors needs no permission), and the server
// answers 403 without running it.
func TestAnotherSiteCannotDriveTheServer(t *testing.T) {
	ctx := newBrowser(t)
	addr := serve(t)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><title>evil</title><script>
fetch(%q, {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: "null"})
  .then(() => { document.title = "sent"; }, () => { document.title = "failed"; });
</script>`, addr+"/v1/lint")
	}))
	defer evil.Close()
	statuses := make(chan int64, 4)
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventResponseReceived); ok && strings.HasSuffix(e.Response.URL, "/v1/lint") {
			select {
			case statuses <- e.Response.Status:
			default:
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	// The other site: localhost, where the server is 127.0.0.1.
	page := strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)
	if err := chromedp.Do(ctx, chromedp.Navigate(page)); err != nil {
		t.Fatal(err)
	}
	select {
	case status := <-statuses:
		if status != 403 {
			t.Errorf("the server answered another site's request with %d, not 403", status)
		}
	case <-ctx.Done():
		t.Fatal("the other site's request was never answered")
	}
}
