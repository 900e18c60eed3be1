package retry

import (
	"time"

	"github.com/retrypolicy/retrypolicy"
)

// Layer is the kind of retry layer a limit on a server's wait is for.
type Layer uint8

const (
	// Synchronous is a loop whose caller waits for it: Do, a Loop, a
	// retryhttp transport, a retrygrpc interceptor.
	Synchronous Layer = iota
	// Durable is a queue's job (riverretry, natsretry, or any adapter on
	// queuekit): its waits are the queue's, and hold no worker.
	Durable
)

// WaitLimit returns the longest wait a server may ask a layer of kind l,
// deciding under p, to make before it calls again (a wait a loop below
// deferred counts as asked). The rule that a layer never calls sooner than
// asked holds at every layer: a longer wait is never cut to the limit.
// What happens beyond it, and the default limit:
//
//	layer        default limit                          beyond it
//	Synchronous  the longest delay, at least 1 minute;  gives up retry_after_too_long carrying
//	             1 hour when the backoff has no cap     the wait (deferred inside a queue's job)
//	Durable      the longest delay, at least 1 hour;    the job is fatal, retry_after_too_long,
//	             1 hour when the backoff has no cap     the wait asked recorded
//
// The longest delay is the backoff's: a fixed backoff's delay, an
// exponential one's MaxDelay. So a brisk loop still waits a server's few
// seconds, and a fixed 10 ms loop gives up on a 90 s wait rather than
// sleep through it. Options replace the default: WithWaitLimit for a loop,
// Config.WaitLimit for a queue adapter.
func WaitLimit(p *retrypolicy.Policy, l Layer) time.Duration {
	floor := time.Minute
	if l == Durable {
		floor = time.Hour
	}
	b := p.Strategy().Backoff
	longest := b.MaxDelay
	if b.Kind == retrypolicy.Fixed {
		longest = b.BaseDelay
	}
	if longest == 0 {
		return time.Hour
	}
	return max(longest, floor)
}
