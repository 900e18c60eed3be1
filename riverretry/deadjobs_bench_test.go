package riverretry

import (
	"context"
	"flag"
	"strconv"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy/queuekit"
)

// deadJobsCounted is how many dead jobs BenchmarkCountDeadJobs counts:
// few by default, so that CI's run of every benchmark stays short;
// BENCHMARKS.md's figures are of -deadjobs 25000 and 100000.
var deadJobsCounted = flag.Int("deadjobs", 2_500, "dead jobs BenchmarkCountDeadJobs counts")

// BenchmarkCountDeadJobs counts the dead jobs of a SQLite database in
// memory holding that many, beside as many completed jobs: a page a query,
// by the keyset the index on a job's state and end time serves, so that
// the time a job is the same at 25,000 and 100,000 (it grew with the
// number of jobs when each page sorted every cancelled job past its
// cursor). It reports the time a dead job.
func BenchmarkCountDeadJobs(b *testing.B) {
	n := *deadJobsCounted
	driver := sqliteDriver(b)
	f := newDeadFixtureOn(b, driver)
	ctx := context.Background()
	exec := f.client.Driver().GetExecutor()
	for start := 0; start < n; start += 1000 {
		var jobs []*riverdriver.JobInsertFullParams
		for i := start; i < min(start+1000, n); i++ {
			at := time.Now()
			meta := []byte(`{"retrypolicy":{"gave_up":"attempts_exhausted"}}`)
			jobs = append(jobs,
				&riverdriver.JobInsertFullParams{EncodedArgs: []byte(`{"n":` + strconv.Itoa(i) + `}`), FinalizedAt: &at, Kind: "dead",
					MaxAttempts: 3, Metadata: meta, Priority: 1, Tags: []string{}, Queue: river.QueueDefault, ScheduledAt: &at, State: rivertype.JobStateCancelled},
				&riverdriver.JobInsertFullParams{EncodedArgs: []byte(`{}`), FinalizedAt: &at, Kind: "done", MaxAttempts: 3, Tags: []string{},
					Priority: 1, Queue: river.QueueDefault, ScheduledAt: &at, State: rivertype.JobStateCompleted})
		}
		_, err := exec.JobInsertFullMany(ctx, &riverdriver.JobInsertFullManyParams{Jobs: jobs})
		require.NoError(b, err)
	}
	d := queuekit.DeadLetters{Driver: f.d}
	b.ResetTimer()
	for b.Loop() {
		c, err := d.Count(ctx, Filter{})
		require.NoError(b, err)
		require.Equal(b, n, c.Total)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/deadjob")
}
