// Package wire holds the small pieces of the wire forms written once.
//
// The library, the command and the River adapter share them: a document's
// byte-order mark trimmed, a duration in exact decimal seconds, and a
// string as JSON writes it.
package wire

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
)

// utf8BOM is the byte-order mark some editors write at the start of a file.
var utf8BOM = []byte("\xef\xbb\xbf")

// TrimBOM returns doc without a leading byte-order mark, and how many bytes
// it skipped.
func TrimBOM(doc []byte) ([]byte, int) {
	if bytes.HasPrefix(doc, utf8BOM) {
		return doc[len(utf8BOM):], len(utf8BOM)
	}
	return doc, 0
}

// AppendSeconds appends d as exact decimal seconds: 8, 1.5, 0.000000001.
func AppendSeconds(b []byte, d time.Duration) []byte {
	u := uint64(d)
	if d < 0 {
		b, u = append(b, '-'), -u
	}
	b = strconv.AppendUint(b, u/uint64(time.Second), 10)
	ns := u % uint64(time.Second)
	if ns == 0 {
		return b
	}
	b = append(b, '.')
	for div := uint64(time.Second / 10); ns > 0; div /= 10 {
		b = append(b, byte('0'+ns/div))
		ns %= div
	}
	return b
}

// AppendString appends s as a JSON string, with JSON's escapes (Go's
// strconv.Quote writes \x07 and \U0001f600, which JSON does not read),
// and each byte of invalid UTF-8 as U+FFFD.
func AppendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}
