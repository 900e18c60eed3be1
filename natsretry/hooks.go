package natsretry

import (
	"context"
	"log/slog"
	"runtime/debug"

	"github.com/retrypolicy/retrypolicy/queuekit"
)

// decided tells the Decided hook of s, the settlement of m's failure, and
// logs it at the Debug level.
func (m *delivery) decided(ctx context.Context, s queuekit.Settlement) {
	p := m.p
	if p.hooks.Decided != nil {
		p.hook(ctx, "Decided", func() { p.hooks.Decided(ctx, m.msg.Subject(), s.Decision, s.GaveUp) })
	}
	if p.logger.Enabled(ctx, slog.LevelDebug) {
		p.logger.DebugContext(ctx, "natsretry: decided", slog.String("subject", m.msg.Subject()),
			slog.Uint64("sequence", m.md.Sequence.Stream), slog.Uint64("delivery", m.md.NumDelivered),
			slog.Int("failures", s.Decided), slog.Duration("uptime", s.Uptime),
			slog.Any("decision", s.Decision), slog.String("gave_up", s.GaveUp.String()))
	}
}

// repaired tells the Repaired hook that m's history was started anew.
func (m *delivery) repaired(ctx context.Context) {
	p := m.p
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
