package natsretry

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/retrypolicy/retrypolicy/queuekit"
)

// decided tells the Decided hook of v, the verdict on m's failures, n of
// them, after a run of uptime, and logs it at the Debug level.
func (p *Policy) decided(ctx context.Context, m delivery, n int, uptime time.Duration, v queuekit.Verdict) {
	if p.hooks.Decided != nil {
		p.hook(ctx, "Decided", func() { p.hooks.Decided(ctx, m.msg.Subject(), v.Decision, v.GaveUp) })
	}
	if p.logger.Enabled(ctx, slog.LevelDebug) {
		p.logger.DebugContext(ctx, "natsretry: decided", slog.String("subject", m.msg.Subject()),
			slog.Uint64("sequence", m.md.Sequence.Stream), slog.Uint64("delivery", m.md.NumDelivered),
			slog.Int("failures", n), slog.Duration("uptime", uptime),
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
