package seedhash

import (
	"hash/fnv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestHashIsFNV1a checks the hash against the standard library's FNV-1a.
func TestHashIsFNV1a(t *testing.T) {
	for _, s := range []string{"", "job-42", "\xff\x00é"} {
		h := New()
		for i := 0; i < len(s); i++ {
			h.Add(s[i])
		}
		want := fnv.New64a()
		want.Write([]byte(s))
		assert.Equal(t, want.Sum64(), uint64(h), "%q", s)
	}
}
