package deadlettertest_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/retrypolicy/retrypolicy/queuekit"
	"github.com/retrypolicy/retrypolicy/queuekit/deadlettertest"
	"github.com/retrypolicy/retrypolicy/retry"
)

// memory is a driver of dead letters held in memory: the suite's own
// check that its checks pass on a driver that keeps the contract.
type memory struct {
	mu      sync.Mutex
	letters map[uint64]queuekit.Letter
	last    uint64
	sent    map[string]int
	ids     map[string]bool // the identities sent: a send again is a duplicate
}

func (m *memory) Page(_ context.Context, c *queuekit.Cursor) ([]queuekit.Letter, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c.Last == 0 {
		c.Last = m.last
	}
	var page []queuekit.Letter
	id := c.After + 1
	for ; id <= c.Last && len(page) < c.Size; id++ {
		if l, ok := m.letters[id]; ok && !l.GivenUp.After(c.Began) {
			page = append(page, l)
		}
	}
	c.After, c.Done = id-1, id > c.Last
	return page, nil
}

func (m *memory) Get(_ context.Context, id uint64) (queuekit.Letter, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.letters[id]
	if !ok {
		return l, queuekit.ErrGone
	}
	return l, nil
}

// there is the letter l still there, or ErrGone.
func (m *memory) there(l queuekit.Letter) error {
	if have, ok := m.letters[l.ID]; !ok || !have.GivenUp.Equal(l.GivenUp) {
		return queuekit.ErrGone
	}
	return nil
}

func (m *memory) Send(_ context.Context, l queuekit.Letter, _ queuekit.Route) (queuekit.Sent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.there(l); err != nil {
		return queuekit.Sent{}, err
	}
	if l.Reason == "" {
		return queuekit.Sent{}, queuekit.ErrRefused
	}
	id := strconv.FormatUint(l.ID, 10) + "@" + l.GivenUp.String()
	if m.ids[id] {
		return queuekit.Sent{ID: l.ID, Duplicate: true}, nil
	}
	m.ids[id] = true
	m.sent[string(l.Payload)]++
	return queuekit.Sent{ID: l.ID}, nil
}

func (m *memory) Remove(_ context.Context, l queuekit.Letter) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.there(l); err != nil {
		return err
	}
	delete(m.letters, l.ID)
	return nil
}

func (m *memory) add(key, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last++
	m.letters[m.last] = queuekit.Letter{ID: m.last, GivenUp: time.Now(), Reason: reason, Payload: []byte(key)}
}

type memoryFixture struct{ m *memory }

func (f memoryFixture) Driver() queuekit.Driver { return f.m }
func (f memoryFixture) Route() queuekit.Route   { return queuekit.Route{} }
func (f memoryFixture) Make(_ *testing.T, key string, r retry.Reason) {
	f.m.add(key, r.String())
}
func (f memoryFixture) Forge(_ *testing.T, key string) { f.m.add(key, "") }
func (f memoryFixture) Key(l queuekit.Letter) string   { return string(l.Payload) }
func (f memoryFixture) Arrived(_ *testing.T) map[string]int {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	out := map[string]int{}
	for k, n := range f.m.sent {
		out[k] = n
	}
	return out
}

func newMemory(*testing.T) deadlettertest.Fixture {
	return memoryFixture{&memory{letters: map[uint64]queuekit.Letter{}, sent: map[string]int{}, ids: map[string]bool{}}}
}

// TestMemoryDriver: a driver that keeps the contract passes the suite.
func TestMemoryDriver(t *testing.T) {
	deadlettertest.Run(t, newMemory)
}
