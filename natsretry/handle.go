package natsretry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/queuekit"
	"github.com/retrypolicy/retrypolicy/retry"
)

// maxStale is the most deliveries a copy of a message may lag behind the
// last one the policy saw end and still be taken for a copy that waited in
// the client's buffer (and left alone): each later delivery came an
// AckWait or a nak after the one before, far fewer than this while a copy
// waits. A history claiming more was not written by this delivery's
// policy: it is repaired, not obeyed.
const maxStale = 16

// delivery is a message being handled, with what the policy derives from
// it once.
type delivery struct {
	msg  jetstream.Msg
	md   *jetstream.MsgMetadata
	key  string
	pol  *retrypolicy.Policy
	own  bool // pol is the message's own strategy, from its header
	seed uint64
	// kept: the message may have a history under key (not a first
	// delivery of a work message).
	kept bool
	// park is where a long wait moves the message; nil when it cannot be
	// moved (parking is off, or the message is parked already).
	park *parking
	// origin is, for a parked message, its work message's history key.
	origin string
	// h runs the message, as a consumer of ackWait's.
	h       Handler
	ackWait time.Duration
}

// span is when a run of a delivery started and ended.
type span struct{ start, end time.Time }

// handle runs h on one delivery of msg, a work consumer's, under the
// policy and acks, naks, parks or dead-letters it.
func (p *Policy) handle(ctx context.Context, msg jetstream.Msg, h Handler, ackWait time.Duration, park *parking) {
	md, err := msg.Metadata()
	if err != nil {
		p.logger.ErrorContext(ctx, "natsretry: not a JetStream delivery; left to its redelivery", slog.String("error", err.Error()))
		return
	}
	runCtx := ctx
	ctx = context.WithoutCancel(ctx) // the policy's own round trips end as they would, the consumer stopping
	m := delivery{msg: msg, md: md, key: historyKey(md.Stream, md.Consumer, md.Sequence.Stream, md.Timestamp),
		seed: queuekit.Seed(int64(md.Sequence.Stream)), kept: md.NumDelivered > 1, park: park, h: h, ackWait: ackWait}
	m.pol, m.own = p.policyOf(ctx, m)
	var room [16]int64
	var hist history
	if m.kept { // a first delivery has no history yet
		var ok bool
		if hist, ok = p.load(ctx, m, room[:]); !ok {
			p.nak(ctx, m, StoreRetry)
			return
		}
	}
	if hist.parkedID != "" && park != nil { // moved to the parking stream before: finish
		p.finishMove(ctx, m, hist.parkedID)
		return
	}
	p.deliver(runCtx, ctx, m, hist)
}

// deliver runs m's handler on m, whose history is hist, unless m is an
// old copy, given up already or early, and acts on how the run ended.
func (p *Policy) deliver(runCtx, ctx context.Context, m delivery, hist history) {
	md := m.md
	if hist.seen > md.NumDelivered+maxStale {
		// No copy lags so far behind: a history written by a stranger.
		p.logger.WarnContext(ctx, "natsretry: the message's history claims a delivery far beyond this one; it starts anew",
			p.ids(m, fmt.Errorf("delivery %d, history's last seen %d", md.NumDelivered, hist.seen))...)
		p.repaired(ctx, m)
		hist = history{parked: hist.parked}
	}
	if hist.seen >= md.NumDelivered && md.NumDelivered > 1 {
		return // an earlier delivery's copy, held in the client's buffer while JetStream redelivered it
	}
	now := p.now()
	if hist.dead { // given up before, its copy perhaps made: finish
		p.deadLetter(ctx, m, hist)
		return
	}
	if due := hist.dueTime(); due.After(now) && due.Sub(now) <= hist.waitFor()+m.ackWait {
		// Redelivered early: back to its time. A due time farther away
		// than the wait decided (the clock stepped back, a replica's is
		// skewed) is not trusted: the message runs.
		hist.seen = md.NumDelivered
		p.wait(ctx, m, hist, due, now)
		return
	}
	if hist.seen+1 < md.NumDelivered {
		var ready bool
		if hist, ready = p.unseen(ctx, m, hist, now); !ready {
			return
		}
	}
	start := p.now()
	o := p.run(runCtx, m.msg, m.h, m.ackWait)
	if o.abandoned {
		return // JetStream's redelivery, after AckWait, is the run that counts
	}
	p.ended(ctx, m, hist, o, span{start, p.now()})
}

// ended acts on the end of m's run, over ran: done, failed, or
// interrupted by the consumer stopping (its context done, and the run
// returning that), which is no failure: the message is redelivered at
// once, counting nothing.
func (p *Policy) ended(ctx context.Context, m delivery, hist history, o outcome, ran span) {
	switch {
	case !o.failed:
		p.done(ctx, m)
	case o.stopped:
		hist.seen = m.md.NumDelivered
		p.store(ctx, m, hist)
		p.nak(ctx, m, 0)
	default:
		p.failed(ctx, m, hist, &o.failure, ran)
	}
}

