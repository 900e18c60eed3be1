// Package deadlettertest checks that a queuekit.Driver keeps the dead-letter kit's promises.
//
// As testing/fstest does for file systems, it is one suite, [Run], that
// each engine runs against its real server.
//
// The suite drives replays on a clock of its own (a sleep moves it
// forward) and interleaves them through ReplayOptions.Between, so it
// takes no real time and does not depend on the machine's speed. It
// checks: a replay interrupted between a send and a removal, run again,
// sends each letter once and loses none; a forged letter, or one whose
// identity is not the one read, is not sent; a purge removes only what its
// filter selects; sends are paced within 5% of the rate asked, progress
// told at most once a second; two replays at once, one fast and one slow,
// send each letter once; a letter already gone is skipped, not an error;
// a dry run and a limit send what they say.
package deadlettertest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/retrypolicy/retrypolicy/queuekit"
	"github.com/retrypolicy/retrypolicy/retry"
)

// Fixture is what an engine gives the suite besides its Driver: dead
// letters made and forged, and what reached its queue. Each Open of the
// suite gets one of its own, with no dead letter yet.
type Fixture interface {
	// Driver is the engine's, on the fixture's dead letters.
	Driver() queuekit.Driver
	// Route is where a replay sends them back.
	Route() queuekit.Route
	// Make gives up a letter carrying key, for reason.
	Make(t *testing.T, key string, reason retry.Reason)
	// Forge stores a letter carrying key that claims to be a dead letter
	// but may not be sent back (or is no dead letter at all).
	Forge(t *testing.T, key string)
	// Key is the key a letter read carries.
	Key(l queuekit.Letter) string
	// Arrived is how many times each key reached the queue.
	Arrived(t *testing.T) map[string]int
}

// Run runs the suite, each check on a fixture open returns.
func Run(t *testing.T, open func(t *testing.T) Fixture) {
	checks := []struct {
		name string
		run  func(t *testing.T, s *suite)
	}{
		{"InterruptedAndResumed", interrupted},
		{"ForgedRefused", forged},
		{"PurgeSelects", purge},
		{"Paced", paced},
		{"TwoReplaysAtOnce", twoReplays},
		{"GoneSkipped", gone},
		{"DryRunAndLimit", dryRunAndLimit},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			f := open(t)
			s := &suite{f: f, now: time.Now()}
			s.d = queuekit.DeadLetters{Driver: f.Driver(), Page: 2, Now: s.clock, Sleep: s.sleep}
			c.run(t, s)
		})
	}
}

// suite is one check's fixture, and the clock its replays go by.
type suite struct {
	f   Fixture
	d   queuekit.DeadLetters
	now time.Time
}

// clock is the suite's time.
func (s *suite) clock() time.Time { return s.now }

// sleep moves the suite's time forward.
func (s *suite) sleep(ctx context.Context, d time.Duration) error {
	s.now = s.now.Add(d)
	return ctx.Err()
}

// since moves the suite's clock to the machine's, when that is later: a
// read begins after the letters made so far (a driver may leave out those
// given up after it began).
func (s *suite) since() {
	if now := time.Now(); now.After(s.now) {
		s.now = now
	}
}

// make gives up n letters keyed prefix0, prefix1…, for reason.
func (s *suite) make(t *testing.T, prefix string, n int) []string {
	return s.makeFor(t, retry.AttemptsExhausted, keysOf(prefix, n))
}

// makeFor gives up a letter for reason keyed each of keys, and returns
// keys.
func (s *suite) makeFor(t *testing.T, reason retry.Reason, keys []string) []string {
	for _, k := range keys {
		s.f.Make(t, k, reason)
	}
	s.since()
	return keys
}

// keysOf is prefix0, prefix1… up to n keys.
func keysOf(prefix string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return keys
}

// keys are the keys of the letters listed now, sorted.
func (s *suite) keys(t *testing.T) []string {
	var keys []string
	for l, err := range s.d.List(context.Background(), queuekit.Filter{}) {
		if err != nil {
			t.Fatalf("listing: %v", err)
		}
		keys = append(keys, s.f.Key(l))
	}
	slices.Sort(keys)
	return keys
}

// replay replays every letter with o (a rate of 1,000 when none), and
// returns its report and the outcomes by key.
func (s *suite) replay(ctx context.Context, t *testing.T, o queuekit.ReplayOptions) (queuekit.ReplayReport, map[string]queuekit.ReplayOutcome, error) {
	o.Route = s.f.Route()
	if o.Rate == 0 {
		o.Rate = 1000
	}
	out := map[string]queuekit.ReplayOutcome{}
	each := o.Each
	o.Each = func(r queuekit.ReplayResult) {
		out[s.f.Key(r.Letter)] = r.Outcome
		if each != nil {
			each(r)
		}
	}
	rep, err := s.d.Replay(ctx, queuekit.Filter{}, o)
	return rep, out, err
}

