package otelriver_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	_ "modernc.org/sqlite"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/otelretry"
	"github.com/retrypolicy/retrypolicy/otelretry/otelriver"
	"github.com/retrypolicy/retrypolicy/riverretry"
)

// flakyArgs is a job that fails its first Fail attempts.
type flakyArgs struct {
	Fail int `json:"fail"`
}

func (flakyArgs) Kind() string { return "flaky" }

type flakyWorker struct {
	river.WorkerDefaults[flakyArgs]
}

func (flakyWorker) Work(_ context.Context, job *river.Job[flakyArgs]) error {
	if job.Attempt <= job.Args.Fail {
		return errors.New("upstream unavailable")
	}
	return nil
}

// TestRiverJobsOnSQLite: River jobs on SQLite in memory under the policy
// with otelriver's hooks. A job retried once then done, one cancelled at
// once by the none strategy, one given up at its third failure, one whose
// record is hostile (repaired, then done), and an insert refused: every
// instrument counts them exactly, by kind.
func TestRiverJobsOnSQLite(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	in, err := otelretry.New(otelretry.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	require.NoError(t, err)
	ctx := context.Background()
	db, err := sql.Open("sqlite", ":memory:")
	require.NoError(t, err)
	defer db.Close()
	db.SetMaxOpenConns(1)
	driver := riversqlite.New(db)
	migrator, err := rivermigrate.New(driver, nil)
	require.NoError(t, err)
	_, err = migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	require.NoError(t, err)

	hooks, err := otelriver.Hooks(in)
	require.NoError(t, err)
	policy, err := riverretry.New(riverretry.Config{
		Kinds: map[string]retrypolicy.Strategy{"flaky": {Kind: retrypolicy.Bounded, MaxAttempts: 3,
			Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 10 * time.Millisecond}}},
		Hooks: hooks,
	})
	require.NoError(t, err)
	workers := river.NewWorkers()
	river.AddWorker(workers, &flakyWorker{})
	config := &river.Config{Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 4}}, Workers: workers,
		FetchPollInterval: 20 * time.Millisecond, FetchCooldown: 10 * time.Millisecond}
	require.NoError(t, policy.Install(config))
	client, err := river.NewClient(driver, config)
	require.NoError(t, err)
	ended, cancel := client.Subscribe(river.EventKindJobCompleted, river.EventKindJobCancelled)
	defer cancel()
	require.NoError(t, client.Start(ctx))
	defer client.Stop(ctx)

	jobs := []struct {
		args     flakyArgs
		metadata string
	}{
		{flakyArgs{Fail: 1}, ""},
		{flakyArgs{Fail: 1}, `{"retry_strategy":{"strategy":"none"}}`},
		{flakyArgs{Fail: 99}, ""},
		{flakyArgs{Fail: 1}, `{"retrypolicy":{"seen_attempt":"3","failures":"x"}}`},
	}
	for _, j := range jobs {
		_, err := client.Insert(ctx, j.args, &river.InsertOpts{Metadata: []byte(j.metadata)})
		require.NoError(t, err)
	}
	_, err = client.Insert(ctx, flakyArgs{}, &river.InsertOpts{Metadata: []byte(`{"retry_strategy":{"strategy":"bounded"}}`)})
	require.Error(t, err, "an invalid strategy is refused at insert")
	for range jobs {
		select {
		case <-ended:
		case <-time.After(time.Minute):
			t.Fatal("the jobs did not end within a minute")
		}
	}

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	byName := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			byName[m.Name] = m
		}
	}
	src, kind := otelretry.Source.String("river"), otelriver.JobKind.String("flaky")
	action := func(a string, more ...attribute.KeyValue) attribute.Distinct {
		return distinct(append([]attribute.KeyValue{src, kind, otelretry.Action.String(a)}, more...)...)
	}
	// Decisions: the retried job's one wait; the hostile one's wait; the
	// given-up job's two waits and its fatal third failure; the none job's
	// fatal first.
	assert.Equal(t, map[attribute.Distinct]int64{
		action("wait"): 4,
		action("fatal", otelretry.Reason.String("attempts_exhausted")): 1,
		action("fatal", otelretry.Reason.String("strategy_none")):      1,
	}, sums(t, byName["retrypolicy.decisions"], "{decision}"))
	assert.Equal(t, map[attribute.Distinct]int64{distinct(src, kind): 4}, sums(t, byName["retrypolicy.retries"], "{retry}"))
	assert.Equal(t, map[attribute.Distinct]int64{
		distinct(src, kind, otelretry.Reason.String("attempts_exhausted")): 1,
		distinct(src, kind, otelretry.Reason.String("strategy_none")):      1,
	}, sums(t, byName["retrypolicy.give_ups"], "{give_up}"))
	assert.Equal(t, map[attribute.Distinct]int64{distinct(kind): 1}, sums(t, byName["retrypolicy.river.records.repaired"], "{record}"))
	assert.Equal(t, map[attribute.Distinct]int64{distinct(kind): 1}, sums(t, byName["retrypolicy.river.inserts.refused"], "{job}"))
}

func distinct(kv ...attribute.KeyValue) attribute.Distinct {
	s := attribute.NewSet(kv...)
	return s.Equivalent()
}

// sums returns a counter's values by attribute set, checking its kind and
// unit.
func sums(t *testing.T, m metricdata.Metrics, unit string) map[attribute.Distinct]int64 {
	t.Helper()
	assert.Equal(t, unit, m.Unit, m.Name)
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is a counter, not %T", m.Name, m.Data)
	assert.True(t, sum.IsMonotonic)
	out := map[attribute.Distinct]int64{}
	for _, dp := range sum.DataPoints {
		out[dp.Attributes.Equivalent()] = dp.Value
	}
	return out
}