// policyOf returns the policy of a delivery's message: its own strategy
// (HeaderStrategy), and true, else its subject's; an invalid own strategy
// is logged at its first delivery and its subject's applies.
func (p *Policy) policyOf(ctx context.Context, m delivery) (*retrypolicy.Policy, bool) {
	raw := m.msg.Headers().Get(HeaderStrategy)
	if raw == "" {
		return p.policies.Kind(m.msg.Subject()), false
	}
	pol, err := p.policies.Own([]byte(raw))
	if err != nil {
		if m.md.NumDelivered == 1 {
			p.logger.WarnContext(ctx, "natsretry: the message's strategy is invalid; its subject's strategy applies",
				slog.String("subject", m.msg.Subject()), slog.Uint64("sequence", m.md.Sequence.Stream), slog.String("error", err.Error()))
		}
		return p.policies.Kind(m.msg.Subject()), false
	}
	return pol, true
}

// headerDelay is the longest a message's own strategy may make it wait:
// Config.MaxHeaderDelay, else its subject's strategy's MaxDelay, else an
// hour.
func (p *Policy) headerDelay(subject string) time.Duration {
	if p.maxHeaderDelay > 0 {
		return p.maxHeaderDelay
	}
	if d := p.policies.Kind(subject).Strategy().Backoff.MaxDelay; d > 0 {
		return d
	}
	return time.Hour
}

// unseen counts the deliveries of m before this one that ended unseen (a
// consumer died mid-run, or the history could not be written) as one
// failure now, with no uptime credit: a gap of several is one run that
// failed and deliveries that never ran, the history unreadable. It returns
// the history to run m with, written first so that a crash in this run is
// a gap of its own; and false when m is given up or waits instead.
func (p *Policy) unseen(ctx context.Context, m delivery, hist history, now time.Time) (history, bool) {
	hist, v := p.judge(ctx, m, hist, nil, span{now, now})
	switch {
	case v.Action == retrypolicy.Fatal:
		hist.lastError = "a delivery ended without an ack or a nak (its consumer stopped mid-run)"
		p.giveUp(ctx, m, hist)
		return hist, false
	case v.Due.After(now):
		p.wait(ctx, m, hist, v.Due, now)
		return hist, false
	}
	hist.seen--
	p.store(ctx, m, hist)
	return hist, true
}

// outcome is how a run ended, read from what its handler did inside the
// run's own recover: nothing the handler returns is trusted further.
type outcome struct {
	// failed: the run failed, as failure says.
	failed bool
	failure
	// stopped: the handler returned its context's error once the consumer
	// stopped.
	stopped bool
	// abandoned: the run passed Config.MaxRun and was given up on.
	abandoned bool
}

// failure is what the policy keeps of a run's error, read once: its text,
// at most MaxErrorText bytes, and its retry marks.
type failure struct {
	text  string
	marks retry.Marks
}

// panicText is a recovered value as text: fmt recovers a panic in the
// value's own Error or String method, where a log handler might not.
func panicText(r any) string { return fmt.Sprint(r) }

// goexitText is the failure of a handler that called runtime.Goexit.
const goexitText = "natsretry: the handler called runtime.Goexit"

// run runs h on msg in a goroutine of its own, telling JetStream every
// ackWait/2 that the delivery is in progress until it ends or the
// consumer's ctx is done. A panic in h, in its error's methods, or a
// runtime.Goexit is a failure of the run, logged with its stack. A run
// longer than MaxRun is abandoned: its context cancelled, logged, and
// whatever it returns later discarded.
func (p *Policy) run(ctx context.Context, msg jetstream.Msg, h Handler, ackWait time.Duration) outcome {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan outcome, 1) // an abandoned run's outcome lands here, unread
	go p.runHandler(ctx, runCtx, msg, h, done)
	tick := time.NewTicker(max(ackWait/2, time.Millisecond))
	defer tick.Stop()
	limit := time.NewTimer(p.maxRun)
	defer limit.Stop()
	inProgress, stopped := tick.C, ctx.Done()
	for {
		select {
		case o := <-done:
			return o
		case <-inProgress:
			_ = msg.InProgress() // a lost one is a redelivery, counted as unseen
		case <-stopped:
			inProgress, stopped = nil, nil // the consumer stopped: its runs are no longer kept
		case <-limit.C:
			cancel()
			p.logger.ErrorContext(ctx, "natsretry: the run passed Config.MaxRun and is abandoned; JetStream redelivers the message",
				slog.String("subject", msg.Subject()), slog.Duration("max_run", p.maxRun))
			return outcome{abandoned: true}
		}
	}
}

