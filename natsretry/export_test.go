package natsretry

import (
	"context"
	"time"
)

// SetPacingClock makes d pace its replays by now and sleep, a test's
// clock.
func SetPacingClock(d *DeadLetters, now func() time.Time, sleep func(context.Context, time.Duration) error) {
	d.clock = pacingClock{now: now, sleep: sleep}
}

// SetAfterPublish makes d call f between a replay's publish and the dead
// letter's removal.
func SetAfterPublish(d *DeadLetters, f func()) { d.afterPublish = f }
