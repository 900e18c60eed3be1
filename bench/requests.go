package bench

import (
	"bufio"
	"io"
	"strconv"
	"time"
)

// requestStrategies are the strategies WriteRequests draws from, as a
// scheduler's jobs repeat a few.
var requestStrategies = []string{
	`{"strategy":"bounded","max_attempts":5,"window_secs":3600,"backoff":{"kind":"exponential","base_delay_secs":1,"multiplier":2,"max_delay_secs":60}}`,
	`{"strategy":"unless_stopped","backoff":{"kind":"exponential_with_jitter","base_delay_secs":2,"multiplier":1.5,"max_delay_secs":300}}`,
	`{"strategy":"bounded","max_attempts":10,"window_secs":600,"backoff":{"kind":"fixed","base_delay_secs":30}}`,
	`{"strategy":"bounded","max_attempts":3,"window_secs":86400,"backoff":{"kind":"exponential","base_delay_secs":10,"multiplier":3}}`,
}

// WriteRequests writes n requests for `retrypolicy decide --lines`, one a
// line, about 260 bytes each: a strategy drawn from a few, one to three
// failures within the last hour and a half, the last run's uptime, a jitter
// seed and the time of the decision. The same n writes the same bytes.
func WriteRequests(w io.Writer, n int) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	x := uint64(0x9e3779b97f4a7c15)
	rnd := func(m uint64) uint64 { // xorshift: the same stream on every run
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return x % m
	}
	base := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	var line []byte
	for i := range n {
		line = append(line[:0], `{"retry_strategy":`...)
		line = append(line, requestStrategies[rnd(uint64(len(requestStrategies)))]...)
		line = append(line, `,"failures":[`...)
		for k := range 1 + rnd(3) {
			if k > 0 {
				line = append(line, ',')
			}
			line = append(line, '"')
			line = base.Add(-time.Duration(rnd(5400))*time.Second).AppendFormat(line, time.RFC3339)
			line = append(line, '"')
		}
		line = append(line, `],"last_uptime_secs":`...)
		line = strconv.AppendFloat(line, float64(rnd(100000))/1000, 'f', -1, 64)
		line = append(line, `,"jitter_seed":"job-`...)
		line = strconv.AppendInt(line, int64(i), 10)
		line = append(line, `","now":"`...)
		line = base.Add(time.Duration(rnd(600))*time.Second).AppendFormat(line, time.RFC3339)
		line = append(line, "\"}\n"...)
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}
