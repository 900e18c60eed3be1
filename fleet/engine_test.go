package fleet

import (
	"context"
	"math"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/retrypolicy/retrypolicy"
)

// drain hands out every event of e and returns their times.
func drain(e *engine[int32]) []time.Duration {
	var out []time.Duration
	for {
		en, ok := e.nextBy(context.Background(), maxDuration)
		if !ok {
			return out
		}
		out = append(out, en.at)
	}
}

// TestEngineOrdersByTimeThenBySchedule: with fifoTies, events leave in
// time order, ties in the order scheduled, the heap's and the queues'
// merged; the first-of-its-instant event goes before the others tied.
func TestEngineOrdersByTimeThenBySchedule(t *testing.T) {
	e := newEngine[int32](100, BoundEvents)
	e.fifoTies = true
	q := e.newQueue()
	e.schedule(3, 1)
	e.queue(q, 2, 2)
	e.schedule(2, 3)
	e.queue(q, 3, 4)
	e.scheduleFirst(3, 5)
	e.schedule(1, 6)
	var got []int32
	for {
		en, ok := e.nextBy(context.Background(), maxDuration)
		if !ok {
			break
		}
		got = append(got, en.ev)
	}
	assert.Equal(t, []int32{6, 2, 3, 5, 1, 4}, got)
	assert.Equal(t, 6, e.handled)
	assert.Equal(t, 0, e.waiting())
	assert.Empty(t, e.stop)
}

// TestEngineBudget: the engine hands out exactly its budget of events,
// then stops the run at the bound it was given; an event past the end is
// not a truncation.
func TestEngineBudget(t *testing.T) {
	e := newEngine[int32](3, BoundMaxRuns)
	for i := range 5 {
		e.schedule(time.Duration(i), 0)
	}
	assert.Len(t, drain(e), 3)
	assert.Equal(t, BoundMaxRuns, e.stop)
	assert.Equal(t, 2, e.waiting())

	e = newEngine[int32](3, BoundMaxRuns)
	e.schedule(1, 0)
	e.schedule(10, 0)
	_, ok := e.nextBy(context.Background(), 5)
	require.True(t, ok)
	_, ok = e.nextBy(context.Background(), 5)
	assert.False(t, ok)
	assert.Empty(t, e.stop, "an event past the end is the run's end, not a bound")
}

// TestEnginePendingCap: an event beyond maxPending waiting at once stops
// the run, and is dropped.
func TestEnginePendingCap(t *testing.T) {
	e := newEngine[int32](100, BoundEvents)
	e.maxPending = 2
	e.schedule(1, 0)
	e.schedule(2, 0)
	e.schedule(3, 0)
	assert.Equal(t, 2, e.waiting())
	assert.Equal(t, 2, e.peakPending)
	assert.Equal(t, BoundPendingEvents, e.stop)
	assert.Empty(t, drain(e), "a stopped run hands out nothing more")
}

// TestEngineContext: a done context stops the run at the next look, with
// an error that wraps the context's.
func TestEngineContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e := newEngine[int32](100, BoundEvents)
	e.schedule(1, 0)
	_, ok := e.nextBy(ctx, maxDuration)
	assert.False(t, ok)
	assert.Equal(t, BoundContext, e.stop)
	assert.ErrorIs(t, e.err, context.Canceled)
}

// TestEngineDropsCancelledEntries: once the cancelled entries of a queue
// are at least 1,024 and half of it, they leave it, and the waiting count
// with them; the live ones keep their order.
func TestEngineDropsCancelledEntries(t *testing.T) {
	e := newEngine[int32](1_000_000, BoundEvents)
	dead := map[int32]bool{}
	e.alive = func(v int32) bool { return !dead[v] }
	q := e.newQueue()
	for i := range int32(3000) {
		e.queue(q, time.Duration(i), i)
	}
	for i := range int32(2999) {
		if i%3 != 0 {
			dead[i] = true
			e.cancel(q)
		}
	}
	// 1,999 cancelled: dropped at the 1,500th (half of 3,000), the
	// remaining 499 are still waiting.
	assert.Equal(t, 3000-1500, e.waiting())
	got := drain(e)
	assert.Len(t, got, 1500)
	live := 0
	for _, at := range got {
		if !dead[int32(at)] {
			live++
		}
	}
	assert.Equal(t, 1001, live)
}

