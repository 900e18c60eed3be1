package queuekit_test

import (
	"testing"
	"time"

	"github.com/retrypolicy/retrypolicy/queuekit"
)

// BenchmarkReadMetadata reads a job's own strategy and a record of 8
// failures from its metadata, as an adapter does for each decision it
// makes from a job: the scan, then the record's failures.
func BenchmarkReadMetadata(b *testing.B) {
	r := queuekit.Record{Seen: 8}
	at := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	for i := range 8 {
		r.Failures = append(r.Failures, at.Add(time.Duration(i)*21*time.Hour).UnixMilli()*int64(time.Millisecond))
	}
	meta := []byte(`{"retry_strategy":{"strategy":"bounded","max_attempts":100000,"window_secs":604800,"backoff":{"kind":"exponential_with_jitter","base_delay_secs":1,"max_delay_secs":300}},"retrypolicy":` + string(r.AppendJSON(nil)) + `}`)
	var room [16]int64
	b.Run("part=scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			queuekit.ReadMetadata(meta, "retry_strategy", "retrypolicy")
		}
	})
	m := queuekit.ReadMetadata(meta, "retry_strategy", "retrypolicy")
	b.Run("part=failures", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.Failures(room[:], 100)
		}
	})
}
