package histcode

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestEveryHistoryReadsBack: any ascending instants and uptime read back
// as they were, whatever unit they are whole numbers of.
func TestEveryHistoryReadsBack(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		unit := rapid.SampledFrom([]int64{1, 1e3, 1e6, 1e9}).Draw(t, "unit")
		at := rapid.Int64Range(math.MinInt64/unit, math.MaxInt64/unit-1<<20).Draw(t, "first") * unit
		var ns []int64
		for range rapid.IntRange(0, 20).Draw(t, "n") {
			ns = append(ns, at)
			at += rapid.Int64Range(0, 1<<16).Draw(t, "gap") * unit
		}
		up := time.Duration(rapid.Int64Range(0, math.MaxInt64/unit).Draw(t, "uptime") * unit)
		b := Append(nil, ns, up)
		got, gotUp, err := Decode(b, nil)
		require.NoError(t, err)
		assert.Equal(t, len(ns), len(got))
		for i := range ns {
			assert.Equal(t, ns[i], got[i])
		}
		assert.Equal(t, up, gotUp)
		if unit == 1e9 {
			assert.Equal(t, byte(3), b[1], "whole seconds are written in seconds")
		}
	})
}

// TestTheUnitIsTheCoarsestThatHoldsAll: one instant off the millisecond
// makes the unit the microsecond or finer, and the uptime counts too.
func TestTheUnitIsTheCoarsestThatHoldsAll(t *testing.T) {
	ms := int64(time.Millisecond)
	for _, tc := range []struct {
		ns   []int64
		up   time.Duration
		code byte
	}{
		{[]int64{2 * 1e9, 5 * 1e9}, time.Second, 3},
		{[]int64{2 * 1e9, 5*1e9 + ms}, time.Second, 2},
		{[]int64{2 * 1e9, 5 * 1e9}, time.Microsecond, 1},
		{[]int64{2*1e9 + 1}, 0, 0},
		{nil, 0, 3},
	} {
		assert.Equal(t, tc.code, Append(nil, tc.ns, tc.up)[1], "%v %v", tc.ns, tc.up)
	}
}

// TestBadEncodingsAreRefused: a wrong version or unit, a value that passes
// int64 once in nanoseconds, a count past the data, and trailing data.
func TestBadEncodingsAreRefused(t *testing.T) {
	for name, b := range map[string][]byte{
		"empty":             nil,
		"version 4":         {4, 0, 0, 0},
		"version 2":         {2, 2, 0xd0, 0x0f, 0xf4, 0x03, 7},
		"unit 4":            {3, 4, 0, 0},
		"no unit":           {3},
		"first past int64":  {3, 3, 1, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0},
		"gap past int64":    {3, 3, 2, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0},
		"uptime past int64": {3, 3, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
		"count past data":   {3, 0, 0xff, 0x01, 0},
		"trailing":          {3, 0, 0, 0, 0},
	} {
		_, _, err := Decode(b, nil)
		assert.Error(t, err, name)
	}
}