// TestEngineHeldFailures: the engine records and decides each failure,
// counts the failures the run's Histories hold (a History's window lets
// old ones go), stops the run at its cap, and forgets a dropped History's.
func TestEngineHeldFailures(t *testing.T) {
	p, err := retrypolicy.Compile(retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 100, Window: 10 * time.Second})
	require.NoError(t, err)
	e := newEngine[int32](100, BoundEvents)
	e.maxHeld = 5
	a, b := &history{History: retrypolicy.NewHistory(p)}, &history{History: retrypolicy.NewHistory(p)}
	for i := range 3 {
		d, ok := e.decide(a, simStart.Add(time.Duration(i)*time.Second), 0, 1)
		require.True(t, ok)
		assert.Equal(t, i+1, d.InWindow)
	}
	assert.Equal(t, 3, e.held)
	e.forget(a)
	assert.Equal(t, 0, e.held)
	_, ok := e.decide(b, simStart, 0, 1)
	require.True(t, ok)
	_, ok = e.decide(b, simStart.Add(time.Minute), 0, 1)
	require.True(t, ok)
	assert.Equal(t, 1, e.held, "the failure a minute back has left the 10 s window")
	for i := range 4 {
		_, ok = e.decide(b, simStart.Add(time.Minute+time.Duration(i+1)*time.Second), 0, 1)
		require.True(t, ok)
	}
	assert.Equal(t, BoundHeldFailures, e.stop)
	assert.Equal(t, 5, e.peakHeld)
	_, ok = e.decide(b, time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), 0, 1)
	assert.False(t, ok, "an instant no History holds")
}

// TestSaturatingAddSaturates: a sum past the longest Duration is it.
func TestSaturatingAddSaturates(t *testing.T) {
	assert.Equal(t, maxDuration, saturatingAdd(time.Hour, maxDuration))
}

// unlessStoppedEvery retries for ever, d apart.
func unlessStoppedEvery(d time.Duration) retrypolicy.Strategy {
	return retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: d}}
}

// TestLayersLatencyOverTimeoutStopsAtItsEvents: a bottom layer whose hop
// takes an hour and whose attempts time out after 1 ms makes attempts
// that reach no call for an hour; they are events all the same, and the
// run stops at EventsPerCall × MaxCalls of them (it had made 25 million
// attempts at MaxCalls 1,000).
func TestLayersLatencyOverTimeoutStopsAtItsEvents(t *testing.T) {
	l := Layers{Layers: []Layer{{Name: "only", Strategy: unlessStoppedEvery(time.Millisecond), Latency: time.Hour, Timeout: time.Millisecond}}, MaxCalls: 1000}
	r, err := newLayersRun(&l)
	require.NoError(t, err)
	require.NoError(t, r.run(context.Background()))
	res := r.result()
	assert.True(t, res.Truncated)
	assert.Equal(t, BoundEvents, res.TruncatedBy)
	assert.Equal(t, EventsPerCall*1000, r.eng.handled)
	assert.LessOrEqual(t, res.Attempts[0], EventsPerCall*1000)
	assert.LessOrEqual(t, res.Decisions, EventsPerCall*1000)
}

// TestLayersTimeoutsLeaveWithTheirCalls: at a million requests a second
// with 30 s timeouts and a bottom that answers in 1 ms, a timeout leaves
// the queue when its attempt ends, so what waits is what is in flight (a
// few thousand), not rate × timeout (a million), and the heap the run
// holds stays within the package doc's function of what it held.
func TestLayersTimeoutsLeaveWithTheirCalls(t *testing.T) {
	l := Layers{Layers: []Layer{{Name: "only", Strategy: retrypolicy.Strategy{Kind: retrypolicy.None}, Latency: time.Millisecond, Timeout: 30 * time.Second}},
		Rate: 1e6, Duration: time.Second, Horizon: time.Minute}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r, err := newLayersRun(&l)
	require.NoError(t, err)
	require.NoError(t, r.run(context.Background()))
	runtime.GC()
	runtime.ReadMemStats(&after)
	res := r.result()
	assert.False(t, res.Truncated)
	assert.Equal(t, 1_000_000, res.Succeeded)
	assert.Less(t, r.eng.peakPending, 20_000)

	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	assert.Less(t, held, layersMemoryBound(r), "heap held %d bytes", held)
	runtime.KeepAlive(r)
}

