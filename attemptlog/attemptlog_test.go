package attemptlog_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/attemptlog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// readAll reads every attempt of text.
func readAll(text string) ([]attemptlog.Attempt, error) {
	r := attemptlog.NewReader(strings.NewReader(text))
	var out []attemptlog.Attempt
	for {
		a, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, a)
	}
}

// TestWrittenLinesReadBack: any attempt a Writer takes reads back equal,
// its times in UTC to the nanosecond.
func TestWrittenLinesReadBack(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		start := time.Unix(0, rapid.Int64Range(0, 1<<62).Draw(t, "start"))
		a := attemptlog.Attempt{
			Job:       rapid.StringN(1, 20, -1).Draw(t, "job"),
			Start:     start,
			End:       start.Add(time.Duration(rapid.Int64Range(0, 1<<40).Draw(t, "duration"))),
			Succeeded: rapid.Bool().Draw(t, "succeeded"),
		}
		if a.HasSeed = rapid.Bool().Draw(t, "has seed"); a.HasSeed {
			a.Seed = rapid.Uint64().Draw(t, "seed")
		}
		var b bytes.Buffer
		w := attemptlog.NewWriter(&b)
		require.NoError(t, w.Write(a))
		require.NoError(t, w.Flush())
		assert.Equal(t, 1, w.Lines())
		got, err := readAll(b.String())
		require.NoError(t, err, "%s", b.String())
		require.Len(t, got, 1)
		assert.Equal(t, a.Job, got[0].Job)
		assert.True(t, a.Start.Equal(got[0].Start) && a.End.Equal(got[0].End), "%v %v", a, got[0])
		assert.Equal(t, a.Succeeded, got[0].Succeeded)
		assert.Equal(t, a.HasSeed, got[0].HasSeed)
		assert.Equal(t, a.Seed, got[0].Seed)
	})
}

// TestTheLineFormat: both outcomes, a seed as a string or an integer,
// other fields ignored, blank lines skipped.
func TestTheLineFormat(t *testing.T) {
	got, err := readAll(`{"job":"a","started_at":"2026-11-02T15:00:00Z","ended_at":"2026-11-02T15:00:03.25Z","outcome":"failed","jitter_seed":"a-seed","host":{"x":[1,2]}}

{"job":"a","started_at":"2026-11-02T15:01:00+01:00","ended_at":"2026-11-02T15:01:01+01:00","outcome":"succeeded","jitter_seed":7}
`)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.False(t, got[0].Succeeded)
	assert.Equal(t, 3250*time.Millisecond, got[0].End.Sub(got[0].Start))
	assert.Equal(t, retrypolicy.SeedFromString("a-seed"), got[0].Seed)
	assert.True(t, got[1].Succeeded)
	assert.True(t, got[1].Start.Equal(time.Date(2026, 11, 2, 14, 1, 0, 0, time.UTC)))
	assert.Equal(t, uint64(7), got[1].Seed)
}

