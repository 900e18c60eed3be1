package natsretry

import (
	"encoding/binary"
	"errors"
)

// parkedVersion is the first byte of a parked record: not a history's
// (1 or 2), so that neither reader takes the other's bytes.
const parkedVersion = 'P'

// parkedRecord is what the policy keeps of a parked message, under its
// parked key (parkedKey), apart from every work message's history: where
// it came from, which copy is the genuine one, and its history since it
// was parked. A parked copy carries only its id; all it claims is read
// here.
type parkedRecord struct {
	// origin is its work message's history key, removed with the record.
	origin string
	// subject, stream, seq and stamp are its work message's: what its dead
	// letter says, what seeds its jitter.
	subject, stream string
	seq             uint64
	stamp           int64 // the message's timestamp, Unix nanoseconds
	// strategy is its own strategy's descriptor, "" for its subject's.
	strategy string
	// copySeq is its copy's sequence in the parking stream, written once
	// the copy's publish was acknowledged: a copy of another sequence
	// claims nothing of this record. 0 until then.
	copySeq uint64
	// state is its history since it was parked: seen counts the parking
	// consumer's deliveries.
	state history
}

// appendParked appends rec as stored: parkedVersion, its identity and
// copy's sequence, then its history as appendHistory writes it.
func appendParked(b []byte, rec parkedRecord) []byte {
	b = append(b, parkedVersion)
	b = appendText(appendText(appendText(b, rec.origin), rec.subject), rec.stream)
	b = binary.AppendVarint(binary.AppendUvarint(b, rec.seq), rec.stamp)
	b = appendText(b, rec.strategy)
	b = binary.AppendUvarint(b, rec.copySeq)
	return appendHistory(b, rec.state)
}

// errParked is the error of bytes that are not a parked record.
var errParked = errors.New("not a parked record this package wrote")

// readParked reads a parked record as appendParked writes it, its
// failures into room[:0].
func readParked(b []byte, room []int64) (parkedRecord, error) {
	var rec parkedRecord
	r := reader{b: b, ok: true}
	if r.byte() != parkedVersion {
		return rec, errParked
	}
	rec.origin, rec.subject, rec.stream = r.text(maxText), r.text(maxText), r.text(maxText)
	rec.seq, rec.stamp = r.uvarint(), r.varint()
	rec.strategy = r.text(maxText)
	rec.copySeq = r.uvarint()
	rec.state = r.history(room)
	if r.err != nil {
		return rec, r.err
	}
	if !r.ok || rec.origin == "" || rec.subject == "" {
		return rec, errParked
	}
	return rec, nil
}

// parkedKey is the key of the parked record id of the consumer whose
// parking subject is subject: its own key space, apart from the work
// histories' (stream.consumer.sequence.stamp).
func parkedKey(subject, id string) string {
	return "parked." + string(escapeKey(nil, subject)) + "." + string(escapeKey(nil, id))
}
