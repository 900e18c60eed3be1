package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// heaviest is the most expensive request the server's limits allow: a
// simulation that runs to its bound of runs, of 100,000 jobs through a
// 30-day outage, retrying each second without a tick.
const heaviest = "/v1/simulate?jobs=100000&outage=720h&tick=0"

const heaviestBody = `{"strategy":"unless_stopped","backoff":{"kind":"fixed","base_delay_secs":1}}`

// startServer runs the built command's serve on a free loopback port and
// returns its address and process; it stops with the benchmark.
func startServer(b *testing.B) (string, *os.Process) {
	bin := buildCommand(b)
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return regexp.MustCompile(`http://\S+`).FindString(line), cmd.Process
}

// validateP99 sends n validate requests one after another and returns the
// 99th percentile of their latencies.
func validateP99(b *testing.B, client *http.Client, base string, n int) time.Duration {
	latencies := make([]time.Duration, n)
	for i := range latencies {
		start := time.Now()
		r, err := client.Post(base+"/v1/validate", "application/json", strings.NewReader(`{"strategy":"bounded","max_attempts":5}`))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		if r.StatusCode != 200 {
			b.Fatalf("validate answered %d", r.StatusCode)
		}
		latencies[i] = time.Since(start)
	}
	slices.Sort(latencies)
	return latencies[(n*99+99)/100-1]
}

// load sends the heaviest request from each of clients goroutines until
// ctx is done. Polite clients wait the Retry-After of a busy answer, as the
// page does; the others send again at once. It returns how many answers
// were 200 and 503.
func load(ctx context.Context, base string, clients int, polite bool) (done func() (ok, shed int)) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	ok, shed := 0, 0
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Transport: &http.Transport{}}
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "POST", base+heaviest, strings.NewReader(heaviestBody))
				r, err := client.Do(req)
				if err != nil {
					return
				}
				io.Copy(io.Discard, r.Body)
				r.Body.Close()
				mu.Lock()
				if r.StatusCode == 200 {
					ok++
				} else {
					shed++
				}
				mu.Unlock()
				if r.StatusCode == 503 && polite {
					select {
					case <-ctx.Done():
					case <-time.After(time.Second):
					}
				}
			}
		}()
	}
	return func() (int, int) {
		wg.Wait()
		return ok, shed
	}
}

// BenchmarkServeUnderLoad measures, on a loopback server of the built
// command, the 99th percentile latency of /v1/validate when the server is
// idle and while 20 clients send the heaviest simulation the limits allow
// (polite: waiting the Retry-After of a busy answer; hot: sending again at
// once), and reports their ratio.
func BenchmarkServeUnderLoad(b *testing.B) {
	base, _ := startServer(b)
	const samples = 1000
	for _, polite := range []bool{true, false} {
		name := map[bool]string{true: "clients=polite", false: "clients=hot"}[polite]
		b.Run(name, func(b *testing.B) {
			client := &http.Client{Transport: &http.Transport{}}
			var idle, loaded time.Duration
			ok, shed := 0, 0
			for b.Loop() {
				validateP99(b, client, base, 100) // warm the connection and the server
				idle = validateP99(b, client, base, samples)
				ctx, cancel := context.WithCancel(context.Background())
				done := load(ctx, base, 20, polite)
				time.Sleep(500 * time.Millisecond) // the load under way
				loaded = validateP99(b, client, base, samples)
				cancel()
				ok, shed = done()
			}
			b.ReportMetric(float64(idle.Microseconds()), "idle-p99-µs")
			b.ReportMetric(float64(loaded.Microseconds()), "loaded-p99-µs")
			b.ReportMetric(float64(loaded)/float64(idle), "p99-ratio")
			b.ReportMetric(float64(ok), "simulations")
			b.ReportMetric(float64(shed), "shed")
		})
	}
}

// BenchmarkServeSlowClients measures the built command's peak resident
// memory (VmHWM) while 20 clients each send a batch of the largest size
// allowed (1,000 requests in just under 1 MiB) and then read its answer a
// few bytes at a time, and 20 more send the heaviest simulation.
func BenchmarkServeSlowClients(b *testing.B) {
	base, proc := startServer(b)
	batch := maxBatch()
	addr := strings.TrimPrefix(base, "http://")
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		done := load(ctx, base, 20, false)
		var wg sync.WaitGroup
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				slowBatch(b, addr, batch)
			}()
		}
		wg.Wait()
		cancel()
		done()
	}
	b.ReportMetric(float64(vmHWM(b, proc.Pid))/(1<<20), "peak-MB")
}

// maxBatch returns a decide batch of 1,000 requests, each with as many
// failures as keep the whole under 1 MiB.
func maxBatch() []byte {
	var one bytes.Buffer
	one.WriteString(`{"failures":[`)
	for i := range 40 {
		if i > 0 {
			one.WriteByte(',')
		}
		fmt.Fprintf(&one, `"2026-11-02T15:%02d:%02dZ"`, i/60, i%60)
	}
	one.WriteString(`],"jitter_seed":"job-42","now":"2026-11-02T16:00:00Z"}`)
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range 1000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(one.Bytes())
	}
	b.WriteByte(']')
	return b.Bytes()
}

// slowBatch sends body to /v1/decide and reads the answer 64 bytes every
// 20 ms for two seconds, then goes away.
func slowBatch(b *testing.B, addr string, body []byte) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Error(err)
		return
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/decide HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", addr, len(body))
	if _, err := conn.Write(body); err != nil {
		b.Error(err)
		return
	}
	buf := make([]byte, 64)
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
		conn.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := conn.Read(buf); err != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// vmHWM reads a process's peak resident memory, in bytes.
func vmHWM(b *testing.B, pid int) int64 {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Skip("no /proc to read the server's peak memory from:", err)
	}
	m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(status)
	if m == nil {
		b.Fatalf("no VmHWM in %s", status)
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10
}
