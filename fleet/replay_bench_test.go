package fleet

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/retrypolicy/retrypolicy/attemptlog"

	"github.com/retrypolicy/retrypolicy"
)

// benchLog is a log of about 1,000,000 attempts of 100,000 jobs: a
// simulated three-hour outage under a fixed 2-minute backoff, every
// job's run recorded.
func benchLog(b *testing.B) ([]attemptlog.Attempt, *Log) {
	b.Helper()
	var attempts []attemptlog.Attempt
	o := Outage{Jobs: 100_000, Down: 3 * time.Hour, FailAfter: time.Second, Spread: 20 * time.Minute, Tick: time.Minute,
		Log: func(a attemptlog.Attempt) { attempts = append(attempts, a) }}
	fixed := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 17 * time.Minute}}
	if _, err := o.Run(context.Background(), fixed); err != nil {
		b.Fatal(err)
	}
	log, err := NewLog(attempts)
	if err != nil {
		b.Fatal(err)
	}
	return attempts, log
}

// replayStrategies are the five strategies simulate compares.
func replayStrategies(b *testing.B) []retrypolicy.Strategy {
	b.Helper()
	var out []retrypolicy.Strategy
	for _, doc := range []string{`null`,
		`{"strategy":"bounded","max_attempts":5,"backoff":{"kind":"exponential","base_delay_secs":1,"max_delay_secs":60}}`,
		`{"strategy":"bounded","max_attempts":5,"window_secs":86400,"backoff":{"kind":"exponential","base_delay_secs":1,"max_delay_secs":600}}`,
		`{"strategy":"unless_stopped","backoff":{"kind":"exponential_with_jitter","base_delay_secs":2,"max_delay_secs":300}}`,
		`{"strategy":"none"}`} {
		s, err := retrypolicy.Parse([]byte(doc))
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// BenchmarkReplay replays a log of 1,000,000 attempts of 100,000 jobs
// under the five strategies (impl=replay), beside the same History.Record
// and History.Decide calls alone, on fresh histories, for every failure
// the replays decide (impl=decide): the replay's cost over the decisions
// it makes. Reading the log is BenchmarkReadLog's.
func BenchmarkReplay(b *testing.B) {
	attempts, log := benchLog(b)
	strategies := replayStrategies(b)
	type call struct {
		job     int32
		failure time.Time
		uptime  time.Duration
	}
	traces := make([][]call, len(strategies))
	policies := make([]*retrypolicy.Policy, len(strategies))
	decisions := 0
	for i, s := range strategies {
		policies[i], _ = retrypolicy.Compile(s)
		rp := newReplaying(Replay{Tick: time.Minute, MaxAttempts: DefaultMaxReplayed}, log, policies[i])
		rp.eng.run(context.Background(), rp.end-1, func(at time.Duration, ev int32) {
			if job := rp.jobOf(ev); log.avail.downAt(at) {
				j := &log.jobs[job]
				traces[i] = append(traces[i], call{job, epoch.Add(at + j.failed), j.failed})
			}
			rp.step(at, ev)
		})
		decisions += len(traces[i])
	}
	b.Logf("%d attempts recorded, %d jobs, %d decisions in the five replays", len(attempts), len(log.jobs), decisions)
	b.Run("impl=replay", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, s := range strategies {
				if _, err := (Replay{Tick: time.Minute}).Run(context.Background(), log, s); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(decisions), "ns/decision")
	})
	b.Run("impl=decide", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i, trace := range traces {
				histories := make([]*retrypolicy.History, len(log.jobs))
				for j := range histories {
					histories[j] = retrypolicy.NewHistory(policies[i])
				}
				for _, c := range trace {
					h := histories[c.job]
					if err := h.Record(c.failure, c.uptime); err != nil {
						b.Fatal(err)
					}
					d, err := h.Decide(log.jobs[c.job].seed, c.failure)
					if err != nil {
						b.Fatal(err)
					}
					actionSink = d.Action
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(decisions), "ns/decision")
	})
}

// BenchmarkReadLog reads the same log from its JSON Lines: a line's cost.
func BenchmarkReadLog(b *testing.B) {
	attempts, _ := benchLog(b)
	var text bytes.Buffer
	var line []byte
	for _, a := range attempts {
		line = a.AppendLine(line[:0])
		text.Write(line)
	}
	b.SetBytes(int64(text.Len()))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadLog(bytes.NewReader(text.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(attempts)), "ns/line")
	_ = fmt.Sprint()
}
