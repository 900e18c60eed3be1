package queuekit

import (
	"errors"
	"sync"

	"github.com/retrypolicy/retrypolicy"
)

// strategyCache holds the strategies jobs carry, compiled, by their bytes:
// jobs repeat a few, and compiling costs more than deciding. It keeps the
// most recently used, at most MaxCachedStrategies of them and MaxCachedBytes
// counted as each one's bytes plus the most a compiled Policy takes, and
// never a strategy that is invalid or longer than MaxCachedDescriptor,
// which are parsed again on each use.
type strategyCache struct {
	mu      sync.Mutex
	entries map[string]*cacheEntry
	recent  cacheEntry // the list's sentinel: recent.next is the most recent
	bytes   int
}

type cacheEntry struct {
	key        string
	policy     *retrypolicy.Policy
	prev, next *cacheEntry
}

// The bounds of the cache of jobs' own strategies.
const (
	// MaxCachedStrategies is the most strategies the cache holds.
	MaxCachedStrategies = 2048
	// MaxCachedBytes is the most bytes it holds, each strategy counted as
	// its descriptor's bytes plus the most a compiled Policy takes.
	MaxCachedBytes = 16 << 20
	// MaxCachedDescriptor is the longest descriptor it keeps; a longer one
	// is compiled on each use.
	MaxCachedDescriptor = 4 << 10
	// policyBytes is what an entry costs beside its key: a compiled Policy
	// takes at most 8.5 KiB, the entry and the map's slot the rest.
	policyBytes = 9 << 10
)

// Cached returns how many of the jobs' own strategies p's cache holds,
// and the bytes it counts for them.
func (p *Policies) Cached() (strategies, bytes int) {
	p.cache.mu.Lock()
	defer p.cache.mu.Unlock()
	return len(p.cache.entries), p.cache.bytes
}

// get returns the compiled strategy raw, or a *retrypolicy.ValidationError.
func (c *strategyCache) get(raw []byte) (*retrypolicy.Policy, error) {
	c.mu.Lock()
	if e, ok := c.entries[string(raw)]; ok {
		c.unlink(e)
		c.pushFront(e)
		c.mu.Unlock()
		return e.policy, nil
	}
	c.mu.Unlock()
	p, ve := compileStrategy(raw)
	if ve != nil {
		return nil, ve
	}
	if len(raw) <= MaxCachedDescriptor {
		c.add(string(raw), p)
	}
	return p, nil
}

// add caches p under key, evicting the least recently used entries to
// stay within the bounds.
func (c *strategyCache) add(key string, p *retrypolicy.Policy) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = make(map[string]*cacheEntry)
		c.recent.prev, c.recent.next = &c.recent, &c.recent
	}
	if _, ok := c.entries[key]; ok { // another goroutine compiled it too
		return
	}
	for len(c.entries) > 0 && (len(c.entries) >= MaxCachedStrategies || c.bytes+len(key)+policyBytes > MaxCachedBytes) {
		oldest := c.recent.prev
		c.unlink(oldest)
		delete(c.entries, oldest.key)
		c.bytes -= len(oldest.key) + policyBytes
	}
	e := &cacheEntry{key: key, policy: p}
	c.entries[key] = e
	c.pushFront(e)
	c.bytes += len(key) + policyBytes
}

func (c *strategyCache) unlink(e *cacheEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
}

func (c *strategyCache) pushFront(e *cacheEntry) {
	e.prev, e.next = &c.recent, c.recent.next
	c.recent.next.prev = e
	c.recent.next = e
}

// compileStrategy parses and compiles a job's strategy.
func compileStrategy(raw []byte) (*retrypolicy.Policy, *retrypolicy.ValidationError) {
	s, err := retrypolicy.Parse(raw)
	if err == nil {
		var p *retrypolicy.Policy
		if p, err = retrypolicy.Compile(s); err == nil {
			return p, nil
		}
	}
	var ve *retrypolicy.ValidationError
	if !errors.As(err, &ve) {
		ve = &retrypolicy.ValidationError{Errors: []retrypolicy.FieldError{{Field: "$", Rule: err.Error()}}}
	}
	return nil, ve
}
