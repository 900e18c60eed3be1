package natsretry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
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
	// history between its deliveries, and each parked message's record;
	// required. Give it the storage and replicas of the consumer's stream,
	// so that it survives what the messages survive, and a LimitMarkerTTL
	// (a minute, say: New refuses a bucket without one), so that the
	// marker a removed history leaves expires. Its TTL, if it has one,
	// collects the histories that deliveries after an ack leave behind,
	// and must not drop one a waiting message still needs: it must be
	// above the longest wait the policy can make (each strategy's longest
	// delay, a quarter more with jitter; MaxHeaderDelay's limit on a
	// message's own strategy; WaitLimit's on a wait a server asked) plus
	// the consumer's AckWait and a second of rounding. New refuses a
	// shorter TTL (AckWait counted as zero), Wrap and Consume one shorter
	// than the consumer's AckWait requires, and both refuse any TTL when a
	// strategy's delays have no cap (an exponential backoff without
	// MaxDelay). Under the default strategy and limits the longest wait is
	// an hour (its longest delay, and the job's limit): a TTL of two hours
	// does. One bucket serves any number of policies.
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

	// Park is the subject prefix of the parking stream; required unless
	// WaitInPlace. A message that is to wait longer than ParkAfter is moved
	// there (a copy published to Park.<stream>.<consumer>.<id>, the message
	// acked), so that it holds no slot of its consumer's MaxAckPending
	// while it waits; the policy consumes it there, under a consumer of its
	// own making, and runs it when due. The stream must capture that
	// subject, must not be the work stream, must have WorkQueuePolicy
	// retention, and must have no limit that can drop a copy before it runs
	// (MaxAge, MaxMsgs, MaxBytes, MaxMsgsPerSubject, DiscardNew): Wrap and
	// Consume refuse another, naming the setting.
	Park string

	// WaitInPlace, with Park empty, makes every wait a NakWithDelay in its
	// consumer: a waiting message then holds one of the consumer's
	// MaxAckPending slots until it is redelivered, so that messages whose
	// strategies (or headers) wait long can fill every slot and stop the
	// consumer taking new ones. Set it only for a consumer whose waits are
	// short, or whose MaxAckPending is far above the messages that can wait
	// at once.
	WaitInPlace bool

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
	// Lost is called for each parked message whose copy vanished from the
	// parking stream before it ran (the stream purged): the message is
	// lost, and its records are removed.
	Lost func(ctx context.Context, subject string)
}

// Policy applies retrypolicy strategies to the messages of JetStream
// consumers. It is safe for concurrent use; one Policy serves any number
// of consumers.
type Policy struct {
	js                jetstream.JetStream
	policies          *queuekit.Policies
	kv                jetstream.KeyValue
	deadLetterSubject string
	deadStream        string       // the stream that captures deadLetterSubject
	deadLimit         atomic.Int64 // the most bytes a dead letter may take (readDeadLimit)
	deadLimitRead     atomic.Int64 // when it was read, Unix nanoseconds by the policy's clock
	logger            *slog.Logger
	now               func() time.Time
	hooks             Hooks
	deferAfter        time.Duration
	maxRun            time.Duration
	maxHeaderDelay    time.Duration
	parkPrefix        string
	parkAfter         time.Duration
	historyTTL        time.Duration // Config.History's TTL, 0 for none
	subjects          []string      // subjectsOf(Config)

	mu       sync.Mutex
	parkings map[string]*parking // by work stream and consumer: one each, however often Wrap is called
}

