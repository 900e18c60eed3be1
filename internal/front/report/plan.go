package report

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/wire"
	"github.com/retrypolicy/retrypolicy/plan"
)

// Plan is a plan to show: a strategy, the uptime of each of its job's
// runs, the controller's tick, the steps plan.Timeline returned for them
// (at least one), and what lint finds in the strategy under that tick.
type Plan struct {
	Strategy retrypolicy.Strategy
	Uptime   time.Duration
	Tick     time.Duration
	Steps    []plan.Step
	Lint     plan.Report
}

// JSON is plan --json: the strategy, the uptime and the tick, each
// failure with its times since the first, and lint's findings.
func (p Plan) JSON() []byte {
	canonical, _ := p.Strategy.MarshalJSON()
	b := append([]byte(`{"strategy":`), canonical...)
	b = wire.AppendSeconds(append(b, `,"uptime_secs":`...), p.Uptime)
	b = wire.AppendSeconds(append(b, `,"tick_secs":`...), p.Tick)
	b = append(b, `,"failures":[`...)
	first := p.Steps[0].Failure
	for i, st := range p.Steps {
		if i > 0 {
			b = append(b, ',')
		}
		d := st.Decision
		b = wire.AppendSeconds(append(b, `{"at_secs":`...), st.Failure.Sub(first))
		b = strconv.AppendInt(append(b, `,"in_window":`...), int64(d.InWindow), 10)
		if d.Action == retrypolicy.Fatal {
			b = append(append(append(b, `,"fatal":"`...), d.Reason.String()...), `"}`...)
			continue
		}
		b = wire.AppendSeconds(append(b, `,"owed_secs":`...), d.Owed)
		b = wire.AppendSeconds(append(b, `,"delay_secs":`...), d.Delay)
		b = wire.AppendSeconds(append(b, `,"due_secs":`...), d.Due.Sub(first))
		b = wire.AppendSeconds(append(b, `,"retry_at_secs":`...), st.Retry.Sub(first))
		b = append(b, '}')
	}
	findings, _ := json.Marshal(p.Lint.Findings)
	if p.Lint.Findings == nil {
		findings = []byte("[]")
	}
	b = append(append(b, `],"findings":`...), findings...)
	return append(b, '}')
}
