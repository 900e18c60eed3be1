package queuekit

import (
	"context"
	"errors"
	"iter"
	"strconv"
	"strings"
	"time"
)

// MaxReasons is how many distinct reasons Count keeps, and MaxReasonLen
// how many bytes of each: the letters of any other reason are counted as
// Counts.Other, so that a count's memory is bounded whatever its letters
// say.
const (
	MaxReasons   = 1000
	MaxReasonLen = 256
)

// DeadLetters is an operator's view of an engine's dead letters: listed,
// counted and shown by a filter, replayed at a rate ([DeadLetters.Replay]),
// and purged, a page at a time, so that its memory is a function of the
// page, not of the number of dead letters. Its methods are safe for
// concurrent use when its Driver is.
type DeadLetters struct {
	// Driver is the engine's.
	Driver Driver
	// Page is how many letters a read takes at a time, in [0, MaxPage];
	// 0 is DefaultPage.
	Page int
	// Now and Sleep are the clock a read and a replay go by (when a read
	// began, a replay's pace and progress); nil is the machine's.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// CheckPage returns why page is not a page size (in [0, MaxPage]; 0 is
// DefaultPage), opening with prefix (its owner's name and the field's:
// "queuekit: DeadLetters.Page").
func CheckPage(prefix string, page int) error {
	if page < 0 || page > MaxPage {
		return errors.New(prefix + ": must be between 0 and " + strconv.Itoa(MaxPage) + ", got " + strconv.Itoa(page))
	}
	return nil
}

// check returns why d cannot read, or f is not a filter.
func (d DeadLetters) check(f Selector) error {
	switch {
	case d.Driver == nil:
		return errors.New("queuekit: DeadLetters.Driver: required")
	case f == nil:
		return errors.New("queuekit: no filter")
	}
	if err := CheckPage("queuekit: DeadLetters.Page", d.Page); err != nil {
		return err
	}
	return f.Check()
}

// now is d's clock's time.
func (d DeadLetters) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// read is a dead letter as read, with how many are left after its page.
type read struct {
	Letter
	left int64
}

// read yields the letters f selects, oldest first, a page at a time,
// among those there when it began (Driver.Page), until the first error,
// which it yields.
func (d DeadLetters) read(ctx context.Context, f Selector, headersOnly bool) iter.Seq2[read, error] {
	return func(yield func(read, error) bool) {
		c := Cursor{Size: d.Page, HeadersOnly: headersOnly, Began: d.now(), Left: -1}
		if c.Size == 0 {
			c.Size = DefaultPage
		}
		for !c.Done {
			if err := ctx.Err(); err != nil {
				yield(read{}, err)
				return
			}
			after, at := c.After, c.AfterGivenUp
			page, err := d.Driver.Page(ctx, &c)
			if err != nil {
				yield(read{}, err)
				return
			}
			for i, l := range page {
				left := c.Left
				if left >= 0 {
					left += int64(len(page) - 1 - i)
				}
				if f.Match(l) && !yield(read{Letter: l, left: left}, nil) {
					return
				}
			}
			if len(page) == 0 && c.After == after && c.AfterGivenUp.Equal(at) {
				return // a driver that does not move on is done
			}
		}
	}
}

// List returns the dead letters f selects, oldest first, among those
// there when the listing began. It stops at the first error, which it
// yields.
func (d DeadLetters) List(ctx context.Context, f Selector) iter.Seq2[Letter, error] {
	return func(yield func(Letter, error) bool) {
		if err := d.check(f); err != nil {
			yield(Letter{}, err)
			return
		}
		for l, err := range d.read(ctx, f, false) {
			if !yield(l.Letter, err) || err != nil {
				return
			}
		}
	}
}

// Counts is how many dead letters a filter selects, by reason.
type Counts struct {
	// Total counts them all.
	Total int
	// ByReason counts them by reason ("" for none): the first MaxReasons
	// distinct reasons met, each cut to MaxReasonLen bytes.
	ByReason map[string]int
	// Other counts those of any other reason.
	Other int
}

// Count returns how many dead letters f selects, by reason. It reads
// their headers only.
func (d DeadLetters) Count(ctx context.Context, f Selector) (Counts, error) {
	counts := Counts{ByReason: map[string]int{}}
	if err := d.check(f); err != nil {
		return counts, err
	}
	for l, err := range d.read(ctx, f, true) {
		if err != nil {
			return counts, err
		}
		counts.add(l.Reason)
	}
	return counts, nil
}

// add counts a letter given up for reason.
func (c *Counts) add(reason string) {
	c.Total++
	if len(reason) > MaxReasonLen {
		reason = reason[:MaxReasonLen]
	}
	if _, ok := c.ByReason[reason]; ok {
		c.ByReason[reason]++
		return
	}
	if len(c.ByReason) < MaxReasons {
		c.ByReason[strings.Clone(reason)] = 1 // not the letter's whole text, which the cut would keep
		return
	}
	c.Other++
}

// Purge removes the dead letters f selects, among those there when it
// began, and returns how many. A filter with no criterion is refused
// unless it says All. A letter removed meanwhile by another is skipped,
// not counted.
func (d DeadLetters) Purge(ctx context.Context, f Selector) (int, error) {
	if err := d.check(f); err != nil {
		return 0, err
	}
	if !f.Common().All && !f.Criteria() {
		return 0, errors.New("queuekit: Purge: no filter: give a criterion, or Filter.All to purge every dead letter")
	}
	n := 0
	for l, err := range d.read(ctx, f, true) {
		if err != nil {
			return n, err
		}
		err := d.Driver.Remove(ctx, l.Letter)
		switch {
		case errors.Is(err, ErrGone):
			continue
		case err != nil:
			return n, err
		}
		n++
	}
	return n, nil
}
