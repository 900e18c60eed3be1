package natsretry

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/retrypolicy/retrypolicy/retry"
)

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

// run runs m's handler on m in a goroutine of its own, telling JetStream
// every AckWait/2 that the delivery is in progress until it ends or the
// consumption's ctx is done. A panic in the handler, in its error's
// methods, or a runtime.Goexit is a failure of the run, logged with its
// stack. A run longer than MaxRun is abandoned: its context cancelled,
// logged, and whatever it returns later discarded.
func (m *delivery) run(ctx context.Context) outcome {
	p, msg := m.p, m.msg
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan outcome, 1) // an abandoned run's outcome lands here, unread
	go p.runHandler(ctx, runCtx, handlerRun{msg: msg, h: m.h, done: done})
	tick := time.NewTicker(max(m.ackWait/2, time.Millisecond))
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

// handlerRun is one call of a handler, h, on msg, and where how it ended
// goes: a value of its own, copied to the goroutine that runs it.
type handlerRun struct {
	msg  jetstream.Msg
	h    Handler
	done chan<- outcome
}

// runHandler calls r's handler and sends how it ended to r.done, whatever
// the handler does.
func (p *Policy) runHandler(ctx, runCtx context.Context, r handlerRun) {
	msg := r.msg
	var o outcome
	exited := true // until h returns or panics: it called runtime.Goexit
	defer func() {
		if exited {
			o = outcome{failed: true, failure: failure{text: goexitText}}
			p.logger.ErrorContext(ctx, goexitText, slog.String("subject", msg.Subject()), slog.String("stack", string(debug.Stack())))
		}
		r.done <- o
	}()
	defer func() {
		if r := recover(); r != nil {
			exited = false
			o = outcome{failed: true, failure: failure{text: clip("natsretry: the handler panicked: " + panicText(r))}}
			p.logger.ErrorContext(ctx, o.text, slog.String("subject", msg.Subject()), slog.String("stack", string(debug.Stack())))
		}
	}()
	err := r.h(retry.DeferAfter(runCtx, p.deferAfter), msg)
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