// New returns a Policy for cfg on js. It returns an error naming the field
// for an invalid strategy, a missing History or DeadLetter, a DeadLetter
// subject no stream captures, or a History bucket whose TTL could drop a
// waiting message's history (Config.History says how long it must be);
// and logs at Warn, once, each trap that plan.LintGo finds in the
// strategies.
func New(ctx context.Context, js jetstream.JetStream, cfg Config) (*Policy, error) {
	strategies := queuekit.Config{Default: cfg.Default, Kinds: cfg.Subjects, KindsField: "Config.Subjects", WaitLimit: cfg.WaitLimit}
	policies, err := queuekit.NewPolicies(strategies)
	if err != nil {
		return nil, fmt.Errorf("natsretry: %w", err)
	}
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	deadStream, err := js.StreamNameBySubject(ctx, cfg.DeadLetter)
	if err != nil {
		return nil, fmt.Errorf("natsretry: Config.DeadLetter: no stream captures %s: %w", queuekit.Quote(cfg.DeadLetter), err)
	}
	ttl, err := checkBucket(ctx, cfg.History)
	if err != nil {
		return nil, err
	}
	p := &Policy{
		js: js, policies: policies, kv: cfg.History, deadLetterSubject: cfg.DeadLetter, deadStream: deadStream,
		logger: cmp.Or(cfg.Logger, slog.Default()), now: cfg.Now, hooks: cfg.Hooks,
		deferAfter: cmp.Or(cfg.DeferAfter, DefaultDeferAfter), maxRun: cmp.Or(cfg.MaxRun, DefaultMaxRun),
		maxHeaderDelay: cfg.MaxHeaderDelay,
		parkPrefix:     cfg.Park, parkAfter: cmp.Or(cfg.ParkAfter, DefaultParkAfter),
		parkings: map[string]*parking{}, historyTTL: ttl, subjects: subjectsOf(cfg),
	}
	if err := p.checkTTL(ttl, 0); err != nil {
		return nil, fmt.Errorf("natsretry: %w", err)
	}
	if p.now == nil {
		p.now = time.Now
	}
	if err := p.readDeadLimit(ctx); err != nil {
		return nil, err
	}
	// The lint has no tick: JetStream redelivers a message when it is due.
	strategies.LogLint(p.logger, "natsretry:", "none: JetStream redelivers each message when due")
	return p, nil
}

// checkConfig returns why cfg's fields, read alone, make no policy.
func checkConfig(cfg Config) error {
	if cfg.History == nil {
		return errors.New("natsretry: Config.History: a key-value bucket is required")
	}
	if cfg.DeadLetter == "" {
		return errors.New("natsretry: Config.DeadLetter: a subject is required")
	}
	if cfg.MaxRun < 0 || cfg.MaxHeaderDelay < 0 || cfg.ParkAfter < 0 {
		return fmt.Errorf("natsretry: Config.MaxRun, Config.MaxHeaderDelay and Config.ParkAfter: must not be negative, got %v, %v and %v",
			cfg.MaxRun, cfg.MaxHeaderDelay, cfg.ParkAfter)
	}
	switch {
	case cfg.Park == "" && !cfg.WaitInPlace:
		return errors.New("natsretry: Config.Park: a parking stream's subject prefix is required, so that a waiting message holds no slot of its consumer; set Config.WaitInPlace to wait in the consumer instead")
	case cfg.Park != "" && cfg.WaitInPlace:
		return errors.New("natsretry: Config.Park and Config.WaitInPlace: choose one")
	case cfg.Park != "" && !publishable(cfg.Park):
		return fmt.Errorf("natsretry: Config.Park: %s is not a subject prefix", queuekit.Quote(cfg.Park))
	}
	return nil
}

// checkBucket returns bucket's TTL (0 for none), or why bucket cannot keep
// histories: it must let a message carry a TTL of its own (LimitMarkerTTL
// set), so that the marker a removed history leaves is dropped rather than
// kept for ever.
func checkBucket(ctx context.Context, bucket jetstream.KeyValue) (time.Duration, error) {
	st, err := bucket.Status(ctx)
	if err != nil {
		return 0, fmt.Errorf("natsretry: Config.History: the bucket's status: %w", err)
	}
	if st.LimitMarkerTTL() <= 0 {
		return 0, fmt.Errorf("natsretry: Config.History: bucket %s has no LimitMarkerTTL: make it with one (a minute, say), so that a removed history's marker expires (JetStream 2.11 or later)", queuekit.Quote(bucket.Bucket()))
	}
	return st.TTL(), nil
}

// Handler handles a message. It returns nil when the message is done, and
// an error when the delivery failed; the policy then acks, retries or
// dead-letters the message: a handler must not do so itself. ctx carries
// the defer threshold (Config.DeferAfter) for the retry loops inside it,
// and ends when the consumption stops or the run passes Config.MaxRun.
type Handler func(ctx context.Context, msg jetstream.Msg) error