// TestBadLinesAreNamed: each bad line is a *LineError naming its number,
// blank lines counted, and the field at fault.
func TestBadLinesAreNamed(t *testing.T) {
	good := `{"job":"a","started_at":"2026-11-02T15:00:00Z","ended_at":"2026-11-02T15:00:00Z","outcome":"failed"}` + "\n\n"
	for _, tc := range []struct{ line, want string }{
		{`[1]`, "line 3: not a JSON object"},
		{`{"started_at":"2026-11-02T15:00:00Z","ended_at":"2026-11-02T15:00:00Z","outcome":"failed"}`, "line 3: job: missing"},
		{`{"job":"a","started_at":"yesterday","ended_at":"2026-11-02T15:00:00Z","outcome":"failed"}`, `line 3: started_at: must be an RFC 3339 time, got "yesterday"`},
		{`{"job":"a","started_at":"2026-11-02T15:00:01Z","ended_at":"2026-11-02T15:00:00Z","outcome":"failed"}`, "line 3: ended_at: must not be before started_at"},
		{`{"job":"a","started_at":"1969-12-31T23:59:59Z","ended_at":"2026-11-02T15:00:00Z","outcome":"failed"}`, "line 3: started_at: must be from 1970 to 2262"},
		{`{"job":"a","started_at":"2026-11-02T15:00:00Z","ended_at":"2026-11-02T15:00:00Z","outcome":"ok"}`, `line 3: outcome: must be succeeded or failed, got "ok"`},
		{`{"job":"a","started_at":"2026-11-02T15:00:00Z","ended_at":"2026-11-02T15:00:00Z","outcome":"failed","jitter_seed":-1}`, "line 3: jitter_seed: must be a string or an unsigned integer"},
	} {
		_, err := readAll(good + tc.line + "\n")
		var le *attemptlog.LineError
		require.ErrorAs(t, err, &le, tc.line)
		assert.Equal(t, 3, le.Line)
		assert.Contains(t, err.Error(), tc.want)
	}
	_, err := readAll(good + strings.Repeat(" ", attemptlog.MaxLine+1) + "\n")
	assert.ErrorContains(t, err, "line 3: longer than 1048576 bytes")
}

// TestOnlyJSONWhiteSpaceSurroundsALine: space, tab, CR and LF may surround
// a line's object, or make a blank line; any other white space (U+00A0,
// vertical tab, form feed, U+0085, U+2003, U+3000) around an object, or
// alone on a line, is a line that is not a JSON object. Until the reader
// trimmed JSON's white space alone, all 12 such lines were read as valid.
func TestOnlyJSONWhiteSpaceSurroundsALine(t *testing.T) {
	object := `{"job":"a","started_at":"2026-11-02T15:00:00Z","ended_at":"2026-11-02T15:00:00Z","outcome":"failed"}`
	got, err := readAll(" \t" + object + "\t \r\n \t\r\n" + object + "\n")
	require.NoError(t, err, "JSON's white space around an object, and a blank line of it")
	assert.Len(t, got, 2)
	for _, space := range []string{"\u00a0", "\v", "\f", "\u0085", "\u2003", "\u3000"} {
		for _, line := range []string{space + object + space, space} {
			_, err := readAll(object + "\n" + line + "\n")
			assert.ErrorContains(t, err, "line 2: not a JSON object", "%q", line)
		}
	}
}

// TestAReadErrorIsReturnedAsItIs: a failure to read is not a line's.
func TestAReadErrorIsReturnedAsItIs(t *testing.T) {
	broken := errors.New("disk on fire")
	_, err := attemptlog.NewReader(io.MultiReader(strings.NewReader("\n"), iotestErr{broken})).Read()
	assert.ErrorIs(t, err, broken)
	var le *attemptlog.LineError
	assert.False(t, errors.As(err, &le))
}

type iotestErr struct{ err error }

func (r iotestErr) Read([]byte) (int, error) { return 0, r.err }

