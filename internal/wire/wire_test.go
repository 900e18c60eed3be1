package wire

import (
	"encoding/json"
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

// TestAppendStringIsJSON: any string, control characters and invalid
// UTF-8 included, is written as valid JSON that reads back as the string,
// with U+FFFD for each byte of invalid UTF-8.
func TestAppendStringIsJSON(t *testing.T) {
	assert.Equal(t, `x:"a\u0007\"\ufffd😀"`, string(AppendString([]byte("x:"), "a\a\"\xff😀")))
	rapid.Check(t, func(t *rapid.T) {
		s := string(rapid.SliceOf(rapid.Byte()).Draw(t, "s"))
		b := AppendString(nil, s)
		require.True(t, json.Valid(b), "%s", b)
		var back string
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, string([]rune(s)), back, "each invalid byte as U+FFFD")
	})
}
