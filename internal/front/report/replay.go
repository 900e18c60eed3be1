package report

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/retrypolicy/retrypolicy/fleet"
	"github.com/retrypolicy/retrypolicy/internal/front/whatif"
	"github.com/retrypolicy/retrypolicy/internal/say"
	"github.com/retrypolicy/retrypolicy/internal/wire"
)

// ReplayJSON is one line of replay --json: the log as recorded (named
// "recorded", without a descriptor) or a candidate's replay.
func ReplayJSON(name string, r fleet.ReplayResult, candidate bool) []byte {
	b := wire.AppendString([]byte(`{"strategy":`), name)
	if candidate {
		canonical, _ := r.Strategy.MarshalJSON()
		b = append(append(b, `,"descriptor":`...), canonical...)
		b = wire.AppendSeconds(append(b, `,"tick_secs":`...), r.Tick)
	}
	b = fmt.Appendf(b, `,"jobs":%d,"completed":%d,"fatal":%d,"unfinished":%d,"attempts":%d,"attempts_down":%d,"peak_attempts_per_min":%d`,
		r.Jobs, r.Completed, r.Fatal, r.Unfinished, r.Attempts, r.AttemptsDown, r.PeakPerMin)
	b = appendPercentiles(append(b, `,"recovery_secs":`...), r.Recovery, r.Recovered > 0)
	b = appendTruncated(b, r.Truncated, r.TruncatedBy)
	if candidate {
		b = strconv.AppendInt(append(b, `,"fatal_completed_in_reality":`...), int64(r.FatalCompletedInReality), 10)
	}
	return append(b, '}')
}

// Replay is a replay to show: the attempt log, the controller's tick the
// candidates ran under, and what whatif's replay returned.
type Replay struct {
	Log      *fleet.Log
	Tick     time.Duration
	Replayed whatif.Replayed
}

// Write prints replay's table: a line for the log as recorded and one for
// each candidate.
func (p Replay) Write(w io.Writer) {
	log, tick, rr := p.Log, p.Tick, p.Replayed
	all, replayed := log.Jobs()
	fmt.Fprintf(w, "replay: %s, %d with a failure to replay; %s\n", count(all, "job"), replayed, TickText(tick))
	if down := log.Down(); len(down) > 0 {
		fmt.Fprintf(w, "the dependency was down %s\n", downText(down))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tattempts\twhile down\tpeak/min\tcompleted\tFATAL\t(completed in reality)\tunfinished\trecovery p50\tp99\tmax\t")
	for i, r := range rr.Results {
		rec := []string{"-", "-", "-"}
		if r.Recovered > 0 {
			rec = []string{say.Duration(r.Recovery.P50), say.Duration(r.Recovery.P99), say.Duration(r.Recovery.Max)}
		}
		real := "-"
		if i > 0 {
			real = strconv.Itoa(r.FatalCompletedInReality)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%s\t%s\t%s\t\n", rr.Names[i], r.Attempts, r.AttemptsDown, r.PeakPerMin,
			r.Completed, r.Fatal, real, r.Unfinished, rec[0], rec[1], rec[2])
	}
	tw.Flush()
	fmt.Fprintln(w, "\nrecorded: FATAL counts the jobs the log never completes (it cannot tell a fatal job from one still waiting)")
	for i, r := range rr.Results {
		if r.Truncated {
			fmt.Fprint(w, Truncated(rr.Names[i], r.TruncatedBy, fmt.Sprintf("after %d replayed attempts, its counts are lower bounds", r.Replayed)))
		}
	}
}

// count writes n things, the noun plural unless n is 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// downText says when the dependency was down: the stretches, at most
// three listed.
func downText(down []fleet.Stretch) string {
	var b bytes.Buffer
	for i, s := range down {
		if i == 3 {
			fmt.Fprintf(&b, " and %d times more", len(down)-3)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "from %s for %s", s.From.UTC().Format(time.RFC3339), say.Duration(s.To.Sub(s.From)))
	}
	return b.String()
}

// Chart draws the attempts a minute of the log as recorded and of each
// candidate over the log's time, on a log scale, with the stretches the
// dependency was down shaded: at most MaxChartPoints points a line and as
// many shaded stretches, however long or flapping the log.
func (p Replay) Chart() []byte {
	log, rr := p.Log, p.Replayed
	a := alignLoads(rr.Results)
	loads := a.loads
	units, peak := 1, 1
	for _, l := range loads {
		units = max(units, len(l))
		for _, n := range l {
			peak = max(peak, n)
		}
	}
	c := newLoadChart(units, a.width, peak)
	c.xLabel = "time since the log's first attempt, " + a.from.Format(time.RFC3339)
	c.start("attempts a minute (log scale), as recorded and replayed; "+TickText(p.Tick), 0, "")
	for i, s := range a.spans(log.Down(), float64(c.per)) {
		label := ""
		if i == 0 {
			label = "down"
		}
		c.shade(s[0], s[1], label)
	}
	for i, r := range rr.Results {
		c.line(i, loads[i], nil)
		label, note := rr.Names[i], ""
		if r.Fatal > 0 && i > 0 {
			label += fmt.Sprintf(" (%d FATAL)", r.Fatal)
		}
		if j := sameLoad(loads, i); j >= 0 {
			note = "its line is under " + rr.Names[j] + "'s"
		}
		c.legend(i, key{label, []string{note}})
	}
	return c.end()
}

// aligned are loads in buckets of one width from one instant.
type aligned struct {
	loads [][]int
	from  time.Time
	width time.Duration
}

// alignLoads returns the results' loads in buckets of one width, the
// widest of theirs (every Load of a log starts at its first attempt's
// minute, and widths are a minute times a power of two), each bucket the
// busiest of those it takes in.
func alignLoads(results []fleet.ReplayResult) aligned {
	from, width := time.Time{}, time.Minute
	for _, r := range results {
		width = max(width, r.Load.Width)
		from = r.Load.From
	}
	loads := make([][]int, len(results))
	for i, r := range results {
		per := int(width / max(r.Load.Width, time.Minute))
		for j, n := range r.Load.Busiest {
			k := j / per
			for len(loads[i]) <= k {
				loads[i] = append(loads[i], 0)
			}
			loads[i][k] = max(loads[i][k], n)
		}
	}
	return aligned{loads, from, width}
}

// spans returns the down stretches as spans of the buckets, each stretch
// joined to the one before when it starts within one point (per buckets)
// of its end: at most one span a point.
func (al aligned) spans(down []fleet.Stretch, per float64) [][2]float64 {
	var out [][2]float64
	for _, s := range down {
		a, z := float64(s.From.Sub(al.from))/float64(al.width), float64(s.To.Sub(al.from))/float64(al.width)
		if n := len(out); n > 0 && a <= out[n-1][1]+per {
			out[n-1][1] = max(out[n-1][1], z)
			continue
		}
		out = append(out, [2]float64{a, z})
	}
	return out
}
