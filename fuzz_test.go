package retrypolicy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// addDocuments seeds f with every testdata descriptor, valid and invalid.
func addDocuments(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*.json")
	for _, file := range files {
		if doc, err := os.ReadFile(file); err == nil {
			f.Add(doc)
		}
	}
}

// FuzzParseStrategy: any bytes. Parse never panics; what it accepts is valid,
// and its canonical encoding decodes back to an equal strategy and encodes to
// the same bytes; what it rejects comes back as a *ValidationError matching
// ErrInvalid.
func FuzzParseStrategy(f *testing.F) {
	addDocuments(f)
	f.Fuzz(func(t *testing.T, doc []byte) {
		s, err := Parse(doc)
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrInvalid) || len(ve.Errors) == 0 {
				t.Fatalf("error %v is not a validation error", err)
			}
			if s != (Strategy{}) {
				t.Fatalf("rejected input returned %+v", s)
			}
			return
		}
		checkAccepted(t, s, doc)
	})
}

// checkAccepted asserts what holds for every strategy a reader accepts: it
// validates, and its canonical encoding decodes back to it and encodes to
// the same bytes.
func checkAccepted(t *testing.T, s Strategy, from any) {
	t.Helper()
	if err := s.Validate(); err != nil {
		t.Fatalf("accepted %q but it does not validate: %v", from, err)
	}
	canonical, err := s.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(canonical)
	if err != nil || back != s {
		t.Fatalf("%s decodes to %+v, %v; want %+v", canonical, back, err, s)
	}
	if again, _ := back.MarshalJSON(); !bytes.Equal(canonical, again) {
		t.Fatalf("re-encoding %s gave %s", canonical, again)
	}
}

// FuzzFlags: any argument list, given as NUL-separated words. ParseFlags
// never panics; it accepts only valid strategies, and an accepted command
// line's canonical JSON decodes to the same strategy.
func FuzzFlags(f *testing.F) {
	for _, args := range []string{
		"",
		"--retry-strategy\x00bounded\x00--retry-max-attempts\x005",
		"--retry-strategy=unless_stopped\x00--retry-backoff=exponential_with_jitter\x00--retry-base-delay-secs=2\x00--retry-max-delay-secs=300",
		"--retry-strategy\x00none\x00--retry-backoff\x00fixed",
		"--retry-max-attempts\x003",
		"--retry-strategy=bounded\x00--retry-max-attempts=x\x00--retry-multiplier=1e999",
		"--retry-strategy=unless_stopped\x00--retry-multiplier\x000.5\x00--retry-window-secs\x0060",
		"-h",
	} {
		f.Add(args)
	}
	f.Fuzz(func(t *testing.T, joined string) {
		var args []string
		if joined != "" {
			args = strings.Split(joined, "\x00")
		}
		s, err := ParseFlags(args)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not match ErrInvalid", err)
			}
			return
		}
		checkAccepted(t, s, args)
	})
}

// FuzzDecide: any strategy numbers, failure times, uptime and clock. Decide
// never panics; for a valid strategy its delays are never negative nor above
// the ceiling, credit never lengthens the delay, jitter stays below a quarter
// of the credited delay, and the due time is never before the newest failure.
func FuzzDecide(f *testing.F) {
	f.Add(uint8(2), uint8(2), int64(1), 2.0, int64(60), 5, int64(3600), []byte{1, 2, 3, 4, 5, 6, 7, 8}, int64(10e9), int64(30e9), uint64(42))
	f.Add(uint8(3), uint8(3), int64(1), math.MaxFloat64, int64(0), 0, int64(0), bytes.Repeat([]byte{0xff}, 64), int64(math.MaxInt64), int64(math.MinInt64), uint64(0))
	f.Add(uint8(3), uint8(1), int64(9223372036), 0.0, int64(0), 0, int64(0), []byte{0, 0, 0, 0, 0, 0, 0, 0x80}, int64(-1), int64(0), uint64(7))
	f.Add(uint8(1), uint8(0), int64(0), 0.0, int64(0), 0, int64(0), []byte{}, int64(0), int64(0), uint64(0))
	f.Fuzz(func(t *testing.T, kind, bkind uint8, baseSecs int64, mult float64, maxSecs int64, attempts int, windowSecs int64,
		raw []byte, uptime, nowOffset int64, seed uint64) {
		s := Strategy{Kind: StrategyKind(kind % 4), MaxAttempts: attempts, Window: secsToDuration(windowSecs)}
		if s.Kind != None {
			s.Backoff = Backoff{Kind: BackoffKind(bkind % 4), BaseDelay: secsToDuration(baseSecs), Multiplier: mult, MaxDelay: secsToDuration(maxSecs)}
			if s.Backoff.Kind == Fixed {
				s.Backoff.Multiplier, s.Backoff.MaxDelay = 0, 0
			}
		}
		var failures []time.Time
		for len(raw) >= 8 {
			failures = append(failures, time.Unix(0, 0).Add(time.Duration(int64(binary.LittleEndian.Uint64(raw)))))
			raw = raw[8:]
		}
		now := time.Unix(0, 0).Add(time.Duration(nowOffset))
		d, err := Decide(s, failures, time.Duration(uptime), seed, now)
		if err != nil {
			if s.Validate() == nil && len(failures) > 0 {
				t.Fatalf("valid input refused: %v", err)
			}
			return
		}
		checkDecision(t, s, d, newest(failures))
	})
}

// fataler is what checkDecision needs of *testing.T and *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// newest returns the latest of failures.
func newest(failures []time.Time) time.Time {
	last := failures[0]
	for _, f := range failures {
		if f.After(last) {
			last = f
		}
	}
	return last
}

// checkDecision asserts the bounds every decision on failures whose newest
// is last keeps.
func checkDecision(t fataler, s Strategy, d Decision, last time.Time) {
	t.Helper()
	switch {
	case d.InWindow < 1:
		t.Fatalf("counted %d failures", d.InWindow)
	case d.Action == Fatal:
		if d.Owed != 0 || d.Delay != 0 || d.Jitter != 0 || !d.Due.IsZero() {
			t.Fatalf("fatal decision with delays: %+v", d)
		}
	case d.Owed < 0 || d.Owed > ceiling:
		t.Fatalf("owed %v outside [0, %v]", d.Owed, ceiling)
	case d.Delay < 0 || d.Delay > d.Owed:
		t.Fatalf("credited %v outside [0, owed %v]", d.Delay, d.Owed)
	case d.Jitter < 0 || (d.Delay > 0 && 4*int64(d.Jitter) >= int64(d.Delay)) || (d.Delay == 0 && d.Jitter != 0):
		t.Fatalf("jitter %v for credited %v", d.Jitter, d.Delay)
	case s.Backoff.Kind != ExponentialWithJitter && d.Jitter != 0:
		t.Fatalf("jitter %v for %v", d.Jitter, s.Backoff.Kind)
	case d.Due.Before(last):
		t.Fatalf("due %v before the newest failure %v", d.Due, last)
	}
}

// secsToDuration turns fuzzed seconds into a Duration, saturating.
func secsToDuration(secs int64) time.Duration {
	if secs > maxDelaySecs || secs < -maxDelaySecs {
		return time.Duration(math.MaxInt64 / int64(time.Second) * int64(time.Second))
	}
	return time.Duration(secs) * time.Second
}
