package wire

import (
	"hash/fnv"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestAppendSeconds(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0", 8 * time.Second: "8", 1500 * time.Millisecond: "1.5", 1: "0.000000001",
		-2500 * time.Millisecond: "-2.5", time.Duration(1<<63 - 1): "9223372036.854775807",
	} {
		assert.Equal(t, want, string(AppendSeconds(nil, d)))
	}
}

func TestTrimBOM(t *testing.T) {
	doc, n := TrimBOM([]byte("\xef\xbb\xbf{}"))
	assert.Equal(t, "{}", string(doc))
	assert.Equal(t, 3, n)
	doc, n = TrimBOM([]byte("{}"))
	assert.Equal(t, "{}", string(doc))
	assert.Equal(t, 0, n)
}

// TestSeedIsFNV1a checks the seed against the standard library's FNV-1a.
func TestSeedIsFNV1a(t *testing.T) {
	for _, s := range []string{"", "job-42", "\xff\x00é"} {
		h := NewSeed()
		for i := 0; i < len(s); i++ {
			h.Add(s[i])
		}
		want := fnv.New64a()
		want.Write([]byte(s))
		assert.Equal(t, want.Sum64(), uint64(h), "%q", s)
	}
}

// TestAppendSecondsIsExact: a duration written as seconds reads back as
// the same duration, exactly.
func TestAppendSecondsIsExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := time.Duration(rapid.Int64Range(0, 1<<63-1).Draw(t, "d"))
		text := string(AppendSeconds(nil, d))
		r, ok := new(big.Rat).SetString(text)
		require.True(t, ok, text)
		ns := new(big.Rat).Mul(r, big.NewRat(1e9, 1))
		require.True(t, ns.IsInt(), text)
		assert.Equal(t, int64(d), ns.Num().Int64(), text)
	})
}

// TestProblemsKeepTheFirstTwenty: a document's problems are its first 20,
// then a count of the rest, said as "and N more"; a reset keeps the room.
func TestProblemsKeepTheFirstTwenty(t *testing.T) {
	var ps Problems[int]
	for i := range 25 {
		ps.Add(i)
	}
	if len(ps.List) != 20 || ps.List[19] != 19 || ps.More != 5 || !ps.Full() {
		t.Fatalf("kept %v, %d more", ps.List, ps.More)
	}
	if got := AndMore(ps.More); got != "and 5 more" {
		t.Fatalf("AndMore(5) = %q", got)
	}
	room := cap(ps.List)
	ps.Reset()
	if len(ps.List) != 0 || ps.More != 0 || cap(ps.List) != room || ps.Full() {
		t.Fatalf("after Reset: %v, %d more, room %d of %d", ps.List, ps.More, cap(ps.List), room)
	}
}
