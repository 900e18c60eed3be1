package httpapi

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/fleet"
	"github.com/retrypolicy/retrypolicy/internal/capped"
	"github.com/retrypolicy/retrypolicy/internal/echo"
	"github.com/retrypolicy/retrypolicy/internal/front/report"
	"github.com/retrypolicy/retrypolicy/internal/front/whatif"
	"github.com/retrypolicy/retrypolicy/internal/jsonscan"
)

var (
	//go:embed page.html
	page []byte
	//go:embed page.js
	script []byte
)

// pagePolicy lets the page run only its own script, and no site frame it.
const pagePolicy = "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

func (h *Handler) page(w http.ResponseWriter, r *http.Request, _ []byte) *apiError {
	return h.static(w, r, "text/html; charset=utf-8", page)
}

func (h *Handler) script(w http.ResponseWriter, r *http.Request, _ []byte) *apiError {
	return h.static(w, r, "text/javascript; charset=utf-8", script)
}

func (h *Handler) static(w http.ResponseWriter, r *http.Request, contentType string, b []byte) *apiError {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Security-Policy", pagePolicy)
	w.Header().Set("X-Frame-Options", "DENY")
	if r.Method != http.MethodHead {
		w.Write(b)
	}
	return nil
}

// query parses the query string strictly: one that does not parse is a
// problem, not an empty query.
func query(r *http.Request) (url.Values, *apiError) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, invalid("INVALID_PARAMETER", []fieldProblem{{"$", "$: the query string does not parse: " + err.Error()}})
	}
	return q, nil
}

// noQuery refuses query parameters where an endpoint takes none.
func noQuery(r *http.Request) *apiError {
	return setQuery(flag.NewFlagSet("", flag.ContinueOnError), r)
}

// setQuery sets fs's flags from the query's parameters, named as the
// flags are, each at most once. It reports at most capped.Max
// problems, then how many more, each name and value echoed cut.
func setQuery(fs *flag.FlagSet, r *http.Request) *apiError {
	q, e := query(r)
	if e != nil {
		return e
	}
	var probs capped.List[fieldProblem]
	for _, name := range slices.Sorted(maps.Keys(q)) {
		if probs.Full() {
			probs.More++ // the rest are counted, not read
			continue
		}
		values := q[name]
		field := echo.Text(name)
		switch {
		case fs.Lookup(name) == nil:
			probs.Add(fieldProblem{field, field + ": unknown parameter" + suggestion(fs, name)})
		case len(values) > 1:
			probs.Add(fieldProblem{field, field + ": given more than once"})
		default:
			if err := fs.Set(name, values[0]); err != nil {
				probs.Add(fieldProblem{field, field + ": " + err.Error() + ", got " + echo.Quote(values[0])})
			}
		}
	}
	if probs.More > 0 {
		probs.Kept = append(probs.Kept, fieldProblem{"$", capped.AndMore(probs.More)})
	}
	if probs.Kept != nil {
		return invalid("INVALID_PARAMETER", probs.Kept)
	}
	return nil
}

// suggestion is " (did you mean …?)" for a name close to one of fs's.
func suggestion(fs *flag.FlagSet, name string) string {
	if len(name) > echo.Max {
		return ""
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return echo.SuggestFrom(name, names)
}

// optionProblems are options out of range, as parameters.
func optionProblems(errs []whatif.Option) *apiError {
	probs := make([]fieldProblem, len(errs))
	for i, e := range errs {
		probs[i] = fieldProblem{e.Name, e.Error()}
	}
	return invalid("INVALID_PARAMETER", probs)
}

// wantsSVG reports whether the request asks for a picture.
func wantsSVG(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "image/svg+xml")
}

func writeSVG(w http.ResponseWriter, svg []byte) *apiError {
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Write(svg)
	return nil
}

func (h *Handler) validate(w http.ResponseWriter, r *http.Request, body []byte) *apiError {
	if e := noQuery(r); e != nil {
		return e
	}
	st, e := strategyBody(body)
	if e != nil {
		return e
	}
	canonical, _ := st.MarshalJSON()
	return writeJSON(w, canonical)
}

func (h *Handler) flags(w http.ResponseWriter, r *http.Request, body []byte) *apiError {
	if e := noQuery(r); e != nil {
		return e
	}
	var args []string
	if err := json.Unmarshal(body, &args); err != nil {
		return invalid("INVALID_BODY", []fieldProblem{{"$", `$: must be a JSON array of strings, the flags as a shell splits them: ["--retry-strategy", "bounded"]`}})
	}
	st, err := retrypolicy.ParseFlags(args)
	if err != nil {
		return invalid("INVALID_BODY", strategyProblems(err))
	}
	canonical, _ := st.MarshalJSON()
	return writeJSON(w, canonical)
}

