package queuekit

import (
	"encoding/base64"
	"errors"
	"strconv"

	"github.com/retrypolicy/retrypolicy/internal/histcode"
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

// AppendJSON appends r as a JSON object, as ReadMetadata reads it back.
func (r Record) AppendJSON(b []byte) []byte {
	b = strconv.AppendInt(append(b, `{"seen_attempt":`...), int64(r.Seen), 10)
	b = append(b, `,"history":"`...)
	var room [256]byte
	bin := r.AppendBinary(room[:0])
	b = base64.RawURLEncoding.AppendEncode(b, bin)
	return append(b, `"}`...)
}