// layersMemoryBound is the package doc's bound on what a Layers run
// holds, from the most it held at once: twice (slices grow by doubling)
// 32 bytes an event waiting and 8 a failure held, and a call's slot and
// History header for each call in flight, beside the latencies kept, the
// per-second counts and a MiB of fixed cost.
func layersMemoryBound(r *layersRun) int64 {
	call := int64(unsafe.Sizeof(layerCall{})) + 64
	return 2*(32*int64(r.eng.peakPending)+8*int64(r.eng.peakHeld)+call*int64(len(r.calls))+8*int64(len(r.latencies.kept))+
		16*int64(len(r.r.Load)+len(r.r.Served))) + 1<<20
}

// TestLayersTinyRate: a rate of 1e-12 a second is one request at t = 0
// (evenly spaced) or none (Poisson, the first gap is ages), never an
// overflowed gap (it had been 500,000 requests, and a panic with Poisson).
func TestLayersTinyRate(t *testing.T) {
	for _, poisson := range []bool{false, true} {
		r, err := Layers{Rate: 1e-12, Poisson: poisson, Seed: 7}.Run(context.Background())
		require.NoError(t, err)
		assert.LessOrEqual(t, r.Requests, 1, "poisson %v", poisson)
		assert.False(t, r.Truncated)
	}
}

// TestLayersBreakerOpenForEver: a breaker open for the longest Duration
// stays open to the end of the run (it had overflowed and acted as no
// breaker): after the first failure, no attempt reaches the bottom.
func TestLayersBreakerOpenForEver(t *testing.T) {
	l := alwaysDown(chain(3), 20)
	l.Layers[0].BreakerFailures, l.Layers[0].BreakerOpen = 1, math.MaxInt64
	r, err := l.Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, r.BottomCalls)
	assert.Equal(t, 20, r.Failed)
}

// TestLayersHeldFailuresBounded: calls that fail for ever each keep their
// window of failures; together they stop the run at the engine's cap.
func TestLayersHeldFailuresBounded(t *testing.T) {
	l := alwaysDown([]Layer{{Name: "only", Strategy: unlessStoppedEvery(time.Millisecond), Latency: time.Millisecond}}, 100)
	r, err := newLayersRun(&l)
	require.NoError(t, err)
	r.eng.maxHeld = 5000
	require.NoError(t, r.run(context.Background()))
	res := r.result()
	assert.Equal(t, BoundHeldFailures, res.TruncatedBy)
	assert.LessOrEqual(t, r.eng.peakHeld, 5000)
}

// TestLayerOptionsChecked: a layer's times must be within a day and its
// counts not negative: each is an error naming the layer and the field.
func TestLayerOptionsChecked(t *testing.T) {
	for _, c := range []struct {
		layer Layer
		want  string
	}{
		{Layer{Latency: -1}, "Latency"},
		{Layer{Latency: 25 * time.Hour}, "Latency"},
		{Layer{Timeout: math.MaxInt64}, "Timeout"},
		{Layer{BreakerFailures: -1}, "BreakerFailures"},
		{Layer{BreakerOpen: -time.Second}, "BreakerOpen"},
	} {
		c.layer.Name = "x"
		_, err := Layers{Layers: []Layer{c.layer}}.Run(context.Background())
		require.Error(t, err, c.want)
		assert.Contains(t, err.Error(), "layer 1 (x)")
		assert.Contains(t, err.Error(), c.want)
	}
	_, err := Outage{Tick: 25 * time.Hour}.Run(context.Background(), retrypolicy.Strategy{})
	assert.ErrorContains(t, err, "Outage.Tick")
}

// Extremes the property draws from, beside ordinary values.
var (
	extremeDurations = []time.Duration{0, 1, time.Millisecond, time.Second, time.Minute, time.Hour, 24 * time.Hour,
		30 * 24 * time.Hour, math.MaxInt64, -1, math.MinInt64}
	extremeInts   = []int{0, 1, 2, 5, 1000, math.MaxInt, -1, math.MinInt}
	extremeFloats = []float64{0, 1e-12, 1e-3, 0.1, 0.5, 1, 100, 1e6, 1e12, math.NaN(), math.Inf(1), -1}
)