// once fails t unless each of keys reached the queue exactly once, and
// nothing else did.
func (s *suite) once(t *testing.T, keys []string) {
	t.Helper()
	arrived := s.f.Arrived(t)
	for _, k := range keys {
		if arrived[k] != 1 {
			t.Errorf("%s reached the queue %d times, want once", k, arrived[k])
		}
	}
	if len(arrived) != len(keys) {
		t.Errorf("reached the queue: %v, want %v once each", arrived, keys)
	}
}

// interrupted: a replay ended between a send and its removal, run again,
// sends each letter once and leaves none.
func interrupted(t *testing.T, s *suite) {
	keys := s.make(t, "i", 5)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sent := 0
	_, _, err := s.replay(ctx, t, queuekit.ReplayOptions{Between: func(step queuekit.Step, _ queuekit.Letter) {
		if step == queuekit.StepSent {
			if sent++; sent == 3 {
				cancel() // the process dies here
			}
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the interrupted replay returned %v, want context.Canceled", err)
	}
	rep, _, err := s.replay(context.Background(), t, queuekit.ReplayOptions{})
	if err != nil || rep.Failed+rep.Refused > 0 {
		t.Fatalf("the replay run again: %+v, %v", rep, err)
	}
	s.once(t, keys)
	if left := s.keys(t); len(left) > 0 {
		t.Errorf("left after the replays: %v", left)
	}
}

// forged: a forged letter is not sent and is left in place; a letter
// whose identity is not the one read (given up again since) is not sent.
func forged(t *testing.T, s *suite) {
	keys := s.make(t, "g", 1)
	s.f.Forge(t, "forged")
	s.since()
	before := s.keys(t)
	var letter queuekit.Letter
	for l, err := range s.d.List(context.Background(), queuekit.Filter{}) {
		if err == nil && s.f.Key(l) == keys[0] {
			letter = l
		}
	}
	other := letter
	other.GivenUp = other.GivenUp.Add(time.Second)
	if _, err := s.f.Driver().Send(context.Background(), other, s.f.Route()); !errors.Is(err, queuekit.ErrGone) {
		t.Errorf("a letter of another identity sent: %v, want queuekit.ErrGone", err)
	}
	if err := s.f.Driver().Remove(context.Background(), other); !errors.Is(err, queuekit.ErrGone) {
		t.Errorf("a letter of another identity removed: %v, want queuekit.ErrGone", err)
	}
	rep, out, err := s.replay(context.Background(), t, queuekit.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.once(t, keys)
	if slices.Contains(before, "forged") {
		if out["forged"] != queuekit.ReplayRefused || rep.Refused != 1 {
			t.Errorf("the forged letter: %q (report %+v), want refused", out["forged"], rep)
		}
		if left := s.keys(t); !slices.Equal(left, []string{"forged"}) {
			t.Errorf("left: %v, want the forged letter", left)
		}
	}
}

// purge: a filter's purge removes only what it selects; none is refused.
func purge(t *testing.T, s *suite) {
	s.make(t, "a", 3)
	kept := s.makeFor(t, retry.NotRetryable, keysOf("b", 2))
	if _, err := s.d.Purge(context.Background(), queuekit.Filter{}); err == nil {
		t.Error("a purge with no filter: no error")
	}
	n, err := s.d.Purge(context.Background(), queuekit.Filter{Reasons: []retry.Reason{retry.AttemptsExhausted}})
	if err != nil || n != 3 {
		t.Fatalf("purged %d, %v; want 3", n, err)
	}
	if left := s.keys(t); !slices.Equal(left, kept) {
		t.Errorf("left: %v, want %v", left, kept)
	}
	if len(s.f.Arrived(t)) > 0 {
		t.Errorf("a purge sent: %v", s.f.Arrived(t))
	}
}

// paced: 11 letters at 5 a second are sent over 2 s (within 5%), progress
// told at most once a second and once at the end.
func paced(t *testing.T, s *suite) {
	keys := s.make(t, "p", 11)
	var sends []time.Time
	var told []queuekit.ReplayProgress
	rep, _, err := s.replay(context.Background(), t, queuekit.ReplayOptions{Rate: 5,
		Between: func(step queuekit.Step, _ queuekit.Letter) {
			if step == queuekit.StepSend {
				sends = append(sends, s.now)
			}
		},
		Progress: func(p queuekit.ReplayProgress) { told = append(told, p) }})
	if err != nil || rep.Replayed != 11 {
		t.Fatalf("replayed %d, %v; want 11", rep.Replayed, err)
	}
	if took := sends[len(sends)-1].Sub(sends[0]); took < 1900*time.Millisecond || took > 2100*time.Millisecond {
		t.Errorf("11 sends at 5 a second took %s, want 2 s within 5%%", took)
	}
	for i := 1; i < len(told)-1; i++ {
		if gap := told[i].Elapsed - told[i-1].Elapsed; gap < time.Second {
			t.Errorf("progress told %s after the last", gap)
		}
	}
	if len(told) < 2 || told[len(told)-1].Replayed != 11 {
		t.Errorf("progress: %+v, want a line a second and the last with 11", told)
	}
	s.once(t, keys)
}

// twoReplays: a fast replay run while a slow one is under way (after its
// second send): each letter is sent once, by one of them; the slow one
// skips what the fast one took.
func twoReplays(t *testing.T, s *suite) {
	keys := s.make(t, "t", 6)
	var fast map[string]queuekit.ReplayOutcome
	sends := 0
	_, slow, err := s.replay(context.Background(), t, queuekit.ReplayOptions{Rate: 1,
		Between: func(step queuekit.Step, _ queuekit.Letter) {
			if step == queuekit.StepSend {
				if sends++; sends == 3 {
					var err error
					if _, fast, err = s.replay(context.Background(), t, queuekit.ReplayOptions{}); err != nil {
						t.Errorf("the fast replay: %v", err)
					}
				}
			}
		}})
	if err != nil {
		t.Fatalf("the slow replay: %v", err)
	}
	for _, k := range keys {
		sent := 0
		for _, o := range []queuekit.ReplayOutcome{slow[k], fast[k]} {
			if o == queuekit.ReplayReplayed || o == queuekit.ReplayDuplicate {
				sent++
			}
		}
		if sent != 1 {
			t.Errorf("%s sent by %d replays (slow %q, fast %q), want one", k, sent, slow[k], fast[k])
		}
	}
	if slow[keys[2]] != queuekit.ReplaySkipped || countOf(fast, queuekit.ReplayReplayed) != 4 {
		t.Errorf("slow %v, fast %v: want the fast one to send the 4 left, the slow one to skip the one it was about to send", slow, fast)
	}
	s.once(t, keys)
}

// countOf counts the outcomes o in out.
func countOf(out map[string]queuekit.ReplayOutcome, o queuekit.ReplayOutcome) int {
	n := 0
	for v := range maps.Values(out) {
		if v == o {
			n++
		}
	}
	return n
}

// gone: a letter removed since it was read is skipped by a send and a
// removal, whatever error the engine's client gives for it.
func gone(t *testing.T, s *suite) {
	s.make(t, "x", 1)
	var letter queuekit.Letter
	for l, err := range s.d.List(context.Background(), queuekit.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		letter = l
	}
	ctx := context.Background()
	if err := s.f.Driver().Remove(ctx, letter); err != nil {
		t.Fatalf("removing: %v", err)
	}
	if err := s.f.Driver().Remove(ctx, letter); !errors.Is(err, queuekit.ErrGone) {
		t.Errorf("removing it again: %v, want queuekit.ErrGone", err)
	}
	if _, err := s.f.Driver().Send(ctx, letter, s.f.Route()); !errors.Is(err, queuekit.ErrGone) {
		t.Errorf("sending it: %v, want queuekit.ErrGone", err)
	}
	if len(s.f.Arrived(t)) > 0 {
		t.Errorf("sent: %v", s.f.Arrived(t))
	}
}

// dryRunAndLimit: a dry run sends and removes nothing; a limit sends that
// many and leaves the rest.
func dryRunAndLimit(t *testing.T, s *suite) {
	keys := s.make(t, "d", 3)
	rep, _, err := s.replay(context.Background(), t, queuekit.ReplayOptions{DryRun: true})
	if err != nil || rep.Would != 3 || len(s.f.Arrived(t)) > 0 || len(s.keys(t)) != 3 {
		t.Fatalf("a dry run: %+v, %v, sent %v", rep, err, s.f.Arrived(t))
	}
	rep, _, err = s.replay(context.Background(), t, queuekit.ReplayOptions{Limit: 2})
	if err != nil || rep.Replayed != 2 {
		t.Fatalf("a replay of 2: %+v, %v", rep, err)
	}
	if left := s.keys(t); !slices.Equal(left, keys[2:]) {
		t.Errorf("left: %v, want %v", left, keys[2:])
	}
	s.once(t, keys[:2])
}
