package queuekit_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/queuekit"
	"github.com/retrypolicy/retrypolicy/retry"
)

// BenchmarkJudge judges a run whose error is a loop's deferred give-up,
// wrapped once, as a job's worker returns it: its marks read, then the
// verdict.
func BenchmarkJudge(b *testing.B) {
	pol, err := retrypolicy.Compile(retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Exponential, BaseDelay: time.Second, MaxDelay: time.Minute}})
	if err != nil {
		b.Fatal(err)
	}
	at := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	d := queuekit.Decide(pol, []int64{at.UnixNano()}, 0, 1, at)
	runErr := fmt.Errorf("sync: %w", &retry.GiveUpError{Reason: retry.Deferred, Failures: 1, Err: errors.New("429"), Wait: 30 * time.Second})
	b.ReportAllocs()
	for b.Loop() {
		v := queuekit.Judge(d, retry.ReadMarks(runErr), at, time.Hour)
		if !v.Due.Equal(at.Add(30 * time.Second)) {
			b.Fatal(v.Due)
		}
	}
}
