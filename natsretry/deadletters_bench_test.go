package natsretry_test

import (
	"context"
	"flag"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/retrypolicy/retrypolicy/natsretry"
	"github.com/retrypolicy/retrypolicy/queuekit"
)

// deadLetters is how many dead letters BenchmarkListDeadLetters lists:
// few by default, so that CI's run of every benchmark stays short;
// BENCHMARKS.md's figure is of -deadletters 1000000.
var deadLetters = flag.Int("deadletters", 10_000, "dead letters BenchmarkListDeadLetters lists")

// BenchmarkListDeadLetters lists a stream of small dead letters (the
// policy's headers, a 16-byte payload) and counts them by reason, and
// reports the most live heap above what it held before, measured after a
// collection 20 times during the listing: the lister's pages, and the
// embedded server's own state for reading the stream (it runs in the same
// process). Garbage is not counted: how much of it the collector lets
// build up depends on the whole process's heap, not on the lister.
func BenchmarkListDeadLetters(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	n := *deadLetters
	// In memory: the whole stream is in the heap before the listing
	// begins, so that what grows is the reading, not the file store's
	// cache of the blocks it read.
	_, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: "DEADMEM", Subjects: []string{"deadmem"}, Storage: jetstream.MemoryStorage})
	require.NoError(b, err)
	reasons := [...]string{"not_retryable", "attempts_exhausted", "retry_after_too_long"}
	for i := range n {
		m := nats.NewMsg("deadmem")
		m.Data = []byte("payload-" + strconv.Itoa(100_000_000+i))
		m.Header.Set(natsretry.HeaderReason, reasons[i%3])
		m.Header.Set(natsretry.HeaderSubject, "jobs.a."+strconv.Itoa(i))
		m.Header.Set(natsretry.HeaderStream, "JOBS")
		m.Header.Set(natsretry.HeaderSequence, strconv.Itoa(i+1))
		m.Header.Set(natsretry.HeaderFailures, "3")
		m.Header.Set(natsretry.HeaderError, "down")
		_, err := e.js.PublishMsgAsync(m)
		require.NoError(b, err)
		if i%10_000 == 9_999 {
			select {
			case <-e.js.PublishAsyncComplete():
			case <-time.After(within):
				b.Fatal("publishes not acknowledged")
			}
		}
	}
	<-e.js.PublishAsyncComplete()
	dl, err := natsretry.OpenDeadLetters(ctx, e.js, "DEADMEM")
	require.NoError(b, err)
	d := queuekit.DeadLetters{Driver: dl}
	var before, peak uint64
	// live is the heap's live bytes, after a collection.
	live := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		before = live()
		peak = before
		listed := 0
		for _, err := range d.List(ctx, natsretry.Filter{}) {
			require.NoError(b, err)
			if listed++; listed%(n/20) == 0 {
				peak = max(peak, live())
			}
		}
		counts, err := d.Count(ctx, natsretry.Filter{})
		require.NoError(b, err)
		counted := counts.Total
		require.Equal(b, n, listed)
		require.Equal(b, n, counted)
	}
	b.ReportMetric(float64(before)/(1<<20), "before-MB")
	b.ReportMetric(float64(peak-before)/(1<<20), "peak-above-MB")
	b.ReportMetric(float64(n), "dead-letters")
}

// reasonLetters is how many dead letters BenchmarkCountDistinctReasons
// counts: few by default, so that CI's run of every benchmark stays short.
var reasonLetters = flag.Int("reasonletters", 2_000, "dead letters BenchmarkCountDistinctReasons counts")

// BenchmarkCountDistinctReasons counts a stream of dead letters each of a
// reason of its own, 4 KiB long (forged: anyone may publish to a
// dead-letter subject), and one of a single reason, and reports the most
// live heap above what each held before (after a collection, each time a
// twentieth of the letters was counted): a count keeps at most
// queuekit.MaxReasons reasons of queuekit.MaxReasonLen bytes, so the two
// differ by at most their 256 KB and the map's overhead.
func BenchmarkCountDistinctReasons(b *testing.B) {
	for _, distinct := range []bool{false, true} {
		b.Run("distinct="+strconv.FormatBool(distinct), func(b *testing.B) {
			e := newEnv(b)
			ctx := context.Background()
			n := *reasonLetters
			long := strings.Repeat("r", 4096)
			for i := range n {
				m := nats.NewMsg("dead.jobs")
				reason := long
				if distinct {
					reason = strconv.Itoa(i) + long
				}
				m.Header.Set(natsretry.HeaderReason, reason)
				m.Header.Set(natsretry.HeaderSubject, "jobs.a")
				_, err := e.js.PublishMsgAsync(m)
				require.NoError(b, err)
				if i%1000 == 999 {
					<-e.js.PublishAsyncComplete()
				}
			}
			<-e.js.PublishAsyncComplete()
			dl, err := natsretry.OpenDeadLetters(ctx, e.js, "DEAD")
			require.NoError(b, err)
			var before, peak uint64
			counted := 0
			d := queuekit.DeadLetters{Driver: countingDriver{Driver: dl, each: func() {
				if counted++; counted%max(n/20, 1) == 0 {
					peak = max(peak, liveHeap())
				}
			}}}
			for b.Loop() {
				before, peak, counted = liveHeap(), 0, 0
				c, err := d.Count(ctx, natsretry.Filter{})
				require.NoError(b, err)
				require.Equal(b, n, c.Total)
			}
			b.ReportMetric(float64(max(peak, before)-before)/(1<<20), "peak-above-MB")
		})
	}
}

// liveHeap is the heap's live bytes, after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// countingDriver calls each for every letter a page reads.
type countingDriver struct {
	queuekit.Driver
	each func()
}

func (c countingDriver) Page(ctx context.Context, cur *queuekit.Cursor) ([]queuekit.Letter, error) {
	page, err := c.Driver.Page(ctx, cur)
	for range page {
		c.each()
	}
	return page, err
}
