// Package contexts holds operations that use their context, and some
// that do not.
package contexts

import (
	"context"
	"errors"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
)

var errDown = errors.New("down")

func unnamed(context.Context) (int, error) { return 0, errDown }

func unused(ctx context.Context) (int, error) { return 0, errDown }

func used(ctx context.Context) (int, error) { return 0, ctx.Err() }

// Calls holds each kind of operation.
func Calls(ctx context.Context) { // want Calls:`runs retry.Do \(an unknown number of attempts \(a strategy known only at run time\)\)`
	s := retrypolicy.Default()
	_, _ = retry.Do(ctx, s, func(context.Context) (int, error) { return 0, errDown })   // want `^ignored-context: the operation's context parameter is unnamed`
	_, _ = retry.Do(ctx, s, func(_ context.Context) (int, error) { return 0, errDown }) // want `^ignored-context: the operation's context parameter is unnamed`
	_, _ = retry.Do(ctx, s, func(c context.Context) (int, error) { return 0, errDown }) // want `^ignored-context: the operation never uses its context c`
	_, _ = retry.Do(ctx, s, unnamed)                                                    // want `^ignored-context: the operation's context parameter is unnamed`
	_, _ = retry.Do(ctx, s, unused)                                                     // want `^ignored-context: the operation never uses its context ctx`
	_, _ = retry.Do(ctx, s, used)
	_, _ = retry.Do(ctx, s, func(c context.Context) (int, error) { _ = c; return 0, errDown })
	_, _ = retry.Do(ctx, s, func(c context.Context) (int, error) { return used(c) })
	_, _ = retry.Do(ctx, s, func(context.Context) (int, error) { return 0, errDown }) //retrypolicy-vet:ignore
}
