package capped

import "testing"

// TestProblemsKeepTheFirstTwenty: a document's problems are its first 20,
// then a count of the rest, said as "and N more"; a reset keeps the room.
func TestProblemsKeepTheFirstTwenty(t *testing.T) {
	var ps List[int]
	for i := range 25 {
		ps.Add(i)
	}
	if len(ps.Kept) != 20 || ps.Kept[19] != 19 || ps.More != 5 || !ps.Full() {
		t.Fatalf("kept %v, %d more", ps.Kept, ps.More)
	}
	if got := AndMore(ps.More); got != "and 5 more" {
		t.Fatalf("AndMore(5) = %q", got)
	}
	room := cap(ps.Kept)
	ps.Reset()
	if len(ps.Kept) != 0 || ps.More != 0 || cap(ps.Kept) != room || ps.Full() {
		t.Fatalf("after Reset: %v, %d more, room %d of %d", ps.Kept, ps.More, cap(ps.Kept), room)
	}
}
