package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/retrypolicy/retrypolicy"
)

// BenchmarkOutage runs 100,000 jobs under the default strategy through a
// one-hour outage (impl=simulate), beside the same History.Record and
// History.Decide calls alone, replayed from a trace of the simulation on
// fresh histories (impl=decide): the simulator's cost over the decisions
// it makes.
func BenchmarkOutage(b *testing.B) {
	type call struct {
		job     int
		failure time.Time
		uptime  time.Duration
	}
	var trace []call
	o := Outage{Jobs: 100_000, Down: time.Hour}
	traced := o
	traced.onDecide = func(job int, _, failure time.Time, uptime time.Duration, _ retrypolicy.Decision) {
		trace = append(trace, call{job, failure, uptime})
	}
	if _, err := traced.Run(context.Background(), retrypolicy.Default()); err != nil {
		b.Fatal(err)
	}
	p, err := retrypolicy.Compile(retrypolicy.Default())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("impl=simulate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r, err := o.Run(context.Background(), retrypolicy.Default())
			if err != nil || r.Decisions != len(trace) {
				b.Fatal(err, r.Decisions)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(trace)), "ns/decision")
	})
	b.Run("impl=decide", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			histories := make([]*retrypolicy.History, o.Jobs)
			for i := range histories {
				histories[i] = retrypolicy.NewHistory(p)
			}
			for _, c := range trace {
				h := histories[c.job]
				if err := h.Record(c.failure, c.uptime); err != nil {
					b.Fatal(err)
				}
				d, err := h.Decide(jobSeed(0, c.job), c.failure)
				if err != nil {
					b.Fatal(err)
				}
				actionSink = d.Action
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(trace)), "ns/decision")
	})
}

var actionSink retrypolicy.Action
