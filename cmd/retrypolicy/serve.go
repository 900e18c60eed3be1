package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/retrypolicy/retrypolicy/httpapi"
)

// grace is how long a stopping server waits for the requests it is
// answering; the work in them stops at once, so they end well within it.
const grace = 10 * time.Second

func (c stdio) runServe(args []string) int {
	sc := c.subcommand("serve", "serve [--addr HOST:PORT] [--allow-host NAME,…]", `Serves the library over HTTP, and at / a page for choosing a strategy by looking at it:
POST /v1/validate, /v1/flags, /v1/decide (a request, or an array of at most 1,000), /v1/plan,
/v1/lint and /v1/simulate, each answering what the subcommand's --json prints; an error is
{"error_code", "error_message", "errors": [{"field", "message"}]}. Every request is bounded:
plans, lints and simulations run a few at once within 5 s each, and a request beyond the
limits is answered 503 with Retry-After at once. Requests from a browser on another site, or
naming another host (DNS rebinding), are refused. It stops gracefully on SIGINT or SIGTERM.`)
	fs, stderr := sc.fs, c.stderr
	addr := fs.String("addr", "127.0.0.1:8080", "the `HOST:PORT` to listen on; loopback unless it says otherwise (:0 picks a free port)")
	allow := fs.String("allow-host", "", "the `NAMES` (comma-separated) that requests may address the server by beside the loopback\nnames and --addr's host, such as the machine's name when it listens on every interface")
	if _, stop := sc.parse(args, 0); stop >= 0 {
		return stop
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(stderr, "retrypolicy: serve:", err)
		return exitIO
	}
	var o httpapi.Options
	if host, _, err := net.SplitHostPort(*addr); err == nil && host != "" {
		o.Hosts = append(o.Hosts, host)
	}
	for _, name := range strings.Split(*allow, ",") {
		if name = strings.TrimSpace(name); name != "" {
			o.Hosts = append(o.Hosts, name)
		}
	}
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	srv := newHTTPServer(ctx, httpapi.New(o))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stderr, "retrypolicy: serving on http://%s (Ctrl-C stops it)\n", ln.Addr())
	select {
	case err := <-served:
		fmt.Fprintln(stderr, "retrypolicy: serve:", err)
		return exitIO
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		fmt.Fprintln(stderr, "retrypolicy: serve: stopping:", err)
		return exitIO
	}
	fmt.Fprintln(stderr, "retrypolicy: stopped")
	return exitOK
}

// newHTTPServer returns the server for h, every request's context a child
// of ctx: when ctx is done (a signal), the work under way stops at once.
// Its timeouts bound slow clients: a request must arrive within 10 s, and
// its answer be read within the work's budget and 10 s more.
func newHTTPServer(ctx context.Context, h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      15 * time.Second,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}
