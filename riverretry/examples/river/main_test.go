package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stubClock gives River the bubble's clock, so that SQLite compares times
// with it rather than with its own.
type stubClock struct{}

func (stubClock) Now() time.Time       { return time.Now() }
func (stubClock) NowOrNil() *time.Time { t := time.Now(); return &t }

// TestExample runs the example in a synctest bubble (its waits cost no
// time) and checks each job's timeline: how it ended, at which attempt,
// and the decisions that led there.
func TestExample(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		require.NoError(t, run(context.Background(), &out, "", func(cfg *river.Config) { cfg.Test.Time = stubClock{} }))
		text := out.String()
		if testing.Verbose() {
			os.Stdout.WriteString(text)
		}
		assert.True(t, strings.HasSuffix(text, "\nAn insert with an invalid strategy is refused, as it should be:\n"+
			`  riverretry: job of kind "charge": invalid retry_strategy: retry_strategy.max_attempts: must be at least 1, got 0`+"\n"), text)

		jobs := map[string]string{}
		blocks := strings.Split(text, "\n\n")
		for _, block := range blocks[1 : len(blocks)-1] {
			name, _, _ := strings.Cut(block, " ")
			jobs[name] = block
		}
		require.Len(t, jobs, 4, text)
		assert.Regexp(t, `(?s)attempt 1 .*-> ran 0.00s action=wait failures_in_window=1 owed_secs=0.1 .*attempt 2 .*-> ran 0.00s action=wait failures_in_window=2 owed_secs=0.2 .*attempt 3  completed`, jobs["send-welcome-email"])
		assert.Regexp(t, `(?s)attempt 1 .*panicked|attempt 1 .*nil map write`, jobs["render-report"])
		assert.Contains(t, jobs["render-report"], "attempt 3  completed")
		// The second run of 700ms pays for half of the 600ms owed.
		assert.Contains(t, jobs["rebuild-index"], "ran 0.70s action=wait failures_in_window=2 owed_secs=0.6 delay_secs=0.3")
		assert.Regexp(t, `(?s)attempt 3  failed: .*riverretry: giving up \(attempts_exhausted, 3 failure\(s\) in the window\).*-> cancelled`, jobs["charge-card"])
		// Each scheduled time is the failure plus the wait.
		assert.Len(t, regexp.MustCompile(`scheduled for \+`).FindAllString(text, -1), 8)
	})
}
