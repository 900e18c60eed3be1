package natsretry

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/queuekit"
)

// ttlSlack is what a history bucket's TTL must leave beyond the longest
// wait and AckWait: the rounding of a wait to whole seconds and of a due
// time to the millisecond.
const ttlSlack = time.Second

// longestWait is the longest a message may wait between two runs under p:
// over the default strategy and each subject's, the strategy's longest
// delay (a quarter more with jitter), the limit on a message's own
// strategy (Config.MaxHeaderDelay's) and the job's limit on a wait a
// server asked (Config.WaitLimit's). It returns the field of a strategy
// whose delays have no cap, and then no wait.
func (p *Policy) longestWait(subjects []string) (time.Duration, string) {
	var longest time.Duration
	for _, subject := range subjects {
		b := p.policies.Kind(subject).Strategy().Backoff
		delay := b.BaseDelay
		if b.Kind != retrypolicy.Fixed {
			if b.MaxDelay == 0 && p.policies.Kind(subject).Strategy().Kind != retrypolicy.None {
				return 0, subjectField(subject)
			}
			delay = max(delay, b.MaxDelay)
		}
		if b.Kind == retrypolicy.ExponentialWithJitter {
			delay += delay / 4
		}
		longest = max(longest, delay, p.headerDelay(subject), p.policies.WaitLimit(subject))
	}
	return longest, ""
}

// subjectField names the strategy of subject's messages in Config: "" is
// Config.Default's.
func subjectField(subject string) string {
	if subject == "" {
		return "Config.Default"
	}
	return "Config.Subjects[" + queuekit.Quote(subject) + "]"
}

// checkTTL returns why the history bucket's TTL, ttl (0 for none), could
// let a waiting message's history expire before it runs again, for a
// consumer of ackWait's: it must be above the longest wait the policy can
// make (longestWait) plus ackWait and ttlSlack, and none when that wait
// has no bound.
func (p *Policy) checkTTL(ttl, ackWait time.Duration) error {
	if ttl <= 0 {
		return nil
	}
	longest, unbounded := p.longestWait(p.subjects)
	if unbounded != "" {
		return fmt.Errorf("Config.History: the bucket's TTL is %v, and %s's delays have no cap (no MaxDelay), so a message may wait longer than any TTL: give the bucket no TTL, or the strategy a MaxDelay", ttl, unbounded)
	}
	if need := longest + ackWait + ttlSlack; ttl <= need {
		return fmt.Errorf("Config.History: the bucket's TTL, %v, must be above %v: the longest wait the policy can make, %v (its strategies' longest delays with their jitter, Config.MaxHeaderDelay, Config.WaitLimit), plus the consumer's AckWait, %v, and %v of rounding; a shorter TTL could drop a waiting message's history before it runs",
			ttl, need, longest, ackWait, ttlSlack)
	}
	return nil
}

// subjectsOf are the subjects whose strategies a policy of cfg's waits
// under: "" for the default, then Config.Subjects's, in order.
func subjectsOf(cfg Config) []string {
	return append([]string{""}, slices.Sorted(maps.Keys(cfg.Subjects))...)
}
