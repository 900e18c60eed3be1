// Command breaker puts a circuit breaker beside retry.Do, as the rules for retrying advise.
//
// The breaker (github.com/sony/gobreaker/v2) counts every run of the operation, and once it opens, a call it refuses
// is a permanent error for that job, which gives up at once instead of
// adding load to a dependency that is down. After the breaker's timeout, a
// trial call goes through, the dependency has recovered, and the breaker
// closes.
//
//	go run ./examples/breaker   (from examples/breaker)
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/sony/gobreaker/v2"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "breaker:", err)
		os.Exit(1)
	}
}

// dependency is down for its first three calls, then answers.
type dependency struct{ calls int }

func (d *dependency) call() (string, error) {
	d.calls++
	if d.calls <= 3 {
		return "", fmt.Errorf("call %d: connection refused", d.calls)
	}
	return fmt.Sprintf("call %d: ok", d.calls), nil
}

// strategy retries up to 5 failures a minute, from 50 ms.
var strategy = retrypolicy.Strategy{
	Kind: retrypolicy.Bounded, MaxAttempts: 5, Window: time.Minute,
	Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: 50 * time.Millisecond, Multiplier: 2, MaxDelay: time.Second},
}

func run(out io.Writer) error {
	dep := &dependency{}
	cb := gobreaker.NewCircuitBreaker[string](gobreaker.Settings{
		Name:        "dependency",
		Timeout:     2 * time.Second, // open this long, then let a trial call through
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 3 },
		OnStateChange: func(name string, from, to gobreaker.State) {
			fmt.Fprintf(out, "  breaker: %s -> %s\n", from, to)
		},
	})
	// op is one run: through the breaker, which counts it; a call the
	// breaker refuses is final for this job.
	op := func(ctx context.Context) (string, error) {
		v, err := cb.Execute(dep.call)
		if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
			return "", retry.Permanent(err)
		}
		return v, err
	}
	observe := retry.WithObserver(func(e retry.Event) {
		fmt.Fprintf(out, "  failure %d: %v; waiting %v\n", e.Failures, e.Err, e.Wait)
	})
	for i, pause := range []time.Duration{0, 0, 3 * time.Second} {
		time.Sleep(pause)
		fmt.Fprintf(out, "job %d (after %v):\n", i+1, pause)
		v, err := retry.Do(context.Background(), strategy, op, observe)
		var gu *retry.GiveUpError
		switch {
		case err == nil:
			fmt.Fprintf(out, "  done: %s\n", v)
		case errors.As(err, &gu):
			fmt.Fprintf(out, "  gave up after %d failure(s): %s, %v\n", gu.Failures, gu.Reason, gu.Err)
		default:
			return err
		}
	}
	return nil
}