// runHandler calls h and sends how it ended to done, whatever h does.
func (p *Policy) runHandler(ctx, runCtx context.Context, msg jetstream.Msg, h Handler, done chan<- outcome) {
	var o outcome
	exited := true // until h returns or panics: it called runtime.Goexit
	defer func() {
		if exited {
			o = outcome{failed: true, failure: failure{text: goexitText}}
			p.logger.ErrorContext(ctx, goexitText, slog.String("subject", msg.Subject()), slog.String("stack", string(debug.Stack())))
		}
		done <- o
	}()
	defer func() {
		if r := recover(); r != nil {
			exited = false
			o = outcome{failed: true, failure: failure{text: clip("natsretry: the handler panicked: " + panicText(r))}}
			p.logger.ErrorContext(ctx, o.text, slog.String("subject", msg.Subject()), slog.String("stack", string(debug.Stack())))
		}
	}()
	err := h(retry.DeferAfter(runCtx, p.deferAfter), msg)
	exited = false
	o = p.settle(ctx, msg, err)
}

// settle reads what the policy needs of err, the handler's error, each
// read under a recover of its own (a method of err may panic) and its
// chain walked once, bounded (retry.ReadMarks): whether the consumer
// stopped, its retry marks, its text.
func (p *Policy) settle(ctx context.Context, msg jetstream.Msg, err error) (o outcome) {
	if err == nil {
		return outcome{}
	}
	guard := func(what string) {
		if r := recover(); r != nil {
			p.logger.ErrorContext(ctx, "natsretry: the handler's error panicked in "+what, slog.String("subject", msg.Subject()),
				slog.String("panic", panicText(r)), slog.String("stack", string(debug.Stack())))
		}
	}
	o.failed = true
	func() {
		defer guard("its Unwrap or Is methods")
		o.marks = retry.ReadMarks(err)
		switch ctx.Err() {
		case context.Canceled:
			o.stopped = o.marks.Canceled
		case context.DeadlineExceeded:
			o.stopped = o.marks.DeadlineExceeded
		}
	}()
	o.text = "an error whose Error method panicked"
	func() {
		defer guard("its Error method")
		o.text = clip(err.Error())
	}()
	return o
}

// done acks m, then removes its history, even when the ack is not
// confirmed: a redelivery counts as a failure either way, and a history
// kept for an ack that did land would stay for ever.
func (p *Policy) done(ctx context.Context, m delivery) {
	if err := m.msg.DoubleAck(ctx); err != nil {
		p.logger.ErrorContext(ctx, "natsretry: the ack is not confirmed; the message may be redelivered", p.ids(m, err)...)
	}
	if m.kept {
		p.purge(ctx, m)
	}
}

// failed decides on the failure of m's delivery, which ran over ran and
// failed as f says, records it and naks or gives up the message.
func (p *Policy) failed(ctx context.Context, m delivery, hist history, f *failure, ran span) {
	hist, v := p.judge(ctx, m, hist, f, ran)
	if v.Action == retrypolicy.Fatal {
		p.giveUp(ctx, m, hist)
		return
	}
	p.wait(ctx, m, hist, v.Due, ran.end) // when its store fails, the redelivery counts this failure as unseen
}

// judge returns the verdict on the failure of m's delivery, which ran
// over ran and failed as f says (nil for a delivery that ended unseen),
// and m's history after it. A strategy from the message's header waits
// no longer than Config.MaxHeaderDelay; a wait a server asked, or a loop
// in the run deferred, is the job's limit's (queuekit.Judge), whatever
// strategy the header chose.
func (p *Policy) judge(ctx context.Context, m delivery, hist history, f *failure, ran span) (history, queuekit.Verdict) {
	at := ran.end.Truncate(time.Millisecond)
	hist.failures = append(hist.failures, at.UnixNano())
	uptime := ran.end.Sub(ran.start)
	d := queuekit.Decide(m.pol, hist.failures, uptime, m.seed, at)
	if m.own && d.Action == retrypolicy.Wait {
		if limit := at.Add(p.headerDelay(m.msg.Subject())); d.Due.After(limit) {
			d.Due = limit // a publisher chooses a strategy, not to park the consumer
		}
	}
	var marks retry.Marks
	if f != nil {
		marks = f.marks
	}
	v := queuekit.Judge(d, marks, at, p.policies.WaitLimit(m.msg.Subject()))
	p.decided(ctx, m, hist.failures, uptime, v)
	hist.failures = queuekit.Keep(m.pol, hist.failures, v.Decision)
	hist.seen, hist.due, hist.wait = m.md.NumDelivered, 0, 0
	switch v.Action {
	case retrypolicy.Fatal:
		hist.reason = v.GaveUp
		if f != nil {
			hist.lastError = f.text
		}
		if v.GaveUp == retry.RetryAfterTooLong {
			hist.wait = ceilMillis(v.Asked) // the wait asked, for the dead letter
		}
	case retrypolicy.Wait:
		hist.due = v.Due.UnixMilli()
		hist.wait = v.Due.Sub(at).Milliseconds()
	}
	return hist, v
}

