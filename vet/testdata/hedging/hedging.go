// Package hedging gives retry.WithHedging to loops whose Do refuses it,
// and to those that take it.
package hedging

import (
	"context"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
)

var (
	h     = retry.Hedging{Delay: 20 * time.Millisecond}
	three = retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3, Window: time.Minute}
)

// shared is a package's loop made with hedging.
var shared, _ = retry.New[int](three, retry.WithHedging(h))

func op(ctx context.Context) (int, error) { return 0, ctx.Err() }

// Direct gives hedging to retry.Do, and to retry.Hedge.
func Direct(ctx context.Context) { // want Direct:`runs retry.Do`
	_, _ = retry.Do(ctx, three, op, retry.WithFullJitter(), retry.WithHedging(h)) // want `^hedging-in-do: retry.Do refuses this option each time it runs, saying: retry.WithHedging: Do never hedges, so that its op never runs twice at once; call retry.Hedge \(or Loop.Hedge\); retry.Hedge's op runs concurrently, and must return once its context ends$`
	_, _ = retry.Do(ctx, three, op, retry.WithFullJitter())
	_, _ = retry.Hedge(ctx, three, op, retry.WithHedging(h))
	_, _ = retry.Do(ctx, three, op, retry.WithHedging(h)) //retrypolicy-vet:ignore hedging-in-do
}

// Loops calls the Do of loops made with hedging, and of loops made without.
func Loops(ctx context.Context) {
	l, _ := retry.New[int](three, retry.WithHedging(h))
	_, _ = l.Do(ctx, op) // want `^hedging-in-do: l was made with retry.WithHedging \(line 33\), and its Do refuses that each time it runs, saying: retry.WithHedging: Do never hedges`
	_, _ = l.Hedge(ctx, op)
	m, _ := l.With(retry.WithFullJitter())
	_, _ = m.Do(ctx, op) // want `^hedging-in-do: m was made with retry.WithHedging \(line 33\)`
	p, _ := retry.New[int](three)
	_, _ = p.Do(ctx, op)
	q, _ := p.With(retry.WithHedging(h))
	_, _ = q.Do(ctx, op)      // want `^hedging-in-do: q was made with retry.WithHedging \(line 40\)`
	_, _ = shared.Do(ctx, op) // want `^hedging-in-do: shared was made with retry.WithHedging \(line 19\)`
	r, _ := retry.New[int](three, retry.WithHedging(h))
	r, _ = retry.New[int](three)
	_, _ = r.Do(ctx, op) // assigned again: not followed
}
