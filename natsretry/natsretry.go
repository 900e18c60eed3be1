package natsretry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/queuekit"
	"github.com/retrypolicy/retrypolicy/retry"
)

const (
	// HeaderStrategy is the header of a message's own strategy, a strategy
	// descriptor in JSON: {"strategy": "bounded", "max_attempts": 5}.
	HeaderStrategy = "Retry-Strategy"

	// HeaderParked is the header of a parked copy: the id its history,
	// identity and strategy are kept under in Config.History. It is all a
	// copy carries of the policy's state.
	HeaderParked = "Retrypolicy-Parked"

	// HeaderReason is the dead-letter header of why the message was given
	// up: strategy_none (its strategy never retries), attempts_exhausted
	// (a bounded strategy's window holds max_attempts failures),
	// not_retryable (an error marked retry.Permanent), or
	// retry_after_too_long (a server asked, or a loop in the handler
	// deferred, a wait beyond Config.WaitLimit; HeaderWaitAsked says it).
	HeaderReason = "Retrypolicy-Reason"
	// HeaderWaitAsked is the dead-letter header of the wait asked of a
	// message given up retry_after_too_long, in seconds, a decimal number
	// ("7200", "0.25").
	HeaderWaitAsked = "Retrypolicy-Wait-Asked"
	// HeaderFailures is the dead-letter header of the failures in the
	// strategy's window when the message was given up, in decimal.
	HeaderFailures = "Retrypolicy-Failures"
	// HeaderError is the dead-letter header of the last failure's error
	// text, at most MaxErrorText bytes.
	HeaderError = "Retrypolicy-Error"
	// HeaderSubject is the dead-letter header of the subject the message
	// was published to: publish it there again to replay it.
	HeaderSubject = "Retrypolicy-Subject"
	// HeaderStream is the dead-letter header of the stream the message
	// was in.
	HeaderStream = "Retrypolicy-Stream"
	// HeaderSequence is the dead-letter header of the message's sequence
	// in that stream, in decimal.
	HeaderSequence = "Retrypolicy-Sequence"

	// MaxErrorText is the most bytes of an error's text that a history and
	// a dead-letter header keep.
	MaxErrorText = 1024

	// DefaultDeferAfter is Config.DeferAfter's default.
	DefaultDeferAfter = 5 * time.Second

	// DefaultParkAfter is Config.ParkAfter's default.
	DefaultParkAfter = 5 * time.Second

	// DefaultMaxRun is Config.MaxRun's default.
	DefaultMaxRun = time.Hour

	// StoreRetry is how long a message waits when its history cannot be
	// read or its dead-letter copy cannot be made (the server is
	// unavailable, say): it is redelivered then, and nothing is counted.
	StoreRetry = time.Second
)

