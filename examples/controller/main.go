// Command controller simulates a scheduler's controller driving a few hundred jobs.
//
// It drives them through their lifecycle with retrypolicy, on a simulated
// clock, twice: once waking every minute (as a controller that polls does), once sleeping
// exactly until the next retry is due. Each job keeps its failures in a
// retrypolicy.History, and the controller moves a job in ERROR with
// lifecycle.Step. It prints the first events of a few jobs and a summary per
// mode: retries made, jobs fatal, and how late retries started.
//
//	go run ./examples/controller            # 300 jobs: a few jobs' events and the summaries
//	go run ./examples/controller -all       # every event of every job
//	go run ./examples/controller -jobs 40 -hours 2
package main

import (
	"container/heap"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/lifecycle"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jobs := fs.Int("jobs", 300, "how many jobs to simulate")
	all := fs.Bool("all", false, "print every event of every job, not only the first of a few")
	hours := fs.Int("hours", 12, "how long to simulate, in hours")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *jobs < 1 || *hours < 1 {
		fmt.Fprintln(stderr, "controller: -jobs and -hours must be at least 1")
		return 2
	}
	for _, mode := range []mode{everyMinute, untilDue} {
		sim, err := simulate(*jobs, time.Duration(*hours)*time.Hour, mode)
		if err != nil {
			fmt.Fprintln(stderr, "controller:", err)
			return 1
		}
		if *all {
			sim.printLogs(stdout, len(sim.jobs), -1)
		} else if mode == everyMinute {
			sim.printLogs(stdout, 5, 6) // the first jobs, their first events
		}
		sim.printSummary(stdout)
	}
	return 0
}

// mode is how the controller wakes up.
type mode int

const (
	everyMinute mode = iota // every minute on the minute
	untilDue                // exactly when the next retry is due
)

func (m mode) String() string {
	if m == everyMinute {
		return "one-minute tick"
	}
	return "sleep until due"
}

// behaviour is how a simulated job's runs end.
type behaviour int

const (
	crashesAtStart behaviour = iota // fails a second into every run
	longRunner                      // runs for hours, fails, and eventually completes
	permanent                       // hits an error a retry cannot fix
	flaky                           // fails now and then, completes eventually
	onTrigger                       // runs every 20 minutes, fails often
)

var behaviourNames = [...]string{"crashes at start", "fails after long runs", "permanent error", "flaky", "runs on a trigger"}

type job struct {
	id        string
	kind      behaviour
	strategy  retrypolicy.Strategy
	status    lifecycle.Status
	history   *retrypolicy.History
	started   time.Time // when the current run started
	due       time.Time // while in ERROR
	runs      int
	log       []string
	rng       uint64
	retries   int
	lateness  time.Duration
	nextEvent *event // the pending end of run or trigger, if any
}

// rand is xorshift64: deterministic per job, no global source.
func (j *job) rand(n uint64) uint64 {
	j.rng ^= j.rng << 13
	j.rng ^= j.rng >> 7
	j.rng ^= j.rng << 17
	return j.rng % n
}

type eventKind int

const (
	runEnds eventKind = iota
	triggerFires
	controllerWakes
)

type event struct {
	at    time.Time
	kind  eventKind
	job   *job
	seq   int // ties break in the order events were planned
	index int
	dead  bool
}

type queue []*event

func (q queue) Len() int { return len(q) }
func (q queue) Less(a, b int) bool {
	if !q[a].at.Equal(q[b].at) {
		return q[a].at.Before(q[b].at)
	}
	return q[a].seq < q[b].seq
}
func (q queue) Swap(a, b int) { q[a], q[b] = q[b], q[a]; q[a].index = a; q[b].index = b }
func (q *queue) Push(x any)   { e := x.(*event); e.index = len(*q); *q = append(*q, e) }
func (q *queue) Pop() any     { old := *q; e := old[len(old)-1]; *q = old[:len(old)-1]; return e }
func (q queue) peek() *event  { return q[0] }
func (q *queue) next() *event { return heap.Pop(q).(*event) }
func (q *queue) add(e *event) { heap.Push(q, e) }

type simulation struct {
	mode    mode
	start   time.Time
	now     time.Time
	jobs    []*job
	q       queue
	seq     int
	wake    *event // the controller's next wake-up, in untilDue mode
	retries int
	late    time.Duration
}

var strategies = []retrypolicy.Strategy{
	retrypolicy.Default(),
	{Kind: retrypolicy.Bounded, MaxAttempts: 5, Window: time.Hour, Backoff: retrypolicy.Default().Backoff},
	{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.ExponentialWithJitter, BaseDelay: 2 * time.Second, Multiplier: 2, MaxDelay: 300 * time.Second}},
	{Kind: retrypolicy.Bounded, MaxAttempts: 8, Window: 6 * time.Hour, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 90 * time.Second}},
}

