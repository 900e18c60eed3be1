// Package options is an adapter of its own (WithCount, New) beside
// retryhttp, and gives each one's options where they are refused, and
// where they are taken.
package options

import (
	"context"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

type config struct{ n int }

var count = retry.NewAdapterSetting[config]("options.WithCount")

// WithCount is an option of this package's adapter.
func WithCount(n int) retry.Option { // want WithCount:`makes an option of example.com/vettest/options`
	return count.Option(func(c *config) { c.n = n })
}

// New is this package's adapter: it takes its own options.
func New(opts ...retry.Option) error {
	var c config
	_, err := retry.ApplyAdapterOptions(&c, opts)
	return err
}

// Calls gives options to loops and adapters.
func Calls(ctx context.Context, s retrypolicy.Strategy) { // want Calls:`runs retry.Do`
	op := func(ctx context.Context) (int, error) { return 0, ctx.Err() }
	_, _ = retry.Do(ctx, s, op, retryhttp.WithClassifier(retryhttp.Transient)) // want `^foreign-option: retryhttp.WithClassifier is an option of github.com/retrypolicy/retrypolicy/retryhttp, which retry.Do refuses when it runs`
	_, _ = retry.New[int](s, retry.WithFullJitter(), WithCount(1))             // want `^foreign-option: options.WithCount is an option of example.com/vettest/options, which retry.New refuses`
	_, _ = retryhttp.NewTransport(nil, s, WithCount(1))                        // want `^foreign-option: options.WithCount is an option of example.com/vettest/options, which retryhttp.NewTransport refuses`
	_ = New(retryhttp.WithoutServerSignals())                                  // want `^foreign-option: retryhttp.WithoutServerSignals is an option of github.com/retrypolicy/retrypolicy/retryhttp, which options.New refuses`
	_, _ = retryhttp.NewTransport(nil, s, retryhttp.WithClassifier(retryhttp.Transient), retry.WithFullJitter())
	_ = New(WithCount(1), retry.WithFullJitter())
	_, _ = retry.Do(ctx, s, op, retry.WithFullJitter())
	_, _ = retry.Do(ctx, s, op, retryhttp.WithClassifier(retryhttp.Transient)) //retrypolicy-vet:ignore foreign-option
}