// Config configures a Policy.
type Config struct {
	// Default is the strategy of a message without its own
	// (HeaderStrategy) and without one for its subject in Subjects: the
	// consumer's. The zero Strategy means retrypolicy.Default().
	Default retrypolicy.Strategy

	// Subjects maps a subject to the strategy of its messages that do not
	// carry their own.
	Subjects map[string]retrypolicy.Strategy

	// History is the key-value bucket that keeps each failing message's
	// history between its deliveries; required. Give it the storage and
	// replicas of the consumer's stream, so that it survives what the
	// messages survive; one bucket serves any number of policies.
	History jetstream.KeyValue

	// DeadLetter is the subject a given-up message is published to;
	// required, and a stream must capture it. Its stream's Duplicates
	// window (two minutes by default) is how long a copy published twice
	// after a crash is dropped as a duplicate.
	DeadLetter string

	// Logger receives the policy's warnings and errors and, at the Debug
	// level, each decision; nil means slog.Default().
	Logger *slog.Logger

	// Now is the policy's clock; nil means time.Now.
	Now func() time.Time

	// Hooks are told what the policy does, to count it.
	Hooks Hooks

	// DeferAfter is the longest wait a retry loop of this library
	// (retry.Do, a retryhttp transport) makes inside a handler: a loop
	// whose next wait is longer gives up at once (retry.Deferred), and the
	// message is redelivered no earlier than its failure plus that wait.
	// Zero is DefaultDeferAfter; a negative one defers nothing.
	DeferAfter time.Duration

	// Park is the subject prefix of the parking stream: a message that is
	// to wait longer than ParkAfter is moved there (a copy published to
	// Park.<stream>.<consumer>, the message acked), so that it holds no
	// slot of its consumer's MaxAckPending while it waits; the policy
	// consumes it there, under a consumer of its own making, and runs it
	// when due. The stream must capture that subject, must not be the work
	// stream, and must have WorkQueuePolicy retention. Empty: no parking,
	// and a message that waits holds its slot until it is redelivered.
	Park string

	// ParkAfter is the longest wait a message makes in its consumer (a
	// NakWithDelay) when Park is set; a longer one parks it. Zero is
	// DefaultParkAfter.
	ParkAfter time.Duration

	// MaxHeaderDelay is the longest a message's own strategy
	// (HeaderStrategy) may make it wait after a failure: a longer wait of
	// that strategy's own backoff is cut to it, so that a publisher chooses
	// a strategy, not to park the consumer. Zero is the subject's
	// strategy's MaxDelay (Subjects, else Default), or an hour when it has
	// none. A wait a server asked is WaitLimit's, not this.
	MaxHeaderDelay time.Duration

	// WaitLimit is the job's limit: the longest wait a server may ask (a
	// Retry-After a retry loop in the handler read), or a loop in the
	// handler defer, before the message runs again. The message never runs
	// sooner than asked: a longer wait is not cut, but makes the message
	// fatal (retry_after_too_long), dead-lettered with the wait in
	// HeaderWaitAsked. Zero is the longest delay of the subject's strategy
	// (Subjects, else Default; a fixed backoff's delay, an exponential
	// one's MaxDelay) but at least an hour, and an hour when it has no cap
	// (retry.WaitLimit for a durable layer); a message's own strategy
	// (HeaderStrategy) does not change it.
	WaitLimit time.Duration

	// MaxRun is the longest a handler may run: a run longer is abandoned,
	// its context cancelled, logged, and whatever it returns later
	// discarded (no ack, nak, history or hook), so that JetStream's
	// redelivery after AckWait is the run that counts. Zero is
	// DefaultMaxRun.
	MaxRun time.Duration
}

// Hooks are functions the policy calls as it works, each with the
// message's subject; a nil one is not called. They are called from the
// consumers' goroutines at once, so they must be fast and safe for
// concurrent use.
type Hooks struct {
	// Decided is called once for each failure of a message, with the
	// strategy's decision and, when the message is given up, why.
	Decided func(ctx context.Context, subject string, d retrypolicy.Decision, gaveUp retry.Reason)
	// DeadLettered is called for each message published to the
	// dead-letter subject.
	DeadLettered func(ctx context.Context, subject string, reason retry.Reason)
	// Repaired is called for each history the policy could not read and
	// started anew.
	Repaired func(ctx context.Context, subject string)
}

// Policy applies retrypolicy strategies to the messages of JetStream
// consumers. It is safe for concurrent use; one Policy serves any number
// of consumers.
type Policy struct {
	js                jetstream.JetStream
	policies          *queuekit.Policies
	kv                jetstream.KeyValue
	kvStream          jetstream.Stream
	deadLetterSubject string
	deadStream        string // the stream that captures deadLetterSubject
	logger            *slog.Logger
	now               func() time.Time
	hooks             Hooks
	deferAfter        time.Duration
	maxRun            time.Duration
	maxHeaderDelay    time.Duration
	parkPrefix        string
	parkAfter         time.Duration
}