// ceilMillis is d in whole milliseconds, rounded up.
func ceilMillis(d time.Duration) int64 {
	ms := d.Milliseconds()
	if d%time.Millisecond > 0 {
		ms++
	}
	return ms
}

// load reads m's history: none when it has none, a new one (logged) when
// it cannot be read, and false when the bucket cannot be reached.
func (p *Policy) load(ctx context.Context, m delivery, room []int64) (history, bool) {
	e, err := p.kv.Get(ctx, m.key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return history{}, true
	}
	if err != nil {
		p.logger.ErrorContext(ctx, "natsretry: cannot read the message's history; it is retried", p.ids(m, err)...)
		return history{}, false
	}
	hist, err := readHistory(e.Value(), room)
	if err != nil {
		p.logger.WarnContext(ctx, "natsretry: the message's history is unreadable; it starts anew", p.ids(m, err)...)
		p.repaired(ctx, m)
		return history{}, true
	}
	return hist, true
}

// store writes m's history, reporting whether it could.
func (p *Policy) store(ctx context.Context, m delivery, hist history) bool {
	return p.storeAt(ctx, m, m.key, hist)
}

// storeAt writes hist, of m's message, under key, reporting whether it
// could.
func (p *Policy) storeAt(ctx context.Context, m delivery, key string, hist history) bool {
	var room [256]byte
	if _, err := p.kv.Put(ctx, key, appendHistory(room[:0], hist)); err != nil {
		p.logger.ErrorContext(ctx, "natsretry: cannot record the message's history", p.ids(m, err)...)
		return false
	}
	return true
}

// purge removes every revision of m's history, leaving no marker; for a
// parked message, its work message's history too, which named its copy.
func (p *Policy) purge(ctx context.Context, m delivery) {
	for _, key := range [...]string{m.key, m.origin} {
		if key == "" {
			continue
		}
		if err := p.kvStream.Purge(ctx, jetstream.WithPurgeSubject("$KV."+p.kv.Bucket()+"."+key)); err != nil {
			p.logger.ErrorContext(ctx, "natsretry: cannot remove the message's history", p.ids(m, err)...)
		}
	}
}

// nak asks JetStream to redeliver m after delay, at once when it is not
// positive.
func (p *Policy) nak(ctx context.Context, m delivery, delay time.Duration) {
	var err error
	if delay > 0 {
		err = m.msg.NakWithDelay(delay)
	} else {
		err = m.msg.Nak()
	}
	if err != nil {
		p.logger.ErrorContext(ctx, "natsretry: cannot nak the message; it is redelivered after the consumer's AckWait", p.ids(m, err)...)
	}
}

// decided tells the Decided hook of v, the verdict on m's failures after a
// run of uptime, and logs it at the Debug level.
func (p *Policy) decided(ctx context.Context, m delivery, failures []int64, uptime time.Duration, v queuekit.Verdict) {
	if p.hooks.Decided != nil {
		p.hook(ctx, "Decided", func() { p.hooks.Decided(ctx, m.msg.Subject(), v.Decision, v.GaveUp) })
	}
	if p.logger.Enabled(ctx, slog.LevelDebug) {
		p.logger.DebugContext(ctx, "natsretry: decided", slog.String("subject", m.msg.Subject()),
			slog.Uint64("sequence", m.md.Sequence.Stream), slog.Uint64("delivery", m.md.NumDelivered),
			slog.Int("failures", len(failures)), slog.Duration("uptime", uptime),
			slog.Any("decision", v.Decision), slog.String("gave_up", v.GaveUp.String()))
	}
}

// repaired tells the Repaired hook that m's history was started anew.
func (p *Policy) repaired(ctx context.Context, m delivery) {
	if p.hooks.Repaired != nil {
		p.hook(ctx, "Repaired", func() { p.hooks.Repaired(ctx, m.msg.Subject()) })
	}
}

// hook calls f, which calls the hook named: a panic in it is logged with
// its stack, and the consumer goes on.
func (p *Policy) hook(ctx context.Context, name string, f func()) {
	defer func() {
		if r := recover(); r != nil {
			p.logger.ErrorContext(ctx, "natsretry: the "+name+" hook panicked", slog.String("panic", panicText(r)), slog.String("stack", string(debug.Stack())))
		}
	}()
	f()
}

// ids are the log attributes of m and err.
func (p *Policy) ids(m delivery, err error) []any {
	return []any{slog.String("subject", m.msg.Subject()), slog.String("stream", m.md.Stream),
		slog.Uint64("sequence", m.md.Sequence.Stream), slog.String("error", err.Error())}
}
