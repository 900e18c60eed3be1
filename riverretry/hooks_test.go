package riverretry

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHooksAreToldWhatThePolicyDoes: Decided hears each decision with the
// job's kind, Repaired each record not trusted, Refused each insert
// refused; nil hooks are not called.
func TestHooksAreToldWhatThePolicyDoes(t *testing.T) {
	var decided, repaired, refused []string
	p, err := New(Config{Hooks: Hooks{
		Decided: func(_ context.Context, kind string, d retrypolicy.Decision, gaveUp retry.Reason) {
			decided = append(decided, kind+" "+d.Action.String()+" "+gaveUp.String())
		},
		Repaired: func(_ context.Context, kind string) { repaired = append(repaired, kind) },
		Refused:  func(_ context.Context, kind string) { refused = append(refused, kind) },
	}})
	require.NoError(t, err)
	p.setMetadata = func(context.Context, string, any) error { return nil } // outside a River run
	ctx := context.Background()
	now := time.Now()
	job := func(kind, metadata string) *rivertype.JobRow {
		return &rivertype.JobRow{ID: 7, Kind: kind, Attempt: 1, Metadata: []byte(metadata), CreatedAt: now.Add(-time.Minute), AttemptedAt: &now}
	}
	fails := func(context.Context) error { return errors.New("down") }

	_ = p.Work(ctx, job("email", `{"retry_strategy":{"strategy":"none"}}`), fails)
	_ = p.Work(ctx, job("report", `{}`), fails)
	_ = p.Work(ctx, job("report", `{"retrypolicy":{"seen_attempt":"3","history":"x"}}`), fails)
	assert.Equal(t, []string{"email fatal strategy_none", "report wait ", "report wait "}, decided)
	assert.Equal(t, []string{"report"}, repaired, "the record of the wrong shape")

	_, err = p.InsertMany(ctx, []*rivertype.JobInsertParams{{Kind: "charge", Metadata: []byte(`{"retry_strategy":{"strategy":"bounded"}}`)}},
		func(context.Context) ([]*rivertype.JobInsertResult, error) { return nil, nil })
	require.Error(t, err)
	_, err = p.InsertMany(ctx, []*rivertype.JobInsertParams{{Kind: "charge", Metadata: []byte(`[]`)}},
		func(context.Context) ([]*rivertype.JobInsertResult, error) { return nil, nil })
	require.Error(t, err)
	assert.Equal(t, []string{"charge", "charge"}, refused)

	quiet, err := New(Config{})
	require.NoError(t, err)
	quiet.setMetadata = p.setMetadata
	assert.NotPanics(t, func() { _ = quiet.Work(ctx, job("email", `{}`), fails) }, "no hooks, no calls")
}

// TestPolicyLogsToRiversLogger: a policy made without a Logger logs to the
// river.Config's Logger once installed in it (it had logged to
// slog.Default(), so the README's "riverretry: decided" lines appeared only
// with riverretry's own Logger set); a Logger of its own wins.
func TestPolicyLogsToRiversLogger(t *testing.T) {
	var riverLog, own bytes.Buffer
	debug := func(b *bytes.Buffer) *slog.Logger {
		return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	now := time.Now()
	job := &rivertype.JobRow{ID: 7, Kind: "email", Attempt: 1, Metadata: []byte(`{}`), CreatedAt: now.Add(-time.Minute), AttemptedAt: &now}
	fails := func(context.Context) error { return errors.New("down") }
	for _, c := range []struct {
		cfg  Config
		into *bytes.Buffer
	}{{Config{}, &riverLog}, {Config{Logger: debug(&own)}, &own}} {
		p, err := New(c.cfg)
		require.NoError(t, err)
		p.setMetadata = func(context.Context, string, any) error { return nil } // outside a River run
		require.NoError(t, p.Install(&river.Config{Logger: debug(&riverLog)}))
		_ = p.Work(context.Background(), job, fails)
		assert.Contains(t, c.into.String(), "riverretry: decided")
	}
	assert.Equal(t, 1, strings.Count(riverLog.String(), "riverretry: decided"), "the policy with its own Logger did not write to River's")
}