// drawStrategy draws a strategy, valid or not, its delays from 1 ns to
// past the ceiling.
func drawStrategy(t *rapid.T, label string) retrypolicy.Strategy {
	base := rapid.SampledFrom([]time.Duration{time.Nanosecond, 10 * time.Microsecond, time.Millisecond, 5 * time.Millisecond, time.Second, time.Hour, math.MaxInt64, 0}).Draw(t, label+"_base")
	b := retrypolicy.Backoff{Kind: rapid.SampledFrom([]retrypolicy.BackoffKind{retrypolicy.Fixed, retrypolicy.Exponential, retrypolicy.ExponentialWithJitter}).Draw(t, label+"_backoff"),
		BaseDelay: base}
	if b.Kind != retrypolicy.Fixed {
		b.Multiplier = rapid.SampledFrom([]float64{0.5, 1, 2, 1e6}).Draw(t, label+"_multiplier")
	}
	switch rapid.IntRange(0, 2).Draw(t, label+"_kind") {
	case 0:
		return retrypolicy.Strategy{Kind: retrypolicy.None}
	case 1:
		return retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: rapid.IntRange(1, 50).Draw(t, label+"_attempts"),
			Window: rapid.SampledFrom([]time.Duration{time.Second, time.Hour, 7 * 24 * time.Hour}).Draw(t, label+"_window"), Backoff: b}
	}
	return retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped, Backoff: b}
}

// smallCaps lowers an engine's caps so that the property reaches them, no
// lower than what already waits.
func smallCaps[E any](t *rapid.T, e *engine[E]) {
	e.maxPending = rapid.IntRange(max(1, e.waiting()), 4096).Draw(t, "max_pending")
	e.maxHeld = rapid.IntRange(1, 4096).Draw(t, "max_held")
}

// withinBounds checks what every run must: it handled at most its budget,
// never held more than its caps, and is truncated exactly when it names a
// bound.
func withinBounds[E any](t *rapid.T, e *engine[E], truncated bool, by Bound) {
	if e.handled > e.budget || e.peakPending > e.maxPending || e.peakHeld > e.maxHeld {
		t.Fatalf("handled %d of %d, waited %d of %d, held %d of %d", e.handled, e.budget, e.peakPending, e.maxPending, e.peakHeld, e.maxHeld)
	}
	if truncated != (by != "") || by != e.stop {
		t.Fatalf("truncated %v by %q, the engine stopped at %q", truncated, by, e.stop)
	}
}

// TestEverySimulationEndsWithinItsBounds: whatever the options of an
// Outage, a Contention or a Layers run (zero, 1 ns, the longest Duration,
// 1e-12, 1e12, NaN, negative), the run is refused with an error or ends,
// having handled at most its budget of events and held at most its caps
// of waiting events and failures.
func TestEverySimulationEndsWithinItsBounds(t *testing.T) {
	rapid.Check(t, simulationWithinBounds)
}

// FuzzFleetOptions is the property above as a fuzz target.
func FuzzFleetOptions(f *testing.F) {
	f.Fuzz(rapid.MakeFuzz(simulationWithinBounds))
}

// simulationWithinBounds runs one simulation of drawn options, and fails
// unless it was refused or ended within its bounds.
func simulationWithinBounds(t *rapid.T) {
	ctx := context.Background()
	switch rapid.IntRange(0, 2).Draw(t, "simulation") {
	case 0:
		o := Outage{Jobs: rapid.SampledFrom([]int{0, 1, 2, 50, 1_000_001, -1}).Draw(t, "jobs"),
			Down: rapid.SampledFrom(extremeDurations).Draw(t, "down"), FailAfter: rapid.SampledFrom(extremeDurations).Draw(t, "fail_after"),
			Spread: rapid.SampledFrom(extremeDurations).Draw(t, "spread"), Capacity: rapid.SampledFrom(extremeInts).Draw(t, "capacity"),
			Tick: rapid.SampledFrom(extremeDurations).Draw(t, "tick"), Horizon: rapid.SampledFrom(extremeDurations).Draw(t, "horizon"),
			Seed: rapid.Uint64().Draw(t, "seed"), MaxRuns: rapid.SampledFrom([]int{1, 100, 5000, -1, 2_000_000_000}).Draw(t, "max_runs")}
		o = o.withDefaults()
		p, err := retrypolicy.Compile(drawStrategy(t, "s"))
		if o.check() != nil || err != nil {
			return
		}
		f := newFleet(o, p)
		smallCaps(t, f.eng)
		_ = f.run(ctx)
		r := f.result()
		withinBounds(t, f.eng, r.Truncated, r.TruncatedBy)
	case 1:
		c := Contention{Clients: rapid.IntRange(1, 50).Draw(t, "clients"), Runs: rapid.IntRange(1, 5).Draw(t, "runs"),
			Seed: rapid.Uint64().Draw(t, "seed"), MaxMessages: rapid.IntRange(1, 5000).Draw(t, "max_messages")}
		who := Contender{Strategy: drawStrategy(t, "s"), NoWait: rapid.Bool().Draw(t, "no_wait"), FullJitter: rapid.Bool().Draw(t, "full_jitter")}
		r, err := c.Run(ctx, who)
		if err != nil {
			return
		}
		if r.Truncated != (r.TruncatedBy != "") || r.Runs < 1 || r.Runs > c.Runs {
			t.Fatalf("truncated %v by %q over %d runs", r.Truncated, r.TruncatedBy, r.Runs)
		}
	case 2:
		l := drawLayers(t)
		r, err := newLayersRun(&l)
		if err != nil {
			return
		}
		smallCaps(t, r.eng)
		_ = r.run(ctx)
		res := r.result()
		withinBounds(t, r.eng, res.Truncated, res.TruncatedBy)
		attempts := 0
		for _, n := range res.Attempts {
			attempts += n
		}
		if attempts > r.eng.handled || res.Decisions > r.eng.handled || len(r.calls) > maxLiveCalls {
			t.Fatalf("%d attempts and %d decisions from %d events, %d calls", attempts, res.Decisions, r.eng.handled, len(r.calls))
		}
	}
}