func simulate(count int, span time.Duration, m mode) (*simulation, error) {
	sim := &simulation{mode: m, start: time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC)}
	sim.now = sim.start
	// One compiled policy per strategy, shared by every job that uses it.
	policies := make(map[retrypolicy.Strategy]*retrypolicy.Policy)
	policyOf := func(s retrypolicy.Strategy) (*retrypolicy.Policy, error) {
		if p, ok := policies[s]; ok {
			return p, nil
		}
		p, err := retrypolicy.Compile(s)
		policies[s] = p
		return p, err
	}
	for i := range count {
		kind := behaviour(i % 4)
		if i == count/2 {
			kind = onTrigger // one job runs on a trigger
		}
		j := &job{
			id:       fmt.Sprintf("job-%03d", i),
			kind:     kind,
			strategy: strategies[(i/4)%len(strategies)],
			rng:      uint64(i)*0x9e3779b97f4a7c15 + 1,
		}
		if kind == onTrigger {
			j.strategy = strategies[1]
		}
		p, err := policyOf(j.strategy)
		if err != nil {
			return nil, err
		}
		j.history = retrypolicy.NewHistory(p)
		if err := sim.move(j, lifecycle.EventCreated); err != nil {
			return nil, err
		}
		sim.jobs = append(sim.jobs, j)
		if err := sim.startRun(j); err != nil {
			return nil, err
		}
		if kind == onTrigger {
			sim.plan(sim.now.Add(20*time.Minute), triggerFires, j)
		}
	}
	if m == everyMinute {
		sim.plan(sim.start.Add(time.Minute), controllerWakes, nil)
	}
	end := sim.start.Add(span)
	for sim.q.Len() > 0 && !sim.q.peek().at.After(end) {
		e := sim.q.next()
		if e.dead {
			continue
		}
		sim.now = e.at
		if err := sim.handle(e); err != nil {
			return nil, err
		}
	}
	return sim, nil
}

func (s *simulation) plan(at time.Time, kind eventKind, j *job) *event {
	s.seq++
	e := &event{at: at, kind: kind, job: j, seq: s.seq}
	s.q.add(e)
	return e
}

// move applies an event to a job through the lifecycle table, and logs it.
func (s *simulation) move(j *job, e lifecycle.Event) error {
	next, err := lifecycle.Next(j.status, e, j.kind == onTrigger)
	if err != nil {
		return fmt.Errorf("%s: %w", j.id, err)
	}
	s.moved(j, next, e)
	return nil
}

// moved logs a job's move to next on e.
func (s *simulation) moved(j *job, next lifecycle.Status, e lifecycle.Event) {
	j.log = append(j.log, fmt.Sprintf("%s  %-14s -> %-14s %s", s.now.Format("15:04:05.000"), j.status, next, e))
	j.status = next
}

// startRun has the worker start a scheduled job and plans how the run ends.
func (s *simulation) startRun(j *job) error {
	if err := s.move(j, lifecycle.EventWorkerStarted); err != nil {
		return err
	}
	j.started = s.now
	j.runs++
	var length time.Duration
	switch j.kind {
	case crashesAtStart:
		length = time.Duration(200+j.rand(1500)) * time.Millisecond
	case longRunner:
		length = time.Duration(30+j.rand(150)) * time.Minute
	case permanent:
		length = time.Duration(1+j.rand(20)) * time.Minute
	case flaky:
		length = time.Duration(1+j.rand(600)) * time.Second
	case onTrigger:
		length = time.Duration(1+j.rand(40)) * time.Second
	}
	j.nextEvent = s.plan(s.now.Add(length), runEnds, j)
	return nil
}

func (s *simulation) handle(e *event) error {
	switch e.kind {
	case controllerWakes:
		return s.controllerPass()
	case triggerFires:
		return s.fireTrigger(e.job)
	}
	j := e.job
	j.nextEvent = nil
	switch {
	case j.kind == permanent && j.runs >= 3:
		return s.move(j, lifecycle.EventFailedFatally)
	case j.kind == longRunner && j.runs >= 6,
		j.kind == flaky && j.rand(4) == 0,
		j.kind == onTrigger && j.rand(3) == 0:
		return s.move(j, lifecycle.EventCompleted)
	}
	if err := j.history.Record(s.now, s.now.Sub(j.started)); err != nil {
		return err
	}
	if err := s.move(j, lifecycle.EventFailedRetryably); err != nil {
		return err
	}
	return s.decide(j)
}

