package main

import (
	"strings"
	"testing"
	"testing/synctest"
)

// TestBreakerOutput runs the example on synctest's fake clock: the first
// job trips the breaker after three failed runs and gives up on the call it
// refuses; the second gives up at once; after the timeout a trial call
// finds the dependency back and closes the breaker.
func TestBreakerOutput(t *testing.T) {
	var out strings.Builder
	synctest.Test(t, func(t *testing.T) {
		if err := run(&out); err != nil {
			t.Fatal(err)
		}
	})
	want := `job 1 (after 0s):
  failure 1: call 1: connection refused; waiting 50ms
  failure 2: call 2: connection refused; waiting 100ms
  breaker: closed -> open
  failure 3: call 3: connection refused; waiting 200ms
  gave up after 4 failure(s): not_retryable, circuit breaker is open
job 2 (after 0s):
  gave up after 1 failure(s): not_retryable, circuit breaker is open
job 3 (after 3s):
  breaker: open -> half-open
  breaker: half-open -> closed
  done: call 4: ok
`
	if out.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}