// New returns a Policy for cfg on js. It returns an error naming the field
// for an invalid strategy, a missing History or DeadLetter, or a
// DeadLetter subject no stream captures; and logs at Warn, once, each trap
// that plan.LintGo finds in the strategies.
func New(ctx context.Context, js jetstream.JetStream, cfg Config) (*Policy, error) {
	strategies := queuekit.Config{Default: cfg.Default, Kinds: cfg.Subjects, KindsField: "Config.Subjects", WaitLimit: cfg.WaitLimit}
	policies, err := queuekit.NewPolicies(strategies)
	if err != nil {
		return nil, fmt.Errorf("natsretry: %w", err)
	}
	if cfg.History == nil {
		return nil, errors.New("natsretry: Config.History: a key-value bucket is required")
	}
	if cfg.DeadLetter == "" {
		return nil, errors.New("natsretry: Config.DeadLetter: a subject is required")
	}
	if cfg.MaxRun < 0 || cfg.MaxHeaderDelay < 0 || cfg.ParkAfter < 0 {
		return nil, fmt.Errorf("natsretry: Config.MaxRun, Config.MaxHeaderDelay and Config.ParkAfter: must not be negative, got %v, %v and %v",
			cfg.MaxRun, cfg.MaxHeaderDelay, cfg.ParkAfter)
	}
	if cfg.Park != "" && !publishable(cfg.Park) {
		return nil, fmt.Errorf("natsretry: Config.Park: %s is not a subject prefix", queuekit.Quote(cfg.Park))
	}
	deadStream, err := js.StreamNameBySubject(ctx, cfg.DeadLetter)
	if err != nil {
		return nil, fmt.Errorf("natsretry: Config.DeadLetter: no stream captures %s: %w", queuekit.Quote(cfg.DeadLetter), err)
	}
	kvStream, err := js.Stream(ctx, "KV_"+cfg.History.Bucket())
	if err != nil {
		return nil, fmt.Errorf("natsretry: Config.History: the bucket's stream: %w", err)
	}
	p := &Policy{
		js: js, policies: policies, kv: cfg.History, kvStream: kvStream, deadLetterSubject: cfg.DeadLetter, deadStream: deadStream,
		logger: cmp.Or(cfg.Logger, slog.Default()), now: cfg.Now, hooks: cfg.Hooks,
		deferAfter: cmp.Or(cfg.DeferAfter, DefaultDeferAfter), maxRun: cmp.Or(cfg.MaxRun, DefaultMaxRun),
		maxHeaderDelay: cfg.MaxHeaderDelay,
		parkPrefix:     cfg.Park, parkAfter: cmp.Or(cfg.ParkAfter, DefaultParkAfter),
	}
	if p.now == nil {
		p.now = time.Now
	}
	// The lint has no tick: JetStream redelivers a message when it is due.
	strategies.LogLint(p.logger, "natsretry:", "none: JetStream redelivers each message when due")
	return p, nil
}

// Handler handles a message. It returns nil when the message is done, and
// an error when the delivery failed; the policy then acks, retries or
// dead-letters the message: a handler must not do so itself. ctx carries
// the defer threshold (Config.DeferAfter) for the retry loops inside it.
type Handler func(ctx context.Context, msg jetstream.Msg) error

// Wrap returns a message handler for consumer c that runs h under the
// policy, for c.Consume or a loop over c.Messages. It refuses, with an
// error naming the setting, a consumer whose AckPolicy is not explicit,
// whose MaxDeliver is not -1 (unlimited) or whose BackOff is set (the
// strategy decides every redelivery); whose stream captures
// Config.DeadLetter (a message given up would come back to it); or whose
// stream takes larger messages than the dead-letter stream does (a
// message given up would not fit there). Handlers get ctx, or a context
// derived from it: cancel it to stop them. A run that returns ctx's error
// once ctx is done is no failure: the message is redelivered at once, and
// counts nothing.
func (p *Policy) Wrap(ctx context.Context, c jetstream.Consumer, h Handler) (jetstream.MessageHandler, error) {
	info, err := c.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("natsretry: the consumer's info: %w", err)
	}
	if err := check(info.Config); err != nil {
		return nil, fmt.Errorf("natsretry: consumer %s: %w", queuekit.Quote(info.Name), err)
	}
	if err := p.checkStreams(ctx, info.Stream); err != nil {
		return nil, fmt.Errorf("natsretry: consumer %s: %w", queuekit.Quote(info.Name), err)
	}
	var park *parking
	if p.parkPrefix != "" {
		if park, err = p.startParking(ctx, info, h); err != nil {
			return nil, fmt.Errorf("natsretry: consumer %s: %w", queuekit.Quote(info.Name), err)
		}
	}
	ackWait := info.Config.AckWait
	return func(msg jetstream.Msg) { p.handle(ctx, msg, h, ackWait, park) }, nil
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

// Consume runs h on every message of consumer c under the policy, as
// c.Consume does, after Wrap's checks.
func (p *Policy) Consume(ctx context.Context, c jetstream.Consumer, h Handler, opts ...jetstream.PullConsumeOpt) (jetstream.ConsumeContext, error) {
	handler, err := p.Wrap(ctx, c, h)
	if err != nil {
		return nil, err
	}
	return c.Consume(handler, opts...)
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
