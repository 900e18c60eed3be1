package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/retrypolicy/retrypolicy/internal/front/report"
	"github.com/retrypolicy/retrypolicy/internal/wire"
)

func (c stdio) runDecide(args []string) int {
	sc := c.subcommand("decide", "decide [--lines] [FILE|-]", `Reads {"retry_strategy": {…} (optional), "failures": ["RFC 3339", …], "last_uptime_secs": N (optional),
"jitter_seed": "…" (optional), "now": "RFC 3339"} and prints {"action", "reason" (fatal only),
"failures_in_window", "owed_secs", "delay_secs", "jitter_secs", "due"}. Uptime is read to
the nanosecond (finer digits are dropped); a due time past year 9999 prints as the year's last
instant. Exits 0 for every decision, 2 for invalid input (each problem on a line, starting with
its field's path; at most 20, then how many more).`)
	lines := sc.fs.Bool("lines", false, "read JSON Lines and write one output line per input line, in order, each as soon as no\nmore input is waiting; a bad line yields {\"error\": \"…\"} and the stream goes on; exit 2 at\nthe end if any line was bad")
	in, stop := sc.parseInput(args)
	if stop >= 0 {
		return stop
	}
	defer in.Close()
	stdout, stderr := c.stdout, c.stderr
	if *lines {
		return stdio{in, stdout, stderr}.decideLines()
	}
	doc, err := io.ReadAll(io.LimitReader(in, report.MaxLine+1))
	if err != nil {
		fmt.Fprintln(stderr, "retrypolicy:", err)
		return exitIO
	}
	if len(doc) > report.MaxLine {
		fmt.Fprintf(stderr, "$: must be at most %d bytes\n", report.MaxLine)
		return exitInvalid
	}
	out, probs := report.NewDecider().Decide(doc, nil)
	if probs != nil {
		for _, p := range probs {
			fmt.Fprintln(stderr, p)
		}
		return exitInvalid
	}
	stdout.Write(append(out, '\n'))
	return exitOK
}

// decideLines streams JSON Lines from stdin, holding one line at a time,
// so that memory does not grow with the stream. An answer is written out
// as soon as the input holds no further complete line, so that a caller
// that writes a request and waits gets its answer, while a file is
// answered in large writes.
func (c stdio) decideLines() int {
	stderr := c.stderr
	br := bufio.NewReaderSize(c.stdin, 64<<10)
	w := bufio.NewWriterSize(c.stdout, 64<<10)
	a := lineAnswerer{d: report.NewDecider()}
	var line []byte
	for {
		var err error
		line, err = readLine(br, line[:0])
		if len(line) == 0 && err == io.EOF {
			break
		}
		if err != nil && err != io.EOF && !errors.Is(err, errLineTooLong) {
			w.Flush()
			fmt.Fprintln(stderr, "retrypolicy:", err)
			return exitIO
		}
		w.Write(append(a.answer(line, errors.Is(err, errLineTooLong)), '\n'))
		if err == io.EOF {
			break
		}
		if br.Buffered() == 0 || !bytes.Contains(peekAll(br), []byte{'\n'}) {
			if err := w.Flush(); err != nil { // no complete line waits: answer now
				fmt.Fprintln(stderr, "retrypolicy:", err)
				return exitIO
			}
		}
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(stderr, "retrypolicy:", err)
		return exitIO
	}
	if bad := a.bad; bad > 0 {
		noun := "lines"
		if bad == 1 {
			noun = "line"
		}
		fmt.Fprintf(stderr, "retrypolicy: %d bad %s (with --lines, each request is one JSON object on one line)\n", bad, noun)
		return exitInvalid
	}
	return exitOK
}

// lineAnswerer answers the lines of decide --lines one after another,
// reusing its buffer, and counts the bad ones.
type lineAnswerer struct {
	d   *report.Decider
	out []byte
	bad int
}

// answer returns the answer to one line, valid until the next: a decision,
// or an error (tooLong for a line cut at report.MaxLine).
func (a *lineAnswerer) answer(line []byte, tooLong bool) []byte {
	var probs []string
	if tooLong {
		probs = []string{"$: must be at most " + strconv.Itoa(report.MaxLine) + " bytes"}
	} else {
		a.out, probs = a.d.Decide(line, a.out[:0])
	}
	if probs == nil {
		return a.out
	}
	a.bad++
	if len(probs) == 1 && strings.HasPrefix(probs[0], "$: must be valid JSON") { // a line of something else, or of a request over several lines
		probs[0] = "$: must be a request, one JSON object on one line" + strings.TrimPrefix(probs[0], "$: must be valid JSON")
	}
	a.out = appendError(a.out[:0], probs)
	return a.out
}

// peekAll returns what br holds buffered, without reading more.
func peekAll(br *bufio.Reader) []byte {
	b, _ := br.Peek(br.Buffered())
	return b
}

// appendError writes {"error": "p1; p2; …"}.
func appendError(out []byte, probs []string) []byte {
	var msg bytes.Buffer
	for i, p := range probs {
		if i > 0 {
			msg.WriteString("; ")
		}
		msg.WriteString(p)
	}
	return append(wire.AppendString(append(out, `{"error":`...), msg.String()), '}')
}

var errLineTooLong = errors.New("line too long")

// readLine appends the next line of br to buf, without its line ending. A
// line longer than maxLine is skipped to its end and reported with
// errLineTooLong. It returns io.EOF with the last line when the input ends
// without a newline.
func readLine(br *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if room := report.MaxLine + 1 - len(buf); room > 0 { // keep one byte past the limit, to tell
			buf = append(buf, chunk[:min(len(chunk), room)]...)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err != nil && err != io.EOF:
			return buf, err
		}
		buf = bytes.TrimRight(buf, "\r\n")
		if len(buf) > report.MaxLine {
			return buf[:0], errLineTooLong
		}
		return buf, err
	}
}