// lineProblems are decide's problems, each a line "FIELD: MESSAGE".
func lineProblems(lines []string) []fieldProblem {
	out := make([]fieldProblem, len(lines))
	for i, line := range lines {
		field, _, ok := strings.Cut(line, ": ")
		if !ok {
			field = "$"
		}
		out[i] = fieldProblem{field, line}
	}
	return out
}

// decide answers one request with its decision, or an array of them with
// an array: each element a decision, or the error object of its problems.
func (h *Handler) decide(w http.ResponseWriter, r *http.Request, body []byte) *apiError {
	if e := noQuery(r); e != nil {
		return e
	}
	d := h.deciders.Get().(*report.Decider)
	defer h.deciders.Put(d)
	var sc jsonscan.Scanner
	sc.Reset(body)
	if sc.Peek() != '[' {
		out, probs := d.Decide(body, nil)
		if probs != nil {
			return invalid("INVALID_BODY", lineProblems(probs))
		}
		return writeJSON(w, out)
	}
	items, e := h.batch(&sc, body)
	if e != nil {
		return e
	}
	// The answer is written as it is decided, through a small buffer, so
	// that a slow reader holds no more than the body it sent.
	w.Header().Set("Content-Type", "application/json")
	bw := bufio.NewWriterSize(w, 16<<10)
	bw.WriteByte('[')
	var out []byte
	for i, item := range items {
		if i > 0 {
			bw.WriteByte(',')
		}
		var probs []string
		if out, probs = d.Decide(item, out[:0]); probs != nil {
			out = append(out[:0], invalid("INVALID_BODY", lineProblems(probs)).json()...)
		}
		if _, err := bw.Write(out); err != nil {
			return nil // the client is gone: nothing more can reach it
		}
	}
	bw.WriteString("]\n")
	bw.Flush()
	return nil
}

// batch finds the elements of the array the scanner is at, by their
// brackets alone (the decider reads, and so checks, each), checking the
// array's own syntax and that it holds at most MaxBatch elements.
func (h *Handler) batch(sc *jsonscan.Scanner, body []byte) ([][]byte, *apiError) {
	sc.Next()
	var items [][]byte
	for n := 0; !sc.Bad() && sc.Peek() != ']'; n++ {
		if n > 0 && !sc.Consume(',') {
			break
		}
		if n == h.o.MaxBatch {
			return nil, invalid("INVALID_BODY", []fieldProblem{{"$", fmt.Sprintf("$: a batch holds at most %d requests", h.o.MaxBatch)}})
		}
		item := sc.Skip()
		if sc.Bad() {
			break
		}
		items = append(items, item)
	}
	if sc.Bad() || !sc.Consume(']') || sc.Peek() != 0 {
		return nil, invalid("INVALID_BODY", []fieldProblem{{"$", report.SyntaxProblem(body, 0)}})
	}
	return items, nil
}

// work returns the context a plan, lint or simulation works under: the
// request's, ended by the budget.
func (h *Handler) work(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), h.o.Budget)
}

// maxAxis is the longest time axis a plan's picture may be asked for.
const maxAxis = 100 * 365 * 24 * time.Hour

func (h *Handler) plan(w http.ResponseWriter, r *http.Request, body []byte) *apiError {
	var o whatif.PlanOptions
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	o.Define(fs)
	var axis whatif.Seconds // the picture's time axis, at least the plan's: plans compared share it
	fs.Var(&axis, "axis", "")
	if e := setQuery(fs, r); e != nil {
		return e
	}
	errs := o.Check()
	if axis < 0 || time.Duration(axis) > maxAxis {
		errs = append(errs, whatif.Option{Name: "axis", Rule: "must be between 0 and 100 years, got " + time.Duration(axis).String()})
	}
	if errs != nil {
		return optionProblems(errs)
	}
	st, e := strategyBody(body)
	if e != nil {
		return e
	}
	ctx, cancel := h.work(r)
	defer cancel()
	steps, found, err := o.Run(ctx, st)
	if e := h.failed(ctx, err); e != nil {
		return e
	}
	p := report.Plan{Strategy: st, Uptime: time.Duration(o.Uptime), Tick: time.Duration(o.Tick), Steps: steps, Lint: found}
	if wantsSVG(r) {
		return writeSVG(w, p.SVG(time.Duration(axis)))
	}
	return writeJSON(w, p.JSON())
}

