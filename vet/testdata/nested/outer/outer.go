// Package outer runs loops around the inner package's.
package outer

import (
	"context"

	"example.com/vettest/nested/inner"
	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
)

var five = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5}

// Multiplied turns the one-layer rule off around loops of another
// package: each inner loop's attempts multiply by the outer's.
func Multiplied(ctx context.Context) error { // want Multiplied:`runs retry.Do \(15 attempts\)`
	_, err := retry.Do(ctx, retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5}, func(ctx context.Context) (int, error) {
		if err := inner.Through(ctx); err != nil { // want `^nested-retry: this call runs inner.Through → Fetch → retry.Do \(3 attempts\) inside an operation of retry.Do \(5 attempts\) that retries with WithNestedRetries\(\): up to 5×3 = 15 attempts`
			return 0, err
		}
		return 0, inner.Get(ctx, "http://example.com") // want `^nested-retry: this call runs inner.Get → an http.Client over a retryhttp transport`
	}, retry.WithNestedRetries())
	return err
}

// Direct nests retry.Do in retry.Do, the rule off.
func Direct(ctx context.Context) error { // want Direct:`runs retry.Do \(20 attempts\)`
	_, err := retry.Do(ctx, five, func(ctx context.Context) (int, error) {
		return retry.Do(ctx, retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 4}, func(ctx context.Context) (int, error) { // want `^nested-retry: this call runs retry.Do \(4 attempts\) inside an operation of retry.Do \(5 attempts\) .*: up to 5×4 = 20 attempts`
			return 0, ctx.Err()
		})
	}, retry.WithNestedRetries())
	return err
}

// local runs the inner loop through a function of this package.
func local(ctx context.Context) (int, error) { return 0, inner.Fetch(ctx) } // want local:`runs inner.Fetch → retry.Do \(3 attempts\)` `^nested-retry: this call runs inner.Fetch → retry.Do \(3 attempts\) inside an operation of retry.Do \(2 attempts\) .*: up to 2×3 = 6 attempts`

// Named passes a named operation, the rule off.
func Named(ctx context.Context) error { // want Named:`runs retry.Do \(6 attempts\)`
	_, err := retry.Do(ctx, retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 2}, local, retry.WithNestedRetries())
	return err
}

// OneLayer nests loops with the rule on: they retry at one layer, and
// draw nothing.
func OneLayer(ctx context.Context) error { // want OneLayer:`runs retry.Do \(5 attempts\)`
	_, err := retry.Do(ctx, five, func(ctx context.Context) (int, error) {
		return 0, inner.Through(ctx)
	})
	return err
}

// Silenced nests loops on purpose, and says so.
func Silenced(ctx context.Context) error { // want Silenced:`runs retry.Do \(15 attempts\)`
	_, err := retry.Do(ctx, five, func(ctx context.Context) (int, error) {
		//retrypolicy-vet:ignore nested-retry
		return 0, inner.Fetch(ctx)
	}, retry.WithNestedRetries())
	return err
}

// NoLoop retries a call that runs no loop.
func NoLoop(ctx context.Context) error { // want NoLoop:`runs retry.Do \(5 attempts\)`
	_, err := retry.Do(ctx, five, func(ctx context.Context) (int, error) {
		return 0, inner.Plain(ctx)
	}, retry.WithNestedRetries())
	return err
}

// again is an operation that runs its own loop, the rule off: the walk
// of the loops it runs ends.
func again(ctx context.Context) (int, error) { // want again:`runs retry.Do \(4 attempts\)`
	return retry.Do(ctx, retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 2}, again, retry.WithNestedRetries()) // want `^nested-retry: this call runs retry.Do`
}