// decide records the job's due time and, when the controller sleeps until
// the next due time, wakes it then.
func (s *simulation) decide(j *job) error {
	d, err := s.decision(j)
	if err != nil {
		return err
	}
	j.due = d.Due
	if d.Action == retrypolicy.Fatal {
		j.due = s.now
	}
	if s.mode == untilDue && (s.wake == nil || j.due.Before(s.wake.at)) {
		if s.wake != nil {
			s.wake.dead = true
		}
		s.wake = s.plan(j.due, controllerWakes, nil)
	}
	return nil
}

// decision is the retry decision on a job's newest failure, now.
func (s *simulation) decision(j *job) (retrypolicy.Decision, error) {
	return j.history.Decide(retrypolicy.SeedFromString(j.id), s.now)
}

// controllerPass is one controller wake-up: every job in ERROR is stepped.
func (s *simulation) controllerPass() error {
	s.wake = nil
	var earliest time.Time
	for _, j := range s.jobs {
		if j.status != lifecycle.StatusError {
			continue
		}
		d, err := s.decision(j)
		if err != nil {
			return err
		}
		next, e, err := lifecycle.Step(j.status, d)
		if err != nil {
			return err
		}
		switch e {
		case lifecycle.EventRetriesExhausted:
			s.moved(j, next, e)
		case lifecycle.EventRetryDue:
			s.moved(j, next, e)
			j.retries++
			j.lateness += s.now.Sub(d.Due)
			s.retries++
			s.late += s.now.Sub(d.Due)
			if err := s.startRun(j); err != nil {
				return err
			}
		default: // still waiting
			if earliest.IsZero() || d.Due.Before(earliest) {
				earliest = d.Due
			}
		}
	}
	switch {
	case s.mode == everyMinute:
		s.plan(s.now.Add(time.Minute), controllerWakes, nil)
	case !earliest.IsZero():
		s.wake = s.plan(earliest, controllerWakes, nil)
	}
	return nil
}

// fireTrigger runs a trigger job's next run: a job waiting for a retry gives
// it up (CANCELLED) and is scheduled at once; its failures still count.
func (s *simulation) fireTrigger(j *job) error {
	s.plan(s.now.Add(20*time.Minute), triggerFires, j)
	switch j.status {
	case lifecycle.StatusError:
		if err := s.move(j, lifecycle.EventTriggerFired); err != nil {
			return err
		}
	case lifecycle.StatusCompleted, lifecycle.StatusFatal:
	default:
		return nil // it is running or scheduled: the trigger waits for the next turn
	}
	if err := s.move(j, lifecycle.EventTriggerFired); err != nil {
		return err
	}
	return s.startRun(j)
}

// printLogs prints the event logs of the first jobs, at most lines events
// of each (all for lines < 0).
func (s *simulation) printLogs(w io.Writer, jobs, lines int) {
	fmt.Fprintf(w, "== event log (%s)\n", s.mode)
	for _, j := range s.jobs[:min(jobs, len(s.jobs))] {
		fmt.Fprintf(w, "%s (%s, %s)\n", j.id, behaviourNames[j.kind], describe(j.strategy))
		shown := j.log
		if lines >= 0 && len(shown) > lines {
			shown = shown[:lines]
		}
		for _, line := range shown {
			fmt.Fprintf(w, "  %s\n", line)
		}
		if more := len(j.log) - len(shown); more > 0 {
			fmt.Fprintf(w, "  … %d more events (-all prints them)\n", more)
		}
	}
}

func describe(s retrypolicy.Strategy) string {
	b, _ := s.MarshalJSON()
	return string(b)
}

func (s *simulation) printSummary(w io.Writer) {
	byStatus := map[lifecycle.Status]int{}
	for _, j := range s.jobs {
		byStatus[j.status]++
	}
	statuses := make([]string, 0, len(byStatus))
	for st, n := range byStatus {
		statuses = append(statuses, fmt.Sprintf("%s %d", st, n))
	}
	sort.Strings(statuses)
	mean := time.Duration(0)
	if s.retries > 0 {
		mean = s.late / time.Duration(s.retries)
	}
	fmt.Fprintf(w, "== summary (%s): %d jobs over %v\n", s.mode, len(s.jobs), s.now.Sub(s.start).Round(time.Minute))
	fmt.Fprintf(w, "   retries made: %d, jobs fatal: %d, mean lateness of retries: %v\n", s.retries, byStatus[lifecycle.StatusFatal], mean.Round(time.Millisecond))
	fmt.Fprintf(w, "   final statuses: %s\n", strings.Join(statuses, ", "))
}