func (h *Handler) lint(w http.ResponseWriter, r *http.Request, body []byte) *apiError {
	var o whatif.TickOption
	fs := flag.NewFlagSet("lint", flag.ContinueOnError)
	o.Define(fs, "")
	if e := setQuery(fs, r); e != nil {
		return e
	}
	if errs := o.Check(); errs != nil {
		return optionProblems(errs)
	}
	st, e := strategyBody(body)
	if e != nil {
		return e
	}
	ctx, cancel := h.work(r)
	defer cancel()
	found, err := o.Lint(ctx, st)
	if e := h.failed(ctx, err); e != nil {
		return e
	}
	b, _ := json.Marshal(found)
	return writeJSON(w, b)
}

func (h *Handler) simulate(w http.ResponseWriter, r *http.Request, body []byte) *apiError {
	var o whatif.SimulateOptions
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	o.Define(fs)
	o.MaxRuns, o.MaxMessages = whatif.WholeNumber(h.o.MaxRuns), h.o.MaxMessages
	compare := fs.String("compare", "", "")
	if e := setQuery(fs, r); e != nil {
		return e
	}
	limits := whatif.Limits{Jobs: h.o.MaxJobs, Clients: h.o.MaxClients, Runs: h.o.MaxContentionRuns, MaxRuns: h.o.MaxRuns}
	errs := o.Check(limits)
	strategies := []whatif.Named{{Name: "posted"}}
	if *compare != "" {
		named, err := compared(*compare, o.Scenario)
		errs = append(errs, err...)
		strategies = append(strategies, named...)
	}
	if errs != nil {
		return optionProblems(errs)
	}
	st, e := strategyBody(body)
	if e != nil {
		return e
	}
	strategies[0].Strategy = st
	if o.Scenario == "contention" && wantsSVG(r) {
		return &apiError{status: http.StatusNotAcceptable, code: "NOT_ACCEPTABLE", message: "only the outage, layers, collapse and tail scenarios draw a picture"}
	}
	ctx, cancel := h.work(r)
	defer cancel()
	run := simRun{h: h, w: w, r: r, o: &o, strategies: strategies}
	switch o.Scenario {
	case "layers":
		return run.layers(ctx)
	case "collapse":
		return run.collapse(ctx)
	case "tail":
		return run.tail(ctx)
	case "contention":
		res, err := o.Contention().Run(ctx, fleet.Contender{Name: "posted", Strategy: st})
		if e := h.failed(ctx, err); e != nil {
			return e
		}
		return writeJSON(w, report.ContentionJSON(res))
	}
	return run.outage(ctx)
}

// simRun is a /v1/simulate request being answered: the response, the
// request, its options, and the strategies, the posted one first, then
// the one compared with it, if any.
type simRun struct {
	h          *Handler
	w          http.ResponseWriter
	r          *http.Request
	o          *whatif.SimulateOptions
	strategies []whatif.Named
}

// replay replays the attempt log in the body under the strategy of the
// query's strategy (a descriptor's JSON), or under the documented ones,
// within the request's budget and the server's MaxRuns attempts each; it
// answers a JSON array, the log as recorded first, or their chart.
func (h *Handler) replay(w http.ResponseWriter, r *http.Request, body []byte) *apiError {
	var o whatif.ReplayOptions
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	o.Define(fs)
	o.MaxRuns = whatif.WholeNumber(h.o.MaxRuns)
	strategy := fs.String("strategy", "", "")
	if e := setQuery(fs, r); e != nil {
		return e
	}
	if errs := o.Check(h.o.MaxRuns); errs != nil {
		return optionProblems(errs)
	}
	candidates := whatif.DocumentedStrategies()
	if *strategy != "" {
		s, err := retrypolicy.Parse([]byte(*strategy))
		if err != nil {
			probs := strategyProblems(err)
			for i := range probs {
				probs[i].Field = "strategy"
			}
			return invalid("INVALID_PARAMETER", probs)
		}
		candidates = []whatif.Named{{Name: "posted", Strategy: s}}
	}
	log, err := fleet.ReadLog(bytes.NewReader(body))
	if err != nil {
		return invalid("INVALID_BODY", []fieldProblem{{"$", strings.TrimPrefix(err.Error(), "fleet: ReadLog: ")}})
	}
	ctx, cancel := h.work(r)
	defer cancel()
	rr, err := o.Run(ctx, log, candidates)
	if e := h.failed(ctx, err); e != nil {
		return e
	}
	if wantsSVG(r) {
		return writeSVG(w, report.Replay{Log: log, Tick: time.Duration(o.Tick), Replayed: rr}.Chart())
	}
	return writeJSON(w, jsonArray(len(rr.Results), func(i int) []byte { return report.ReplayJSON(rr.Names[i], rr.Results[i], i > 0) }))
}

