package queuekit_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/retrypolicy/retrypolicy/queuekit"
)

// shelf is a Driver of dead letters kept in memory, sent to a slice: the
// least an engine gives the kit.
type shelf struct {
	mu      sync.Mutex
	letters []queuekit.Letter
	sent    []string
}

func (s *shelf) Page(_ context.Context, c *queuekit.Cursor) ([]queuekit.Letter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var page []queuekit.Letter
	for _, l := range s.letters {
		if l.ID > c.After && len(page) < c.Size {
			page = append(page, l)
			c.After = l.ID
		}
	}
	c.Done = len(page) < c.Size
	return page, nil
}

func (s *shelf) Get(_ context.Context, id uint64) (queuekit.Letter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.letters {
		if l.ID == id {
			return l, nil
		}
	}
	return queuekit.Letter{}, queuekit.ErrGone
}

func (s *shelf) Send(_ context.Context, l queuekit.Letter, _ queuekit.Route) (queuekit.Sent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, have := range s.letters {
		if have.ID == l.ID && have.GivenUp.Equal(l.GivenUp) {
			s.sent = append(s.sent, string(l.Payload))
			s.letters = append(s.letters[:i], s.letters[i+1:]...)
			return queuekit.Sent{ID: uint64(len(s.sent)), Removed: true}, nil
		}
	}
	return queuekit.Sent{}, queuekit.ErrGone
}

func (s *shelf) Remove(ctx context.Context, l queuekit.Letter) error {
	_, err := s.Send(ctx, l, queuekit.Route{})
	return err
}

// A replay of dead letters at 2 a second: the third is sent a second
// after the first, on the replay's clock (here one that moves as it
// sleeps).
func ExampleDeadLetters_Replay() {
	at := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	s := &shelf{}
	for i, key := range []string{"charge-1", "charge-2", "charge-3"} {
		s.letters = append(s.letters, queuekit.Letter{ID: uint64(i + 1), GivenUp: at, Reason: "attempts_exhausted", Payload: []byte(key)})
	}
	now := at.Add(time.Hour)
	d := queuekit.DeadLetters{Driver: s, Now: func() time.Time { return now },
		Sleep: func(_ context.Context, by time.Duration) error { now = now.Add(by); return nil }}
	report, err := d.Replay(context.Background(), queuekit.Filter{}, queuekit.ReplayOptions{Rate: 2})
	fmt.Println(report.Replayed, report.Elapsed, err, s.sent)
	// Output: 3 1s <nil> [charge-1 charge-2 charge-3]
}
