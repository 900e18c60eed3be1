package natsretry

import (
	"encoding/binary"
	"errors"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/retrypolicy/retrypolicy/queuekit"
	"github.com/retrypolicy/retrypolicy/retry"
)

// recordVersion is the first byte of a history as this package writes it;
// a history of another version is not read.
const recordVersion = 2

// The states a history may be in besides waiting: one bit each.
const (
	// stateDead marks a message the policy has given up: its copy to the
	// dead-letter stream may be made already.
	stateDead = 1 << iota
	// stateMoved marks a work message being moved to the parking stream,
	// its parked record under parkedID: a redelivery finishes the move.
	stateMoved
	statesKnown = stateDead | stateMoved
)

// history is what the policy keeps of a message between its deliveries:
// a work message's, under its key in the History bucket; a parked
// message's, inside its parked record (parkedRecord).
type history struct {
	// seen is the last delivery whose end the policy saw (NumDelivered).
	seen uint64
	// due is when the message may run again, Unix milliseconds; 0 for now.
	due int64
	// wait is the wait decided for that delivery, in milliseconds: a
	// redelivery before due is sent back only while due is within wait
	// plus AckWait of its clock. For a message given up
	// retry_after_too_long, it is the wait asked (rounded up).
	wait int64
	// dead marks a message the policy has given up: its copy to the
	// dead-letter stream may be made already, with reason and lastError.
	dead      bool
	reason    retry.Reason
	lastError string
	// failures are the failures that can still count, Unix nanoseconds,
	// ascending.
	failures []int64
	// parkedID is, for a work message being moved to the parking stream,
	// the id of its parked record and copy.
	parkedID string
}

// appendHistory appends h as stored: a version byte, a byte of its
// states, seen, due and wait as varints, for a moved message its parked
// id, for a dead message its reason and error text, then the failures in
// the root History's binary encoding (queuekit.Record).
func appendHistory(b []byte, h history) []byte {
	states := byte(0)
	if h.dead {
		states |= stateDead
	}
	if h.parkedID != "" {
		states |= stateMoved
	}
	b = append(b, recordVersion, states)
	b = binary.AppendUvarint(b, h.seen)
	b = binary.AppendVarint(b, h.due)
	b = binary.AppendVarint(b, h.wait)
	if h.parkedID != "" {
		b = appendText(b, h.parkedID)
	}
	if h.dead {
		b = append(b, byte(h.reason))
		b = binary.AppendUvarint(b, uint64(len(h.lastError)))
		b = append(b, h.lastError...)
	}
	return queuekit.Record{Failures: h.failures}.AppendBinary(b)
}

// errHistory is the error of bytes that are not a history.
var errHistory = errors.New("not a history this package wrote")

// readHistory reads a history as appendHistory writes it, its failures
// into room[:0].
func readHistory(b []byte, room []int64) (history, error) {
	r := reader{b: b, ok: true}
	h := r.history(room)
	if r.err != nil {
		return h, r.err
	}
	if !r.ok {
		return h, errHistory
	}
	return h, nil
}

// history reads a history at r, its failures into room[:0], and the rest
// of r with it.
func (r *reader) history(room []int64) history {
	var h history
	version, states := r.byte(), r.byte()
	if !r.ok || version != recordVersion || states&^statesKnown != 0 {
		r.ok = false
		return h
	}
	h.dead = states&stateDead != 0
	h.seen, h.due, h.wait = r.uvarint(), r.varint(), r.varint()
	if states&stateMoved != 0 {
		if h.parkedID = r.text(maxText); h.parkedID == "" {
			r.ok = false
		}
	}
	if h.dead {
		h.reason = retry.Reason(r.byte())
		h.lastError = r.text(MaxErrorText)
	}
	if !r.ok {
		return h
	}
	if _, err := h.reason.MarshalText(); err != nil {
		// A reason stored by a later version: never read as another.
		r.err = errors.New("its reason is unknown: " + strconv.Itoa(int(h.reason)))
		return h
	}
	var err error
	if h.failures, err = queuekit.DecodeFailures(r.b, room); err != nil {
		r.err = err
	}
	r.b = nil
	return h
}

// maxText is the longest text a history holds: a subject, a stream's
// name, a strategy's descriptor.
const maxText = 4096

// appendText appends s, its length first.
func appendText(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// reader reads a record's fields in turn; once one is not what was
// written, ok is false and every later read returns zero.
type reader struct {
	b   []byte
	ok  bool
	err error // a record read whole but refused, saying why
}

func (r *reader) uvarint() uint64 { return number(r, binary.Uvarint) }

func (r *reader) varint() int64 { return number(r, binary.Varint) }

// number reads the next number with decode (binary.Uvarint or Varint).
func number[T uint64 | int64](r *reader, decode func([]byte) (T, int)) T {
	v, n := decode(r.b)
	if !r.ok || n <= 0 {
		r.ok = false
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) byte() byte {
	if !r.ok || len(r.b) < 1 {
		r.ok = false
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// text reads a text appendText wrote, of at most most bytes.
func (r *reader) text(most int) string {
	size := r.uvarint()
	if !r.ok || size > uint64(len(r.b)) || size > uint64(most) {
		r.ok = false
		return ""
	}
	t := string(r.b[:size])
	r.b = r.b[size:]
	return t
}

// dueTime is h's due time, the zero Time for none.
func (h history) dueTime() time.Time {
	if h.due == 0 {
		return time.Time{}
	}
	return time.UnixMilli(h.due)
}

// waitFor is the wait decided for h's delivery.
func (h history) waitFor() time.Duration { return time.Duration(h.wait) * time.Millisecond }

// historyKey is the key of the history of the message md describes: its
// stream, its consumer, its stream sequence and the message's own
// timestamp (stable across its redeliveries, so that a stream deleted and
// made again, its sequences restarting, never meets an old history), the
// names escaped to the characters a key may hold.
func historyKey(md *jetstream.MsgMetadata) string {
	b := make([]byte, 0, len(md.Stream)+len(md.Consumer)+44)
	b = escapeKey(b, md.Stream)
	b = append(b, '.')
	b = escapeKey(b, md.Consumer)
	b = append(b, '.')
	b = strconv.AppendUint(b, md.Sequence.Stream, 10)
	b = append(b, '.')
	return string(strconv.AppendInt(b, md.Timestamp.UnixNano(), 10))
}

// escapeKey appends s with every byte but letters, digits, '-' and '_'
// written as '=' and two hex digits.
func escapeKey(b []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
			b = append(b, c)
		default:
			b = append(b, '=', hex[c>>4], hex[c&15])
		}
	}
	return b
}

// clip returns s cut to at most MaxErrorText bytes, at a character's
// boundary, with "…" when cut.
func clip(s string) string {
	if len(s) <= MaxErrorText {
		return s
	}
	const ellipsis = "…"
	cut := MaxErrorText - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
