// Package seedhash derives a job's jitter seed from its identity.
package seedhash

// Hash is the 64-bit FNV-1a hash of bytes added one at a time.
type Hash uint64

// New returns the hash of no bytes.
func New() Hash { return 14695981039346656037 }

// Add adds the byte c.
func (h *Hash) Add(c byte) { *h = (*h ^ Hash(c)) * 1099511628211 }
