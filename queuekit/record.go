package queuekit

import (
	"encoding/base64"
	"errors"
	"strconv"
	"time"

	"github.com/retrypolicy/retrypolicy/internal/histcode"
	"github.com/retrypolicy/retrypolicy/retry"
)

// Record is what an adapter keeps of a job between its runs: the last
// attempt whose end it saw, and the failures that can still count.
//
// Its binary form ([Record.AppendBinary]) is the root History's
// (History.MarshalBinary): a version byte and a unit, the count of
// failures, the first instant and each gap to the next as varints in the
// coarsest unit that holds them exactly (a second, a millisecond, a
// microsecond or a nanosecond), and an uptime that a record leaves at 0
// (each run measures its own). Failures to the millisecond take 2 bytes a
// failure a few seconds apart, 3 minutes apart, 5 a week apart. In a job's JSON
// metadata ([Record.AppendJSON]) the binary form is a base64url string
// beside the attempt:
//
//	{"seen_attempt": 3, "history": "AwIDqNixzLNonBisGwA"}
//
// holds three failures: at 15:00:04.7, 15:00:01.2 and 14:59:58.1 UTC on
// 2 November 2026, the newest after attempt 3.
type Record struct {
	// Seen is the last attempt whose end the adapter saw.
	Seen int
	// Failures are the failure instants, Unix nanoseconds, ascending.
	Failures []int64
	// GaveUp is why the job was given up, zero while it goes on.
	GaveUp retry.Reason
	// Asked is, for retry.RetryAfterTooLong, the wait asked beyond the
	// job's limit.
	Asked time.Duration
}

// AppendBinary appends r's failures in the History's binary form. Seen is
// not part of it: an adapter keeps it beside, as its queue allows.
func (r Record) AppendBinary(b []byte) []byte { return histcode.Append(b, r.Failures, 0) }

// DecodeFailures reads failures in the binary form into room[:0]; it
// allocates only when room is too small. It returns an error, naming what
// is wrong, for bytes that are not that form.
func DecodeFailures(data []byte, room []int64) ([]int64, error) {
	ns, _, err := histcode.Decode(data, room)
	if err != nil {
		return nil, errors.New("queuekit: history: " + err.Error())
	}
	return ns, nil
}

// AppendJSON appends r as a JSON object, as ReadMetadata reads it back: a
// job given up adds why, by its name, and for retry_after_too_long the wait
// asked, in seconds:
//
//	{"seen_attempt": 1, "history": "…", "gave_up": "retry_after_too_long", "wait_asked_secs": 7200}
func (r Record) AppendJSON(b []byte) []byte {
	b = strconv.AppendInt(append(b, `{"seen_attempt":`...), int64(r.Seen), 10)
	b = append(b, `,"history":"`...)
	var room [256]byte
	bin := r.AppendBinary(room[:0])
	b = base64.RawURLEncoding.AppendEncode(b, bin)
	b = append(b, '"')
	if name, err := r.GaveUp.MarshalText(); err == nil && len(name) > 0 {
		b = append(append(append(b, `,"gave_up":"`...), name...), '"')
		if r.GaveUp == retry.RetryAfterTooLong {
			b = strconv.AppendFloat(append(b, `,"wait_asked_secs":`...), r.Asked.Seconds(), 'f', -1, 64)
		}
	}
	return append(b, '}')
}
