package queuekit

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reasons is a driver of n letters, letter i given up for reason(i), read
// a page at a time; it sends and removes nothing.
type reasons struct {
	n      int
	reason func(i int) string
}

func (r reasons) Page(_ context.Context, c *Cursor) ([]Letter, error) {
	var page []Letter
	for id := c.After + 1; id <= uint64(r.n) && len(page) < c.Size; id++ {
		page = append(page, Letter{ID: id, Reason: r.reason(int(id))})
		c.After = id
	}
	c.Done = c.After == uint64(r.n)
	return page, nil
}
func (reasons) Get(context.Context, uint64) (Letter, error)       { return Letter{}, ErrGone }
func (reasons) Send(context.Context, Letter, Route) (Sent, error) { return Sent{}, ErrGone }
func (reasons) Remove(context.Context, Letter) error              { return ErrGone }

// TestACountIsBoundedWhateverItsReasons: 1,500 letters of distinct 4 KiB
// reasons are counted: the first 1,000 reasons kept, each cut to 256
// bytes; the other 500 letters counted as other; every letter in the
// total.
func TestACountIsBoundedWhateverItsReasons(t *testing.T) {
	long := strings.Repeat("x", 4096)
	d := DeadLetters{Driver: reasons{n: 1500, reason: func(i int) string { return strconv.Itoa(i) + long }}}
	c, err := d.Count(context.Background(), Filter{})
	require.NoError(t, err)
	assert.Equal(t, 1500, c.Total)
	assert.Len(t, c.ByReason, MaxReasons)
	assert.Equal(t, 500, c.Other)
	for r, n := range c.ByReason {
		assert.Len(t, r, MaxReasonLen)
		assert.Equal(t, 1, n)
	}
	c, err = DeadLetters{Driver: reasons{n: 1500, reason: func(int) string { return "down" }}}.Count(context.Background(), Filter{})
	require.NoError(t, err)
	assert.Equal(t, Counts{Total: 1500, ByReason: map[string]int{"down": 1500}}, c, "one reason: no other")
}

// TestTextFromOutsideIsEscaped: in text, C0, DEL, C1, the line and
// paragraph separators, quotes and backslashes are escaped visibly and
// the rest kept whole; in JSON, the same controls are \u escapes, and the
// value decodes unchanged.
func TestTextFromOutsideIsEscaped(t *testing.T) {
	const s = "a\x1b]0;t\x07\nb\x7f\u009b\u2028\"\\é" + "…"
	assert.Equal(t, `a\u001b]0;t\u0007\nb\u007f\u009b\u2028\"\\é…`, Escape(s))
	b, err := json.Marshal(map[string]string{"v": s})
	require.NoError(t, err)
	j := EscapeJSON(b)
	assert.NotContains(t, string(j), "\x7f")
	assert.NotContains(t, string(j), "\u009b")
	assert.NotContains(t, string(j), "\u2028")
	var back map[string]string
	require.NoError(t, json.Unmarshal(j, &back))
	assert.Equal(t, s, back["v"])
}

// TestBadReplayOptionsAndPagesAreRefused: each names its field and rule.
func TestBadReplayOptionsAndPagesAreRefused(t *testing.T) {
	d := DeadLetters{Driver: reasons{}}
	_, err := d.Replay(context.Background(), Filter{}, ReplayOptions{Rate: 1, Limit: -1})
	assert.EqualError(t, err, "queuekit: ReplayOptions.Limit: must not be negative, got -1")
	_, err = d.Replay(context.Background(), Filter{}, ReplayOptions{Rate: 1e-10})
	assert.ErrorContains(t, err, "queuekit: ReplayOptions.Rate: must be at least one a day")
	_, err = DeadLetters{Driver: reasons{}, Page: MaxPage + 1}.Count(context.Background(), Filter{})
	assert.EqualError(t, err, "queuekit: DeadLetters.Page: must be between 0 and 10000, got 10001")
	_, err = DeadLetters{}.Count(context.Background(), Filter{})
	assert.EqualError(t, err, "queuekit: DeadLetters.Driver: required")
}