// collapse runs the collapse's policies side by side, the posted strategy
// the strategy policy's, within the request's budget (ctx) and the
// server's MaxRuns calls, and answers a JSON array of them, or their
// chart.
func (s simRun) collapse(ctx context.Context) *apiError {
	c := s.o.CollapseOf(&s.strategies[0].Strategy)
	results, err := c.Run(ctx)
	if e := s.h.failed(ctx, err); e != nil {
		return e
	}
	if wantsSVG(s.r) {
		return writeSVG(s.w, report.CollapseChart(c, results))
	}
	return writeJSON(s.w, jsonArray(len(results), func(i int) []byte { return report.CollapseJSON(c, results[i]) }))
}

// tail runs the tail's policies side by side (the posted strategy plays
// no part: a hedged call sends at most its attempts), within the
// request's budget (ctx) and the server's MaxRuns calls each, and answers
// a JSON array of them, or their chart.
func (s simRun) tail(ctx context.Context) *apiError {
	c := s.o.TailOf()
	results, err := c.Run(ctx)
	if e := s.h.failed(ctx, err); e != nil {
		return e
	}
	c = c.Filled() // as Run ran it, for the settings shown
	if wantsSVG(s.r) {
		return writeSVG(s.w, report.TailChart(c, results))
	}
	return writeJSON(s.w, jsonArray(len(results), func(i int) []byte { return report.TailJSON(c, results[i]) }))
}

// layers runs the chain of four layers (a client, a gateway, a service, a
// database driver) with the posted strategy at every layer, and at the
// client alone (each with the budgets the options give, side by side),
// within the request's budget (ctx), and answers a JSON array of them, or
// their chart.
func (s simRun) layers(ctx context.Context) *apiError {
	st, none := s.strategies[0].Strategy, retrypolicy.Strategy{Kind: retrypolicy.None}
	l := s.o.Layers()
	chains := s.o.Budgeted([]fleet.Chain{whatif.ChainOf("every layer", []retrypolicy.Strategy{st, st, st, st}), whatif.ChainOf("client only", []retrypolicy.Strategy{st, none, none, none})})
	results := make([]fleet.LayersResult, len(chains))
	l.MaxCalls = s.h.o.MaxRuns
	for i, c := range chains {
		l.Layers = c.Layers
		res, err := l.Run(ctx)
		if e := s.h.failed(ctx, err); e != nil {
			return e
		}
		results[i] = res
	}
	if wantsSVG(s.r) {
		return writeSVG(s.w, report.LayersChart(l, chains, results))
	}
	return writeJSON(s.w, jsonArray(len(results), func(i int) []byte { return report.LayersJSON(chains[i].Name, results[i]) }))
}

// jsonArray joins n JSON values, item(0) to item(n-1), into an array.
func jsonArray(n int, item func(i int) []byte) []byte {
	b := []byte{'['}
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, item(i)...)
	}
	return append(b, ']')
}

// compared returns the example strategy named to compare with, or the
// problem with the name.
func compared(name, scenario string) ([]whatif.Named, []whatif.Option) {
	if scenario != "outage" {
		return nil, []whatif.Option{{Name: "compare", Rule: "only the outage scenario compares"}}
	}
	var names []string
	for _, n := range whatif.DocumentedStrategies() {
		if n.Name == name {
			return []whatif.Named{n}, nil
		}
		names = append(names, n.Name)
	}
	return nil, []whatif.Option{{Name: "compare", Rule: "must be one of " + strings.Join(names, ", ") + ", got " + echo.Quote(name)}}
}

// outage runs the outage under each strategy, within the request's
// budget (ctx), and answers the chart of all, or the JSON: one object for
// the posted strategy alone, or an array when another is compared with
// it.
func (s simRun) outage(ctx context.Context) *apiError {
	out, strategies := s.o.Outage(), s.strategies
	results := make([]fleet.OutageResult, len(strategies))
	for i, n := range strategies {
		res, err := out.Run(ctx, n.Strategy)
		if e := s.h.failed(ctx, err); e != nil {
			return e
		}
		results[i] = res
	}
	if wantsSVG(s.r) {
		strategies[0].Name = "this strategy"
		return writeSVG(s.w, report.LoadChart(out, strategies, results))
	}
	if len(results) == 1 {
		return writeJSON(s.w, report.OutageJSON("posted", results[0]))
	}
	return writeJSON(s.w, jsonArray(len(results), func(i int) []byte { return report.OutageJSON(strategies[i].Name, results[i]) }))
}

// failed answers the error of work done under ctx: ctx done before the
// work finished, or its strategy invalid; nil for none.
func (h *Handler) failed(ctx context.Context, err error) *apiError {
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return h.stopped(ctx.Err())
	}
	return invalid("INVALID_BODY", strategyProblems(err))
}
