// Package inner runs retry loops for callers in other packages.
package inner

import (
	"context"
	"net/http"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

// Fetch runs a loop of three attempts.
func Fetch(ctx context.Context) error { // want Fetch:`runs retry.Do \(3 attempts\)`
	_, err := retry.Do(ctx, retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3},
		func(ctx context.Context) (int, error) { return 0, ctx.Err() })
	return err
}

// Through runs Fetch's loop, one call further.
func Through(ctx context.Context) error { // want Through:`runs Fetch → retry.Do \(3 attempts\)`
	return Fetch(ctx)
}

// Plain runs no loop.
func Plain(ctx context.Context) error { return ctx.Err() }

// Get sends a request through a client over a retrying transport.
func Get(ctx context.Context, url string) error { // want Get:`runs an http.Client over a retryhttp transport`
	t, err := retryhttp.NewTransport(http.DefaultTransport, retrypolicy.Default())
	if err != nil {
		return err
	}
	client := &http.Client{Transport: t}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