// TestContentionRoundsWithinBounds: each of a Contention's runs handles
// at most the messages left and holds at most its caps.
func TestContentionRoundsWithinBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := Contention{Clients: rapid.IntRange(1, 50).Draw(t, "clients"), Seed: rapid.Uint64().Draw(t, "seed")}.withDefaults()
		who := Contender{Strategy: drawStrategy(t, "s"), NoWait: rapid.Bool().Draw(t, "no_wait")}
		var p *retrypolicy.Policy
		if !who.NoWait {
			var err error
			if p, err = retrypolicy.Compile(who.Strategy); err != nil {
				return
			}
		}
		most := rapid.IntRange(1, 5000).Draw(t, "most")
		o, err := c.once(context.Background(), p, who, 0, most)
		if err != nil || o.messages > most || o.peakPending > c.Clients || o.peakHeld > MaxHeldFailures {
			t.Fatalf("%v: %d messages of %d, %d waiting for %d clients", err, o.messages, most, o.peakPending, c.Clients)
		}
	})
}

// drawLayers draws a Layers run, valid or not, at small bounds.
func drawLayers(t *rapid.T) Layers {
	n := rapid.IntRange(0, 4).Draw(t, "layers")
	layers := make([]Layer, n)
	for i := range layers {
		layers[i] = Layer{Name: "l", Strategy: drawStrategy(t, "s"),
			BudgetSettings:  BudgetSettings{BudgetRatio: rapid.SampledFrom(extremeFloats).Draw(t, "budget_ratio"), BudgetBurst: rapid.SampledFrom(extremeInts).Draw(t, "budget_burst")},
			OnlyRetryable:   rapid.Bool().Draw(t, "only_retryable"),
			BreakerFailures: rapid.SampledFrom(extremeInts).Draw(t, "breaker_failures"), BreakerOpen: rapid.SampledFrom(extremeDurations).Draw(t, "breaker_open"),
			Latency: rapid.SampledFrom(extremeDurations).Draw(t, "latency"), Timeout: rapid.SampledFrom(extremeDurations).Draw(t, "timeout")}
	}
	if n == 0 && rapid.Bool().Draw(t, "nil_layers") {
		layers = nil
	}
	return Layers{Layers: layers, Rate: rapid.SampledFrom(extremeFloats).Draw(t, "rate"), Poisson: rapid.Bool().Draw(t, "poisson"),
		Duration: rapid.SampledFrom(extremeDurations).Draw(t, "duration"), Down: rapid.SampledFrom(extremeDurations).Draw(t, "down"),
		Capacity: rapid.SampledFrom(extremeInts).Draw(t, "capacity"), FailRate: rapid.SampledFrom(extremeFloats).Draw(t, "fail_rate"),
		Horizon: rapid.SampledFrom(extremeDurations).Draw(t, "horizon"), Seed: rapid.Uint64().Draw(t, "seed"),
		MaxCalls: rapid.IntRange(1, 5000).Draw(t, "max_calls")}
}
