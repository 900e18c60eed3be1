// Command metrics prints the Prometheus metrics of a small flaky workload under otelretry.
//
// It prints the exposition as a scrape of /metrics would
// read them: an operation retried through Retry, one given up, HTTP
// requests through retryhttp against a service that answers 503 first,
// and a retry budget's tokens.
//
//	go run ./examples/metrics   # from otelretry/
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/otelretry"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "metrics:", err)
		os.Exit(1)
	}
}

// strategy retries every millisecond, up to 4 failures within an hour.
var strategy = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 4,
	Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}

// run does the workload and writes the retrypolicy lines of the scrape.
func run(ctx context.Context, out io.Writer) error {
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return err
	}
	in, err := otelretry.New(otelretry.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))))
	if err != nil {
		return err
	}
	budget := retry.DefaultBudget()
	reg, err := in.ObserveBudget("reports", budget)
	if err != nil {
		return err
	}
	defer reg.Unregister()
	if err := workload(ctx, in, budget); err != nil {
		return err
	}
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(registry, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	lines := bufio.NewScanner(rec.Body)
	for lines.Scan() {
		if line := lines.Text(); strings.Contains(line, "retrypolicy_") && !strings.Contains(line, "_bucket{") {
			fmt.Fprintln(out, line)
		}
	}
	return lines.Err()
}

// workload: five operations that fail twice, one that never succeeds, and
// ten requests to a service that answers each first try with 503.
func workload(ctx context.Context, in *otelretry.Instruments, budget *retry.Budget) error {
	for range 5 {
		calls := 0
		if _, err := retry.Do(ctx, strategy, func(ctx context.Context) (int, error) {
			if err := ctx.Err(); err != nil { // the caller gave up: no render
				return 0, err
			}
			if calls++; calls <= 2 {
				return 0, errors.New("renderer busy")
			}
			return calls, nil
		}, append(in.Options("retry", "render"), retry.WithBudget(budget))...); err != nil {
			return err
		}
	}
	_, err := retry.Do(ctx, strategy, func(ctx context.Context) (int, error) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		return 0, errors.New("renderer down")
	}, in.Options("retry", "render")...)
	var gu *retry.GiveUpError
	if !errors.As(err, &gu) {
		return fmt.Errorf("the failing operation did not give up: %v", err)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Retry") == "" { // a first try
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	tr, err := retryhttp.NewTransport(&markRetries{next: srv.Client().Transport}, strategy, in.Options("http", "fetch")...)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: tr}
	for range 10 {
		resp, err := client.Get(srv.URL)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return nil
}

// markRetries marks the requests the transport sends again, so that the
// service can tell them from first tries.
type markRetries struct{ next http.RoundTripper }

func (m *markRetries) RoundTrip(req *http.Request) (*http.Response, error) {
	if retryhttp.Attempt(req.Context()) > 1 {
		req = req.Clone(req.Context())
		req.Header.Set("X-Retry", "1")
	}
	return m.next.RoundTrip(req)
}
