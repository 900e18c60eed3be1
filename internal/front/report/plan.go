package report

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/internal/wire"
	"github.com/retrypolicy/retrypolicy/plan"
)

// PlanJSON is plan --json: the strategy, the uptime and the tick, each
// failure with its times since the first, and lint's findings.
func PlanJSON(s retrypolicy.Strategy, uptime time.Duration, steps []plan.Step, report plan.Report) []byte {
	canonical, _ := s.MarshalJSON()
	b := append([]byte(`{"strategy":`), canonical...)
	b = wire.AppendSeconds(append(b, `,"uptime_secs":`...), uptime)
	b = wire.AppendSeconds(append(b, `,"tick_secs":`...), report.Summary.Tick)
	b = append(b, `,"failures":[`...)
	first := steps[0].Failure
	for i, st := range steps {
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
	findings, _ := json.Marshal(report.Findings)
	if report.Findings == nil {
		findings = []byte("[]")
	}
	b = append(append(b, `],"findings":`...), findings...)
	return append(b, '}')
}
