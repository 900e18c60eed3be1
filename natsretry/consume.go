package natsretry

import (
	"context"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/retrypolicy/retrypolicy/queuekit"
)

// consumption is what Wrap starts for one consumer: the context its
// handlers run under, and its part of the consumer's parking.
type consumption struct {
	ctx  context.Context // the handlers'; done once stopped
	stop context.CancelFunc
	park *parking // nil when waits stay in place
}

// Wrap returns a message handler for consumer c that runs h under the
// policy, for c.Consume or a loop over c.Messages, and stop, which ends
// what Wrap started: call it once the consumption it serves has stopped.
// ctx is for Wrap's own checks and setup: its end stops nothing. Handlers
// get a context that keeps ctx's values and ends when stop is called (or
// a run passes Config.MaxRun). The consumer's parking (Config.Park) is
// started with its first Wrap, however often Wrap is called for it, and
// stopped with the last stop.
//
// Wrap refuses, with an error naming the setting, a consumer whose
// AckPolicy is not explicit, whose MaxDeliver is not -1 (unlimited) or
// whose BackOff is set (the strategy decides every redelivery); whose
// stream captures Config.DeadLetter (a message given up would come back to
// it); whose stream takes larger messages than the dead-letter stream does
// (a message given up would not fit there); whose AckWait leaves the
// history bucket's TTL too short (Config.History); and a parking stream
// that could lose a parked copy (Config.Park). A run that returns its context's
// error once stop is called is no failure: the message is redelivered at
// once, and counts nothing.
func (p *Policy) Wrap(ctx context.Context, c jetstream.Consumer, h Handler) (handler jetstream.MessageHandler, stop func(), err error) {
	info, err := c.Info(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("natsretry: the consumer's info: %w", err)
	}
	if err := check(info.Config); err != nil {
		return nil, nil, fmt.Errorf("natsretry: consumer %s: %w", queuekit.Quote(info.Name), err)
	}
	if err := p.checkStreams(ctx, info.Stream); err != nil {
		return nil, nil, fmt.Errorf("natsretry: consumer %s: %w", queuekit.Quote(info.Name), err)
	}
	if err := p.checkTTL(p.historyTTL, info.Config.AckWait); err != nil {
		return nil, nil, fmt.Errorf("natsretry: consumer %s: %w", queuekit.Quote(info.Name), err)
	}
	run := &consumption{}
	run.ctx, run.stop = context.WithCancel(context.WithoutCancel(ctx))
	if p.parkPrefix != "" {
		if run.park, err = p.parkingFor(ctx, info, h); err != nil {
			run.stop()
			return nil, nil, fmt.Errorf("natsretry: consumer %s: %w", queuekit.Quote(info.Name), err)
		}
	}
	ackWait := info.Config.AckWait
	var once sync.Once
	stop = func() {
		once.Do(func() {
			run.stop()
			if run.park != nil {
				p.release(run.park)
			}
		})
	}
	cons := consumer{h: h, ackWait: ackWait, parking: run.park}
	return func(msg jetstream.Msg) { p.handle(run.ctx, msg, cons) }, stop, nil
}

// Consume runs h on every message of consumer c under the policy, as
// c.Consume does, after Wrap's checks. The ConsumeContext's Stop and Drain
// stop what Wrap started too: the handlers' contexts and, with the last
// consumption of c, its parking.
func (p *Policy) Consume(ctx context.Context, c jetstream.Consumer, h Handler, opts ...jetstream.PullConsumeOpt) (jetstream.ConsumeContext, error) {
	handler, stop, err := p.Wrap(ctx, c, h)
	if err != nil {
		return nil, err
	}
	cc, err := c.Consume(handler, opts...)
	if err != nil {
		stop()
		return nil, err
	}
	return &consumeContext{ConsumeContext: cc, stop: stop}, nil
}

// consumeContext is a ConsumeContext whose Stop and Drain stop what Wrap
// started too.
type consumeContext struct {
	jetstream.ConsumeContext
	stop func()
}

// Stop stops the consumption, then the handlers' contexts and the parking.
func (c *consumeContext) Stop() {
	c.ConsumeContext.Stop()
	c.stop()
}

// Drain drains the consumption, then stops what Wrap started once it has
// drained.
func (c *consumeContext) Drain() {
	c.ConsumeContext.Drain()
	go func() {
		<-c.ConsumeContext.Closed()
		c.stop()
	}()
}

// check returns why the policy cannot run a consumer of config c.
func check(c jetstream.ConsumerConfig) error {
	switch {
	case c.AckPolicy != jetstream.AckExplicitPolicy:
		return fmt.Errorf("AckPolicy is %s: set it to AckExplicitPolicy, so that each delivery's end is the policy's", c.AckPolicy)
	case c.MaxDeliver != -1:
		return fmt.Errorf("MaxDeliver is %d: set it to -1 (unlimited), so that the strategy decides when a message gives up", c.MaxDeliver)
	case len(c.BackOff) > 0:
		return fmt.Errorf("BackOff is %v: leave it empty, so that the strategy decides every redelivery", c.BackOff)
	case c.AckWait <= 0:
		return fmt.Errorf("AckWait is %v: it must be positive", c.AckWait)
	}
	return nil
}

// checkStreams returns why the policy cannot run a consumer of the work
// stream named: it captures the dead-letter subject, or takes messages
// larger than the dead-letter stream does.
func (p *Policy) checkStreams(ctx context.Context, work string) error {
	ws, err := p.js.Stream(ctx, work)
	if err != nil {
		return fmt.Errorf("its stream %s: %w", queuekit.Quote(work), err)
	}
	wc := ws.CachedInfo().Config
	for _, pattern := range wc.Subjects {
		if subjectMatches(pattern, p.deadLetterSubject) {
			return fmt.Errorf("its stream %s captures Config.DeadLetter %s (by %s): a message given up would come back to it; use a subject of another stream",
				queuekit.Quote(work), queuekit.Quote(p.deadLetterSubject), queuekit.Quote(pattern))
		}
	}
	ds, err := p.js.Stream(ctx, p.deadStream)
	if err != nil {
		return fmt.Errorf("the dead-letter stream %s: %w", queuekit.Quote(p.deadStream), err)
	}
	dead := ds.CachedInfo().Config.MaxMsgSize
	if dead > 0 && (wc.MaxMsgSize <= 0 || dead < wc.MaxMsgSize) {
		return fmt.Errorf("the dead-letter stream %s's MaxMsgSize is %d, below its stream %s's (%s): a message given up might not fit; raise it",
			queuekit.Quote(p.deadStream), dead, queuekit.Quote(work), sizeText(wc.MaxMsgSize))
	}
	return nil
}

// sizeText says a stream's MaxMsgSize.
func sizeText(n int32) string {
	if n <= 0 {
		return "unlimited"
	}
	return fmt.Sprint(n)
}