// TestTheWriterWritesOnlyWhatReads: an attempt a Reader would refuse is
// an error and writes nothing.
func TestTheWriterWritesOnlyWhatReads(t *testing.T) {
	at := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	for _, a := range []attemptlog.Attempt{
		{Start: at, End: at},
		{Job: "a", Start: at, End: at.Add(-time.Millisecond)},
		{Job: "a", Start: time.Time{}, End: at},
		{Job: "a", Start: at, End: time.Date(2263, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		var b bytes.Buffer
		w := attemptlog.NewWriter(&b)
		assert.Error(t, w.Write(a), "%+v", a)
		require.NoError(t, w.Flush())
		assert.Zero(t, b.Len())
		assert.Zero(t, w.Lines())
	}
}

// Example writes a job's failed attempt and its success, and reads them
// back.
func Example() {
	at := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
	w := attemptlog.NewWriter(os.Stdout)
	_ = w.Write(attemptlog.Attempt{Job: "42", Start: at, End: at.Add(3 * time.Second)})
	_ = w.Write(attemptlog.Attempt{Job: "42", Start: at.Add(time.Minute), End: at.Add(61 * time.Second), Succeeded: true})
	_ = w.Flush()
	// Output:
	// {"job":"42","started_at":"2026-11-02T15:00:00Z","ended_at":"2026-11-02T15:00:03Z","outcome":"failed"}
	// {"job":"42","started_at":"2026-11-02T15:01:00Z","ended_at":"2026-11-02T15:01:01Z","outcome":"succeeded"}
}

// TestTheLineRules: a line of exactly MaxLine bytes reads, with an LF or a
// CR LF after it; a longer one is named by its number, blank lines
// counted; escapes are decoded before fields and outcomes are compared; a
// byte order mark before the first line is skipped; every line is valid
// JSON, ignored fields included; a value that is not a JSON object is
// named so.
func TestTheLineRules(t *testing.T) {
	const line = `{"job":"a","started_at":"2026-11-02T15:00:00Z","ended_at":"2026-11-02T15:00:00Z","outcome":"failed"`
	exact := line + `,"pad":"` + strings.Repeat("x", attemptlog.MaxLine-len(line)-len(`,"pad":""}`)) + `"}`
	require.Len(t, exact, attemptlog.MaxLine)
	for _, ending := range []string{"\n", "\r\n", ""} {
		got, err := readAll(exact + ending)
		require.NoError(t, err, "a line of exactly MaxLine bytes, ending %q", ending)
		assert.Len(t, got, 1)
	}
	longer := strings.Replace(exact, `"pad":"`, `"pad":"x`, 1)
	_, err := readAll("\n\n\n\n\n\n" + longer + "\n")
	assert.EqualError(t, err, "line 7: longer than 1048576 bytes", "after six blank lines")
	_, err = readAll("\n\n" + longer + "x\r\n")
	assert.EqualError(t, err, "line 3: longer than 1048576 bytes")

	escaped, err := readAll(`{"j\u006fb":"\u0061","started_at":"2026-11-02T15:00:00Z","ended_at":"2026-11-02T15:00:00Z","outcome":"fail\u0065d"}` + "\n")
	require.NoError(t, err)
	assert.Equal(t, "a", escaped[0].Job)
	assert.False(t, escaped[0].Succeeded)

	bom, err := readAll("\xef\xbb\xbf" + line + "}\n")
	require.NoError(t, err)
	assert.Len(t, bom, 1)

	badUTF8, err := readAll(`{"job":"a` + "\xff" + `b","started_at":"2026-11-02T15:00:00Z","ended_at":"2026-11-02T15:00:00Z","outcome":"failed"}`)
	require.NoError(t, err)
	assert.Equal(t, "a\uFFFDb", badUTF8[0].Job)

	for _, bad := range []string{
		line + `,"x":[1}}`,
		line + `,"x":{"a" "b"}}`,
		line + `,"x":tru}`,
		line + `,"x":"\q"}`,
		line + `}}`,
		line + `} 1`,
		`[` + line + `}]`,
		`"a line"`,
		line + `,"x":` + strings.Repeat("[", attemptlog.MaxDepth) + strings.Repeat("]", attemptlog.MaxDepth) + `}`,
	} {
		_, err := readAll(bad + "\n")
		assert.EqualError(t, err, "line 1: not a JSON object", "%.80s", bad)
	}
	deep, err := readAll(line + `,"x":` + strings.Repeat("[", attemptlog.MaxDepth-1) + strings.Repeat("]", attemptlog.MaxDepth-1) + "}\n")
	require.NoError(t, err, "nested %d levels in all", attemptlog.MaxDepth)
	assert.Len(t, deep, 1)
	_, err = readAll(`{"job":1,"started_at":"2026-11-02T15:00:00Z","ended_at":"2026-11-02T15:00:00Z","outcome":"failed"}`)
	assert.EqualError(t, err, "line 1: job: must be a string")
}
