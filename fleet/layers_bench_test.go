package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/retrypolicy/retrypolicy"
)

// BenchmarkLayers runs 100,000 requests (1,000 a second) through the
// chain of four layers of 3 attempts, the bottom down for the first
// 30 s and then serving 1,500 calls a second (impl=simulate), beside the
// same History.Record and History.Decide calls alone, replayed from a
// trace of the run on fresh histories (impl=decide): the simulator's cost
// over the decisions it makes.
func BenchmarkLayers(b *testing.B) {
	type call struct {
		history int
		failure time.Time
		uptime  time.Duration
	}
	var trace []call
	histories := map[uint64]int{}
	l := Layers{Layers: DefaultLayers(3), Rate: 1000, Duration: 100 * time.Second, Down: 30 * time.Second, Capacity: 1500}
	traced := l
	traced.onDecide = func(key uint64, _ int, failure time.Time, uptime time.Duration) {
		h, ok := histories[key]
		if !ok {
			h = len(histories)
			histories[key] = h
		}
		trace = append(trace, call{h, failure, uptime})
	}
	r, err := traced.Run(context.Background())
	if err != nil || r.Requests != 100_000 || r.Truncated {
		b.Fatal(err, r.Requests, r.Truncated)
	}
	p, err := retrypolicy.Compile(l.Layers[0].Strategy)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("impl=simulate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r, err := l.Run(context.Background())
			if err != nil || r.Decisions != len(trace) {
				b.Fatal(err, r.Decisions)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(trace)), "ns/decision")
	})
	b.Run("impl=decide", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			hs := make([]*retrypolicy.History, len(histories))
			for _, c := range trace {
				h := hs[c.history]
				if h == nil {
					h = retrypolicy.NewHistory(p)
					hs[c.history] = h
				}
				if err := h.Record(c.failure, c.uptime); err != nil {
					b.Fatal(err)
				}
				d, err := h.Decide(uint64(c.history), c.failure)
				if err != nil {
					b.Fatal(err)
				}
				actionSink = d.Action
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(trace)), "ns/decision")
	})
}
